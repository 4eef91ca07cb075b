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

    def make(kinds):
        q = MixedQuorum(str(tmp_path), kinds)
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
    q = mixed(kinds)
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
