"""When a node snapshots its metadata: Kafka's SnapshotGenerator rules, without Java."""
from kafkawire.raft.node.driver_snapshots import snapshot_due


def test_bytes_or_interval_make_a_snapshot_due():
    assert snapshot_due(4096, 4096, 0, 60_000)              # enough bytes replayed
    assert not snapshot_due(4095, 4096, 59_999, 60_000)
    assert snapshot_due(1, 4096, 60_000, 60_000)            # enough time


def test_an_interval_of_zero_turns_the_time_rule_off():
    """metadata.log.max.snapshot.interval.ms=0 disables time-based snapshots in Kafka; it made a
    kafkawire node snapshot on every tick (found by the mixed-quorum snapshot test, issue 15)."""
    assert not snapshot_due(10, 4096, 10 ** 9, 0)
    assert snapshot_due(4096, 4096, 0, 0)
