"""Mixed quorums of Apache Kafka 4.3.1 and kafkawire controllers: KIP-853 across implementations.

The kraft.version 0 -> 1 upgrade of a mixed static quorum by Kafka's FeatureCommand; afterwards
both tools' `describe --status` agree and name every voter's directory id. (Auto-join across
implementations is how test_mixed_quorum_snapshots.py builds its quorums, and checks them with
describe_status and auto_joined below.)"""
import json
import re
import subprocess
import sys

from tests.interop.kafka_procs import FEATURES, METADATA_QUORUM
from tests.interop.mixed_quorum import KAFKA, OURS
from tests.interop.test_mixed_quorum import assert_logs_agree, mixed  # noqa: F401 (fixture)
from tests.kraft_version_upgrade import wait_until_kraft_version_upgrade_validates

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def ours(*args) -> subprocess.CompletedProcess:
    """`kafkawire ARGS` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120, check=False)


def describe_status(kafka_tool, bootstrap: str) -> dict[str, str]:
    """Kafka's and our `metadata-quorum describe --status`, each as {field: value}; they must agree
    on every field that does not move with time."""
    kafka = kafka_tool(METADATA_QUORUM, "--bootstrap-controller", bootstrap, "describe", "--status", timeout=120)
    mine = ours("metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--status")
    assert kafka.returncode == 0, kafka.stderr[-2000:]
    assert mine.returncode == 0, mine.stderr[-2000:]
    parsed = {}
    for name, result in (("kafka", kafka), ("kafkawire", mine)):
        parsed[name] = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
        parsed[name] = {k.strip(): v.strip() for k, v in parsed[name].items()}
    steady = ("ClusterId", "LeaderId", "LeaderEpoch", "CurrentVoters", "CurrentObservers")
    for field in steady:
        assert parsed["kafka"].get(field) == parsed["kafkawire"].get(field), \
            f"{field}: Kafka {parsed['kafka'].get(field)!r} vs ours {parsed['kafkawire'].get(field)!r}"
    return parsed["kafka"]


def voter_directory_ids(status: dict[str, str]) -> dict[int, str | None]:
    return {v["id"]: v.get("directoryId") for v in json.loads(status["CurrentVoters"])}


def check_auto_joined(kafka_tool, q, leader_id: int) -> None:
    """Nodes formatted --no-initial-controllers with controller.quorum.auto.join.enable=true
    added themselves: both tools name every node a voter with its directory id, no observer."""
    status = describe_status(kafka_tool, q.address(leader_id))
    ids = voter_directory_ids(status)
    assert sorted(ids) == q.ids and all(d and d != ZERO_UUID for d in ids.values()), status
    assert json.loads(status["CurrentObservers"]) == [], status


def test_kafkas_feature_command_upgrades_kraft_version_of_a_mixed_static_quorum(mixed, kafka_tool):  # noqa: F811
    q = mixed({1: KAFKA, 2: OURS, 3: KAFKA})
    q.format_static()
    q.start_all()
    view = q.wait_for_catch_up(90)
    q.wait_for_describe_cluster(view.leader_id, 60)       # the tools' first request
    before = describe_status(kafka_tool, q.address(view.leader_id))
    assert set(voter_directory_ids(before).values()) <= {None, ZERO_UUID}, before

    wait_until_kraft_version_upgrade_validates(q.address(view.leader_id), 60, q.log_tails)
    upgraded = kafka_tool(FEATURES, "--bootstrap-controller", q.address(view.leader_id), "upgrade",
                          "--feature", "kraft.version=1", timeout=120)
    assert upgraded.returncode == 0, upgraded.stderr[-2000:] + upgraded.stdout
    assert upgraded.stdout.strip() == "kraft.version was upgraded to 1.", upgraded.stdout
    described = kafka_tool(FEATURES, "--bootstrap-controller", q.address(view.leader_id), "describe", timeout=120)
    assert re.search(r"Feature: kraft.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+"
                     r"FinalizedVersionLevel: 1\s", described.stdout), described.stdout

    view = q.wait_for_catch_up(60)
    after = describe_status(kafka_tool, q.address(view.leader_id))
    ids = voter_directory_ids(after)
    assert sorted(ids) == [1, 2, 3] and all(d and d != ZERO_UUID for d in ids.values()), after
    # Each voter's id is the one its own storage tool wrote in meta.properties.
    for i in q.ids:
        with open(f"{q.partition_dir(i)}/../meta.properties") as f:
            meta = f.read()
        assert f"directory.id={ids[i]}" in meta, (i, ids[i], meta)
    assert_logs_agree(q, view)
