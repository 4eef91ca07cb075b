"""Mixed quorums: Apache Kafka 4.3.1 controllers and kafkawire controllers in one static KRaft
quorum (kraft.version 0), each side formatted by its own storage tool with one cluster id.
Leaders are killed -9 until each implementation has led at least twice; after every kill a
leader of a higher epoch follows, and below the high watermark every voter's
__cluster_metadata-0 holds the same batches byte for byte."""
from collections import Counter

import pytest

from tests.interop.mixed_quorum import KAFKA, OURS, MixedQuorum, batches_below

MAX_KILLS = 16


@pytest.fixture
def mixed(request, tmp_path, kafka_libs):
    quorums = []

    def make(kinds, base_dir=None, **kwargs):
        """A quorum in ``base_dir`` (default the test's tmp_path: give each of two quorums its own)."""
        q = MixedQuorum(str(base_dir or tmp_path), kinds, **kwargs)
        quorums.append(q)
        return q
    yield make
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for q in quorums:
        if failed:
            print(q.log_tails(60))
        q.kill_all()


def assert_logs_agree(q: MixedQuorum, view) -> int:
    logs = {i: batches_below(q.partition_dir(i), view.high_watermark) for i in q.ids}
    reference = logs[view.leader_id]
    assert reference, "the leader's log below the high watermark is empty"
    for i, log in logs.items():
        assert log == reference, f"node {i} ({q.kinds[i]}) differs from leader {view.leader_id} below " \
                                 f"offset {view.high_watermark}: {len(log)} vs {len(reference)} batches"
    return len(reference)


@pytest.mark.parametrize("kinds", [
    {1: KAFKA, 2: OURS, 3: OURS},
    {1: KAFKA, 2: KAFKA, 3: OURS},
], ids=["1-kafka-2-kafkawire", "2-kafka-1-kafkawire"])
def test_a_static_mixed_quorum_elects_fails_over_and_replicates_byte_for_byte(mixed, kinds):
    # With pre-vote, of the two survivors of a kill the one whose fetch timeout expires second
    # wins (the first is refused by a voter still following the dead leader). A kafkawire
    # follower's timer runs out about 50 ms before a Kafka follower's, so with two Kafka voters
    # ours never won; a longer fetch timeout for it lets it be the second. (Kafka-only quorums
    # show the same rule: the earlier timer loses.)
    ours = [i for i, kind in kinds.items() if kind == OURS]
    slower = {ours[0]: {"controller.quorum.fetch.timeout.ms": "3000"}} if len(ours) == 1 else {}
    q = mixed(kinds, node_properties=slower)
    q.format_static()
    q.start_all()
    view = q.wait_for_catch_up(90)
    led = Counter({q.kinds[view.leader_id]: 1})
    history = [(view.leader_id, q.kinds[view.leader_id], view.epoch)]
    compared = assert_logs_agree(q, view)
    kills = 0
    while min(led[KAFKA], led[OURS]) < 2:
        assert kills < MAX_KILLS, f"after {kills} kills leadership was {history}"
        victim = view.leader_id
        q.kill(victim)
        kills += 1
        after = q.wait_for_leader(60, min_epoch=view.epoch + 1, exclude=(victim,))
        assert after.epoch > view.epoch and after.leader_id != victim
        q.start(victim)
        view = q.wait_for_catch_up(90)
        led[q.kinds[view.leader_id]] += 1
        history.append((view.leader_id, q.kinds[view.leader_id], view.epoch))
        compared = assert_logs_agree(q, view)
    print(f"leadership over {kills} kills -9: {history}; {compared} batches identical on every voter")


def _ours(*args):
    """`kafkawire ARGS` as a user runs it."""
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def _directory_id(q: MixedQuorum, asked: int, node_id: int) -> str:
    """The voter's directory id, as the leader reports it (only a leader answers DescribeQuorum;
    ``asked`` is a voter to start from, the leader is found from it)."""
    from kafkawire.storage.state_files import uuid_to_kafka
    leader = q.wait_for_leader(60).leader_id
    voter = next(r for r in q.describe(leader).voters if r.replica_id == node_id)
    return uuid_to_kafka(voter.replica_directory_id)


@pytest.mark.parametrize("standalone_kind", [KAFKA, OURS])
def test_a_dynamic_mixed_quorum_grows_and_shrinks_with_either_sides_tools(mixed, kafka_tool, standalone_kind):
    """kraft.version 1: node 1 formatted --standalone; nodes 2 and 3, of the other implementation,
    formatted --no-initial-controllers, are added, node 2 by Kafka's kafka-metadata-quorum and node
    3 by ours; then Kafka's tool removes a kafkawire controller and ours a Kafka controller."""
    from tests.interop.kafka_procs import METADATA_QUORUM
    other = OURS if standalone_kind == KAFKA else KAFKA
    q = mixed({1: standalone_kind, 2: other, 3: other})
    q.format_dynamic(standalone=1)
    q.start_all()
    q.wait_for_voters([1], 60)
    q.wait_for_observers([2, 3], 120)       # up and fetching: the leader probes a new voter first
    bootstrap = q.address(1)

    added = kafka_tool(METADATA_QUORUM, "--bootstrap-controller", bootstrap, "--command-config", q.config_path(2),
                       "add-controller", timeout=120)
    assert added.returncode == 0, added.stderr[-2000:]
    assert added.stdout.startswith("Added controller 2 with directory id "), added.stdout
    q.wait_for_voters([1, 2], 60)

    ours = _ours("metadata-quorum", "--bootstrap-controller", bootstrap, "--command-config", q.config_path(3),
                 "add-controller")
    assert ours.returncode == 0, ours.stderr[-2000:]
    assert ours.stdout.startswith("Added controller 3 with directory id "), ours.stdout
    view = q.wait_for_voters([1, 2, 3], 60)
    view = q.wait_for_catch_up(90)
    assert_logs_agree(q, view)

    # Kafka's tool removes a kafkawire controller, ours a Kafka controller (whichever they are).
    kafka_node = next(i for i in q.ids if q.kinds[i] == KAFKA)
    our_node = next(i for i in q.ids if q.kinds[i] == OURS)
    removed = kafka_tool(METADATA_QUORUM, "--bootstrap-controller", bootstrap, "remove-controller",
                         "--controller-id", our_node, "--controller-directory-id", _directory_id(q, 1, our_node),
                         timeout=120)
    assert removed.returncode == 0, removed.stderr[-2000:]
    remaining = [i for i in q.ids if i != our_node]
    q.wait_for_voters(remaining, 60)
    removed = _ours("metadata-quorum", "--bootstrap-controller", q.address(remaining[0]), "remove-controller",
                    "--controller-id", kafka_node, "--controller-directory-id",
                    _directory_id(q, remaining[0], kafka_node))
    assert removed.returncode == 0, removed.stderr[-2000:]
    last = [i for i in remaining if i != kafka_node]
    view = q.wait_for_voters(last, 60)
    assert view.leader_id == last[0]
