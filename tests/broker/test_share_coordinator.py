"""The share coordinator's state machine (kafkawire.broker.share_coordinator) and its records
(share_state_records, share_state_batches), without I/O: Kafka 4.3.1's ShareCoordinatorShard
rules for the five share-state APIs, the records it writes, and the state a new coordinator
rebuilds by replaying them (as loading ``__share_group_state`` does)."""
from __future__ import annotations

import random
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from kafkawire.broker.share_state_batches import combine
from kafkawire.broker.share_state_records import (SHARE_SNAPSHOT, SHARE_UPDATE, StateBatch, coordinator_key,
                                                  decode_state_record, parse_coordinator_key)
from kafkawire.broker.share_state_topic import ShareStateLoader
from kafkawire.messages.share_snapshot_value import ShareSnapshotValue
from kafkawire.protocol.error_codes import Errors

TOPIC = uuid.UUID(int=7)
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


class Log:
    """``persist`` into a list, as __share_group_state holds the records; ``fail`` refuses."""

    def __init__(self):
        self.records: list = []
        self.fail = None

    def __call__(self, group_id, topic_id, partition, records):
        if self.fail is not None:
            return self.fail
        self.records += records
        return Errors.NONE


def coordinator(log, per_snapshot=500, partitions=3):
    return ShareCoordinator(ShareCoordinatorSettings(snapshot_update_records_per_snapshot=per_snapshot),
                            persist=log, partition_count=lambda t: partitions if t == TOPIC else None,
                            now_ms=lambda: 1000)


def write(c, partition=0, start=-1, batches=(), state_epoch=0, leader_epoch=0):
    data = SimpleNamespace(partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch,
                           start_offset=start, delivery_complete_count=-1,
                           state_batches=[SimpleNamespace(first_offset=f, last_offset=last, delivery_count=n,
                                                          delivery_state=s) for f, last, n, s in batches])
    return c.write("g", TOPIC, data)


def rebuilt(log, per_snapshot=500):
    """A new coordinator that replayed the log, as loading the partition does."""
    fresh = coordinator(Log(), per_snapshot)
    loader = ShareStateLoader(fresh)
    for key, value in log.records:
        loader.replay(key, value)
    loader.after_load(lambda key: True)
    return fresh


def test_initialize_write_read_and_a_rebuilt_coordinator_serve_the_same_state():
    log = Log()
    c = coordinator(log)
    assert c.initialize("g", TOPIC, 0, 0, 10) == (Errors.NONE, None)
    assert write(c, start=10, batches=[(10, 14, 1, ACKNOWLEDGED), (15, 19, 2, AVAILABLE)]) == (Errors.NONE, None)
    assert write(c, start=12, batches=[(15, 16, 3, ARCHIVED)]) == (Errors.NONE, None)
    code, _, state = c.read("g", TOPIC, 0, 0)
    expected = (StateBatch(12, 14, 1, ACKNOWLEDGED), StateBatch(15, 16, 3, ARCHIVED), StateBatch(17, 19, 2, AVAILABLE))
    assert (code, state.start_offset, state.batches) == (Errors.NONE, 12, expected)
    # the read's new leader epoch (none recorded: writes keep the state's) is written first, as Kafka's read does
    assert [decode_state_record(k, v)[0] for k, v in log.records] == [SHARE_SNAPSHOT] + [SHARE_UPDATE] * 3
    assert decode_state_record(*log.records[-1])[2].leader_epoch == 0 and c.read("g", TOPIC, 0, 0)[0] == 0
    assert len(log.records) == 4                                   # the same epoch again: nothing written
    again = rebuilt(log)
    assert again.read("g", TOPIC, 0, 0)[2].batches == expected
    assert again.states == c.states and again.leader_epochs == c.leader_epochs


def test_a_snapshot_follows_the_configured_number_of_updates_and_holds_the_merged_state():
    log = Log()
    c = coordinator(log, per_snapshot=2)
    c.initialize("g", TOPIC, 0, 0, 0)
    for first in (0, 5, 10):
        assert write(c, start=0, batches=[(first, first + 4, 1, ACKNOWLEDGED)])[0] == Errors.NONE
    types = [decode_state_record(k, v)[0] for k, v in log.records]
    assert types == [SHARE_SNAPSHOT, SHARE_UPDATE, SHARE_UPDATE, SHARE_SNAPSHOT]
    snapshot = decode_state_record(*log.records[-1])[2]
    assert snapshot.snapshot_epoch == 1 and snapshot.batches == (StateBatch(0, 14, 1, ACKNOWLEDGED),)
    assert rebuilt(log, per_snapshot=2).states == c.states


