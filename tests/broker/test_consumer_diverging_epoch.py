"""A consumer's Fetch with a last fetched epoch (v12+), in process: the leader, and a follower
serving consumers (KIP-392), check it against their leader epoch cache as Kafka 4.3.1's
Partition.readRecords does for every fetch, and answer a consumer whose log left theirs (records
of an epoch an unclean election cut) with the diverging epoch and its end offset, no records, no
aborted list, and at once (kafka-python sends the epoch and validates its position on such an
answer; the Java consumer and librdkafka send -1)."""
from __future__ import annotations

import asyncio

from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch

from .test_read_from_followers import (broker_registration, close, consumer_fetch, fetch, image_with, make_broker,
                                       values)


def with_last_fetched_epoch(request, epoch: int):
    request.topics[0].partitions[0].last_fetched_epoch = epoch
    return request


def leader_of_two_epochs(tmp_path):
    """Broker 1 leads t-0: offsets 0-2 in leader epoch 1, offset 3 in epoch 3, all replicated (high
    watermark 4)."""
    broker, state = make_broker(tmp_path)
    brokers = {i: broker_registration(i) for i in (1, 2, 3)}
    state["image"] = image_with(1, 1, brokers=brokers)
    broker.on_metadata()
    partition = broker.partitions[("t", 0)]
    for n in range(3):
        partition.log.append(build_batch([(b"k", b"v%d" % n)]), assign_offsets=True, leader_epoch=1)
    state["image"] = image_with(1, 3, brokers=brokers)
    broker.on_metadata()                     # epoch 3 starts at the log end, 3
    partition.log.append(build_batch([(b"k", b"v3")]), assign_offsets=True, leader_epoch=3)
    for follower in (2, 3):
        broker.replication.follower_fetched(partition, follower, 20, 4, 0, 4)
    assert partition.high_watermark() == 4 and partition.end_offset_for_epoch(2) == (1, 3)
    return broker


def test_the_leader_answers_a_consumer_past_its_epochs_end_the_diverging_epoch(tmp_path):
    async def go():
        broker = leader_of_two_epochs(tmp_path)
        # read to offset 5 in epoch 2, which this log never had: epoch 1 ends at 3 here
        for committed in (False, True):
            data = await fetch(broker, with_last_fetched_epoch(
                consumer_fetch(offset=5, epoch=3, committed=committed, min_bytes=1 << 20, wait_ms=30_000), 2))
            assert (data.error_code, data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (Errors.NONE, 1, 3)
            assert (data.records, data.aborted_transactions) == (b"", None)
            assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (4, 4, 0)
        data = await fetch(broker, with_last_fetched_epoch(consumer_fetch(offset=4), 1))    # epoch 1 ended at 3
        assert (data.diverging_epoch.epoch, data.diverging_epoch.end_offset, data.records) == (1, 3, b"")
        data = await fetch(broker, with_last_fetched_epoch(consumer_fetch(offset=3), 1))    # where epoch 1 ends: fine
        assert (data.diverging_epoch.epoch, values(data.records)) == (-1, [b"v3"])
        data = await fetch(broker, with_last_fetched_epoch(consumer_fetch(offset=1), 1))
        assert (data.diverging_epoch.epoch, values(data.records)) == (-1, [b"v1", b"v2", b"v3"])
        data = await fetch(broker, with_last_fetched_epoch(consumer_fetch(offset=4), 3))    # at the log end
        assert (data.error_code, data.diverging_epoch.epoch, data.records) == (Errors.NONE, -1, b"")
        data = await fetch(broker, consumer_fetch(offset=5))                                # no epoch: not checked
        assert (data.error_code, data.diverging_epoch.epoch) == (Errors.OFFSET_OUT_OF_RANGE, -1)
        await close(broker)
    asyncio.run(go())


def test_an_epoch_the_leader_cannot_place_or_an_offset_below_its_start_is_out_of_range(tmp_path):
    """readRecords: an epoch past the cache's latest has no end offset, and an offset below the log
    start is OFFSET_OUT_OF_RANGE whether the epochs diverge or not."""
    async def go():
        broker = leader_of_two_epochs(tmp_path)
        partition = broker.partitions[("t", 0)]
        data = await fetch(broker, with_last_fetched_epoch(consumer_fetch(offset=4), 7))
        assert (data.error_code, data.diverging_epoch.epoch, data.high_watermark) == (Errors.OFFSET_OUT_OF_RANGE, -1, -1)
        assert data.aborted_transactions is None
        partition.maybe_increment_log_start_offset(2)
        for epoch, offset in ((1, 1), (2, 1)):              # the second would diverge at (1, 3)
            data = await fetch(broker, with_last_fetched_epoch(consumer_fetch(offset=offset), epoch))
            assert (data.error_code, data.diverging_epoch.epoch) == (Errors.OFFSET_OUT_OF_RANGE, -1), (epoch, offset)
        await close(broker)
    asyncio.run(go())


def test_a_follower_serving_consumers_answers_the_diverging_epoch_from_its_own_cache(tmp_path):
    """Partition.readRecords on a follower (lastOffsetForLeaderEpoch with fetchOnlyFromLeader false)."""
    async def go():
        broker, state = make_broker(tmp_path)
        state["image"] = image_with(2, 4)
        broker.on_metadata()
        replica = broker.replica_roles.followers[("t", 0)]
        for offset, epoch in ((0, 2), (1, 2), (2, 4)):
            replica.append(build_batch([(b"k", b"v%d" % offset)], base_offset=offset, partition_leader_epoch=epoch))
        replica.update_from_leader(high_watermark=3, log_start_offset=0)
        data = await fetch(broker, with_last_fetched_epoch(consumer_fetch(offset=2, epoch=4), 3))
        assert (data.error_code, data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (Errors.NONE, 2, 2)
        assert (data.records, data.high_watermark) == (b"", 3)
        data = await fetch(broker, with_last_fetched_epoch(consumer_fetch(offset=2, epoch=4), 2))
        assert (data.diverging_epoch.epoch, values(data.records)) == (-1, [b"v2"])
        await close(broker)
    asyncio.run(go())
