"""The share coordinator's periodic work (kafkawire.broker.share_coordinator), without I/O:
snapshots of cold share-partitions (a snapshot older than
share.coordinator.cold.partition.snapshot.interval.ms) and the offset below which a
``__share_group_state`` partition's records are no longer needed (what the prune deletes), as
Kafka 4.3.1's ShareCoordinatorShard.snapshotColdPartitions and ShareCoordinatorOffsetsManager
compute them; a coordinator rebuilt from the records kept above that offset has the same state."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from kafkawire.broker.group_records import partition_for
from kafkawire.broker.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from kafkawire.broker.share_coordinator_apis import ShareCoordinatorApis
from kafkawire.messages.read_share_group_state_summary_request import (PartitionData, ReadShareGroupStateSummaryRequest,
                                                                       ReadStateSummaryData)
from kafkawire.messages.write_share_group_state_request import (PartitionData as WritePartition,
                                                                WriteShareGroupStateRequest, WriteStateData)
from kafkawire.protocol.error_codes import Errors
from kafkawire.broker.share_state_records import (SHARE_SNAPSHOT, SHARE_STATE_TOPIC, ShareState, coordinator_key,
                                                  decode_state_record)

from .test_share_coordinator import TOPIC, Log, write


def coordinator(log, clock):
    return ShareCoordinator(ShareCoordinatorSettings(cold_partition_snapshot_interval_ms=1_000),
                            persist=log, partition_count=lambda t: 3 if t == TOPIC else None,
                            now_ms=lambda: clock[0], last_offset=lambda: len(log.records) - 1)


def rebuilt(log, start: int) -> ShareCoordinator:
    copy = coordinator(Log(), [0])
    for offset, (key, value) in enumerate(log.records):
        if offset >= start:
            copy.replay(*decode_state_record(key, value), offset)
    return copy


def test_cold_partitions_are_snapshotted_and_records_below_the_oldest_snapshot_are_redundant():
    log, clock = Log(), [1_000]
    c = coordinator(log, clock)
    for p in (0, 1):
        assert c.initialize("g", TOPIC, p, 1, 0) == (0, None)            # snapshots at offsets 0 and 1
    assert write(c, 0, start=2, batches=[(2, 4, 1, 0)], state_epoch=1)[0] == 0     # updates at 2, 3
    assert write(c, 1, start=1, state_epoch=1)[0] == 0
    assert c.redundant_offsets(lambda key: 0) == {0: 0}                    # every key in partition 0
    assert c.snapshot_cold_partitions(limit=10) == 0 and len(log.records) == 4      # not cold yet
    clock[0] = 1_500
    assert c.initialize("g", TOPIC, 2, 1, 0) == (0, None)                  # offset 4
    clock[0] = 2_000
    assert c.snapshot_cold_partitions(limit=1) == 1                        # bounded: one left
    assert c.snapshot_cold_partitions(limit=10) == 0                       # offsets 5 and 6
    assert [decode_state_record(k, v)[0] for k, v in log.records[5:]] == [SHARE_SNAPSHOT, SHARE_SNAPSHOT]
    assert c.snapshot_cold_partitions(limit=10) == 0 and len(log.records) == 7      # none cold now
    assert c.redundant_offsets(lambda key: 0) == {0: 4}                     # the older records are not needed
    assert c.redundant_offsets(lambda key: key[2]) == {0: 5, 1: 6, 2: 4}
    # what a coordinator replays from offset 4 on is the state served
    copy = rebuilt(log, 4)
    assert {k: (s.start_offset, s.batches) for k, s in copy.states.items()} == \
        {k: (s.start_offset, s.batches) for k, s in c.states.items()}
    assert copy.states[("g", TOPIC, 0)].start_offset == 2
    # a share-partition nobody writes to is snapshotted again, so it does not hold the prune back
    clock[0] = 3_000
    assert c.snapshot_cold_partitions(limit=10) == 0 and len(log.records) == 10
    assert c.redundant_offsets(lambda key: 0) == {0: 7}
    clock[0] = 4_000                                   # every snapshot a cold one already: quiet
    assert c.snapshot_cold_partitions(limit=10) == 0 and len(log.records) == 10
    # a deleted share-partition holds nothing back; one whose snapshot offset is unknown holds
    # its partition back
    assert c.delete("g", TOPIC, 0) == (0, None)
    assert c.redundant_offsets(lambda key: 0) == {0: 8}
    c.snapshot_offsets.pop(("g", TOPIC, 1))
    assert c.redundant_offsets(lambda key: 0) == {}


def test_the_state_of_a_deleted_topics_share_partitions_is_tombstoned_a_bounded_number_at_a_time():
    log, clock = Log(), [1_000]
    c = coordinator(log, clock)
    for p in range(3):
        c.initialize("g", TOPIC, p, 1, 0)
    assert len(c.states) == 3
    assert c.drop_deleted_topics(lambda topic_id: True, limit=2) == 0 and len(c.states) == 3
    assert c.drop_deleted_topics(lambda topic_id: topic_id != TOPIC, limit=2) == 1     # one left for the next run
    assert c.drop_deleted_topics(lambda topic_id: topic_id != TOPIC, limit=2) == 0
    assert c.states == {} and c.snapshot_offsets == {}
    assert [v for _, v in log.records[3:]] == [None, None, None]                     # tombstones, as Kafka's


class FakeStatePartition:
    """A __share_group_state partition led here: its high watermark and log start."""

    def __init__(self, high_watermark):
        self.hw, self.log = high_watermark, SimpleNamespace(log_start_offset=0)

    def high_watermark(self):
        return self.hw

    def maybe_increment_log_start_offset(self, offset):
        if offset <= self.log.log_start_offset:
            return False
        self.log.log_start_offset = offset
        return True


def test_the_prune_moves_each_loaded_state_partitions_log_start_to_its_oldest_needed_snapshot():
    config = SimpleNamespace(share_coordinator_snapshot_update_records_per_snapshot=500,
                             share_coordinator_cold_partition_snapshot_interval_ms=300_000)
    topic = SimpleNamespace(partitions={0: None, 1: None})
    image = SimpleNamespace(topics_by_name={SHARE_STATE_TOPIC: topic}, topics_by_id={TOPIC: None})
    partitions = {(SHARE_STATE_TOPIC, 0): FakeStatePartition(100), (SHARE_STATE_TOPIC, 1): FakeStatePartition(3)}
    broker = SimpleNamespace(config=config, image=lambda: image, partitions=partitions, node_id=1)
    apis = ShareCoordinatorApis(broker)
    apis.store.loaded = {0, 1}
    keys = [("g", TOPIC, p) for p in range(40)]
    index = {key: partition_for(coordinator_key(*key), 2) for key in keys}
    assert set(index.values()) == {0, 1}
    state = ShareState(0, 1, 0, 0, 0, (), 1, 1)
    for offset, key in enumerate(keys):
        apis.coordinator.replay(SHARE_SNAPSHOT, key, state, offset + 10)
    lowest = {i: min(o + 10 for o, k in enumerate(keys) if index[k] == i) for i in (0, 1)}
    # partition 1's oldest needed snapshot is above its high watermark: pruned to the high watermark only
    assert apis.prune() == {0: lowest[0], 1: 3}
    assert apis.prune() == {}                                  # nothing moves twice
    oldest = min((k for k in keys if index[k] == 0), key=keys.index)
    apis.coordinator.replay(SHARE_SNAPSHOT, oldest, state, 90)            # its newer snapshot
    apis.store.loaded = {1}                                    # a partition not loaded is left alone
    assert apis.prune() == {}
    apis.store.loaded = {0, 1}
    moved = apis.prune()
    assert list(moved) == [0] and moved[0] > lowest[0]
    assert apis.metrics.last_pruned == {0: moved[0], 1: 3}     # share-coordinator-metrics' last-pruned-offset


def test_a_share_partition_coordinated_elsewhere_or_loading_is_refused_with_kafkas_message_prefix():
    """ShareCoordinatorService answers a routing failure with "Unable to <operation>: " and the
    error's message, per API."""
    config = SimpleNamespace(share_coordinator_snapshot_update_records_per_snapshot=500,
                             share_coordinator_cold_partition_snapshot_interval_ms=300_000)
    elsewhere, here = SimpleNamespace(leader=2), SimpleNamespace(leader=1)
    image = SimpleNamespace(topics_by_name={SHARE_STATE_TOPIC: SimpleNamespace(partitions={0: elsewhere})},
                            topics_by_id={TOPIC: None})
    apis = ShareCoordinatorApis(SimpleNamespace(config=config, image=lambda: image, partitions={}, node_id=1))
    summary = asyncio.run(apis.read_state_summary(None, ReadShareGroupStateSummaryRequest(group_id="g", topics=[
        ReadStateSummaryData(topic_id=TOPIC, partitions=[PartitionData(partition=0, leader_epoch=0)])])))
    (result,) = summary.results[0].partitions
    assert (result.error_code, result.error_message) == (
        Errors.NOT_COORDINATOR, "Unable to read share group state summary: This is not the correct coordinator.")
    image.topics_by_name[SHARE_STATE_TOPIC].partitions[0] = here         # led here, not loaded yet
    written = asyncio.run(apis.write_state(None, WriteShareGroupStateRequest(group_id="g", topics=[
        WriteStateData(topic_id=TOPIC, partitions=[WritePartition(partition=0, state_batches=[])])])))
    (result,) = written.results[0].partitions
    assert (result.error_code, result.error_message) == (
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        "Unable to write share group state: The coordinator is loading and hence can't process requests.")