def test_epochs_fence_older_leaders_and_state_epochs():
    c = coordinator(Log())
    c.initialize("g", TOPIC, 0, 3, 0)
    assert c.read("g", TOPIC, 0, 5)[0] == Errors.NONE             # records leader epoch 5
    assert c.leader_epochs[("g", TOPIC, 0)] == 5
    assert write(c, leader_epoch=4, state_epoch=3)[0] == Errors.FENCED_LEADER_EPOCH
    assert c.read("g", TOPIC, 0, 4)[0] == Errors.FENCED_LEADER_EPOCH
    assert write(c, leader_epoch=5, state_epoch=2)[0] == Errors.FENCED_STATE_EPOCH
    assert write(c, leader_epoch=-1, state_epoch=-1)[0] == Errors.NONE       # -1: not checked
    assert c.initialize("g", TOPIC, 0, 2, 0)[0] == Errors.FENCED_STATE_EPOCH


def test_uninitialized_unknown_and_negative_partitions_are_refused_as_kafka_refuses_them():
    c = coordinator(Log())
    assert write(c) == (Errors.INVALID_REQUEST, "Write operation on uninitialized share partition not allowed.")
    assert c.read("g", TOPIC, 0, 0)[:2] == (Errors.INVALID_REQUEST,
                                            "Read operation on uninitialized share partition not allowed.")
    assert c.initialize("g", TOPIC, 3, 0, 0)[0] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert c.initialize("g", uuid.uuid4(), 0, 0, 0)[0] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert c.delete("g", TOPIC, -1)[0] == Errors.INVALID_REQUEST
    code, _, summary = c.read_summary("g", TOPIC, 1)                  # no state: -1 offsets, no error
    assert (code, summary.start_offset, summary.delivery_complete_count, summary.state_epoch) == (0, -1, -1, 0)


def test_delete_writes_a_tombstone_and_a_failed_write_changes_nothing():
    log = Log()
    c = coordinator(log)
    c.initialize("g", TOPIC, 0, 0, 5)
    log.fail = Errors.NOT_LEADER_OR_FOLLOWER
    assert write(c, start=9)[0] == Errors.NOT_LEADER_OR_FOLLOWER
    assert c.states[("g", TOPIC, 0)].start_offset == 5
    log.fail = None
    assert c.delete("g", TOPIC, 0) == (Errors.NONE, None)
    assert log.records[-1][1] is None and ("g", TOPIC, 0) not in c.states
    assert c.delete("g", TOPIC, 0) == (Errors.NONE, None) and len(log.records) == 2    # nothing to delete
    assert rebuilt(log).states == {}


def test_initialize_sets_the_delivery_complete_count_only_with_a_start_offset():
    log = Log()
    c = coordinator(log)
    c.initialize("g", TOPIC, 0, 0, -1)
    c.initialize("g", TOPIC, 1, 0, 40)
    assert c.states[("g", TOPIC, 0)].delivery_complete_count == -1
    assert c.states[("g", TOPIC, 1)].delivery_complete_count == 0
    value = ShareSnapshotValue.decode(log.records[1][1][2:], 0)
    assert (value.snapshot_epoch, value.start_offset, value.leader_epoch, value.create_timestamp) == (0, 40, -1, 1000)


def test_coordinator_keys_parse_and_hash_as_kafkas_share_partition_key():
    key = coordinator_key("a:b", TOPIC, 12)
    assert parse_coordinator_key(key) == ("a:b", TOPIC, 12)
    assert parse_coordinator_key(key + ":") == ("a:b", TOPIC, 12)       # Java's split drops the empty tail
    for bad in ("", "g:x", " :AAAAAAAAAAAAAAAAAAAABw:0", "g:not-a-uuid:0", "g:AAAAAAAAAAAAAAAAAAAABw:x"):
        with pytest.raises(ValueError):
            parse_coordinator_key(bad)


def _by_offset(batches):
    """The reference: each offset's winning (count, state), offsets below none dropped."""
    best: dict = {}
    for b in batches:
        for offset in range(b.first_offset, b.last_offset + 1):
            best[offset] = max(best.get(offset, (-1, -1)), (b.delivery_count, b.delivery_state))
    return best


def test_combined_batches_keep_each_offsets_largest_delivery_and_merge_neighbours():
    rng = random.Random(29)
    for _ in range(300):
        batches = [StateBatch(f, f + rng.randrange(6), rng.randrange(1, 4), rng.choice((0, 2, 4)))
                   for f in (rng.randrange(30) for _ in range(rng.randrange(1, 7)))]
        start = rng.choice((-1, rng.randrange(30)))
        cut = len(batches) // 2
        result = combine(batches[:cut], batches[cut:], start)
        expected = {o: v for o, v in _by_offset(batches).items() if start == -1 or o >= start}
        got = _by_offset(result)
        assert got == expected and sum(b.last_offset - b.first_offset + 1 for b in result) == len(expected)
        assert all(a.last_offset < b.first_offset for a, b in zip(result, result[1:]))
        assert not any(a.last_offset + 1 == b.first_offset and (a.delivery_count, a.delivery_state) ==
                       (b.delivery_count, b.delivery_state) for a, b in zip(result, result[1:]))
