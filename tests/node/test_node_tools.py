"""The Kafka-style tools against real nodes on 127.0.0.1: membership changes through
`kafkawire metadata-quorum` (standalone bootstrap, add-controller twice, remove-controller),
`describe --status/--replication` and `features describe`, each a separate process as a user
would run them."""
import subprocess
import sys

import pytest

from kafkawire.storage.state_files import read_meta_properties, uuid_to_kafka
from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.kraft_version_upgrade import wait_until_kraft_version_upgrade_validates

TOOL_TIMEOUT_S = 90


def kafkawire(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", *args], capture_output=True, text=True,
                          timeout=TOOL_TIMEOUT_S)


def status(quorum, bootstrap) -> dict:
    result = kafkawire("metadata-quorum", "--bootstrap-controller", bootstrap, "--timeout", "10000",
                       "describe", "--status")
    assert result.returncode == 0, result.stderr
    return dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)


def voter_ids(quorum, bootstrap) -> list[int]:
    import json
    return sorted(v["id"] for v in json.loads(status(quorum, bootstrap)["CurrentVoters"]))


@pytest.fixture
def standalone(tmp_path):
    with LocalQuorum(tmp_path, voters=1, extra_nodes=2).started("standalone", graceful=False) as q:
        yield q


def test_standalone_then_add_two_controllers_then_remove_one(standalone):
    q = standalone
    q.wait_for_leader(120)
    bootstrap = q.bootstrap_servers([1])
    assert voter_ids(q, bootstrap) == [1]
    # The two others are observers until they are added.
    q.wait_until(lambda: len(q.describe(1).observers) == 2, 30, "nodes 2 and 3 to fetch as observers")

    for node in (2, 3):
        added = kafkawire("metadata-quorum", "--bootstrap-controller", bootstrap, "--timeout", "30000",
                          "--command-config", q.config_path(node), "add-controller")
        assert added.returncode == 0, added.stderr
        assert f"Added controller {node} with directory id" in added.stdout
    assert voter_ids(q, bootstrap) == [1, 2, 3]

    replication = kafkawire("metadata-quorum", "--bootstrap-controller", bootstrap, "--timeout", "10000",
                            "describe", "--replication")
    assert replication.returncode == 0, replication.stderr
    rows = [line.split() for line in replication.stdout.splitlines()[1:]]
    assert sorted((int(r[0]), r[-1]) for r in rows) == [(1, "Leader"), (2, "Follower"), (3, "Follower")]

    directory = uuid_to_kafka(read_meta_properties(f"{q.data_dir(2)}/meta.properties").directory_id)
    removed = kafkawire("metadata-quorum", "--bootstrap-controller", bootstrap, "--timeout", "30000",
                        "remove-controller", "--controller-id", "2", "--controller-directory-id", directory)
    assert removed.returncode == 0, removed.stderr
    assert voter_ids(q, bootstrap) == [1, 3]

    # Removing it again is an error Kafka's tool reports with the broker's message.
    again = kafkawire("metadata-quorum", "--bootstrap-controller", bootstrap, "--timeout", "30000",
                      "remove-controller", "--controller-id", "2", "--controller-directory-id", directory)
    assert again.returncode == 1
    assert "VoterNotFoundException" in again.stderr


def test_features_describe_reports_the_finalized_kraft_version(standalone):
    q = standalone
    q.wait_for_leader(120)
    result = kafkawire("features", "--bootstrap-controller", q.bootstrap_servers([1]), "describe")
    assert result.returncode == 0, result.stderr
    line = next(l for l in result.stdout.splitlines() if l.startswith("Feature: kraft.version "))
    # --standalone formats with kraft.version 1 (KIP-853's dynamic quorum).
    assert line.split()[2:8] == ["SupportedMinVersion:", "0", "SupportedMaxVersion:", "1",
                                 "FinalizedVersionLevel:", "1"], line


def test_a_static_quorum_upgrades_kraft_version_with_the_features_tool(tmp_path):
    """controller.quorum.voters (kraft.version 0), then `features upgrade --feature
    kraft.version=1`: the voters' directory ids become known (UpdateRaftVoter, KIP-853)."""
    import json
    q = LocalQuorum(tmp_path, voters=3)
    q.format(mode="static")
    q.start_all()
    try:
        q.wait_for_leader(120)
        bootstrap = q.bootstrap_servers()
        quorum_state = json.loads(open(f"{q.metadata_partition_dir(1)}/quorum-state").read())
        assert quorum_state["data_version"] == 0
        assert [v["voterId"] for v in quorum_state["currentVoters"]] == [1, 2, 3]
        voters = json.loads(status(q, bootstrap)["CurrentVoters"])
        assert all("directoryId" not in v for v in voters)

        # every voter has told the leader it supports kraft.version 1 (UpdateRaftVoter)
        wait_until_kraft_version_upgrade_validates(bootstrap, 30, lambda: "\n".join(q.log_tail(i) for i in q.node_ids))
        upgraded = kafkawire("features", "--bootstrap-controller", bootstrap, "upgrade", "--feature", "kraft.version=1")
        assert upgraded.returncode == 0, upgraded.stderr
        assert upgraded.stdout.strip() == "kraft.version was upgraded to 1."

        def directory_ids_known():
            voters = json.loads(status(q, bootstrap)["CurrentVoters"])
            return all("directoryId" in v for v in voters) and len(voters) == 3
        q.wait_until(directory_ids_known, 30, "the voters' directory ids after the upgrade")
        described = kafkawire("features", "--bootstrap-controller", bootstrap, "describe")
        line = next(l for l in described.stdout.splitlines() if l.startswith("Feature: kraft.version "))
        assert line.split()[2:8] == ["SupportedMinVersion:", "0", "SupportedMaxVersion:", "1",
                                     "FinalizedVersionLevel:", "1"], line
    finally:
        q.kill_all()            # nothing is read after: a graceful stop of the whole quorum costs 5 s


def test_auto_join_makes_formatted_observers_voters(tmp_path):
    """controller.quorum.auto.join.enable: nodes formatted with --no-initial-controllers add
    themselves (AddRaftVoter) to a standalone quorum."""
    q = LocalQuorum(tmp_path, voters=1, extra_nodes=2, properties={"controller.quorum.auto.join.enable": "true"})
    with q.started("standalone", graceful=False):
        q.wait_for_leader(120)
        view = q.wait_until(lambda: (lambda v: v if len(v.voters) == 3 else None)(q.wait_for_leader(120)), 60,
                            "nodes 2 and 3 to join as voters")
        assert sorted(r.replica_id for r in view.voters) == [1, 2, 3]
        assert view.observers == []


def test_features_describe_of_an_observer_by_node_id(standalone):
    """DescribeCluster to a controller names the registered controllers (Kafka's
    ControllerRegistrationsPublisher), observers too: `describe --node-id 2` reaches node 2."""
    q = standalone
    q.wait_for_leader(120)
    q.wait_until(lambda: len(q.describe(1).observers) == 2, 30, "nodes 2 and 3 to fetch as observers")
    result = kafkawire("features", "--bootstrap-controller", q.bootstrap_servers([1]), "--timeout", "20000",
                       "describe", "--node-id", "2")
    assert result.returncode == 0, result.stderr
    assert any(line.startswith("Feature: kraft.version ") for line in result.stdout.splitlines()), result.stdout
