"""The read-only __cluster_metadata topic, request by request, in every version it serves."""
import asyncio
import os
import uuid

import pytest

from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.metadata_topic import METADATA_TOPIC, MetadataTopic, NodeEndpoint
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import build_batch, iter_batches
from kafkawire.storage.log import Log

from .metadata_log import CLUSTER_ID, METADATA_TOPIC_ID, NODE_ID, write_metadata_log
from .netlib import RawConnection, run

TOPIC_ID = METADATA_TOPIC_ID


@pytest.fixture(scope="module")
def metadata_log(tmp_path_factory):
    """3 epochs x (LeaderChange + 6 batches of 4 records): offsets 0..74, several segments."""
    return write_metadata_log(tmp_path_factory.mktemp("meta"), segment_bytes=1024)


class Harness:
    def __init__(self, log_dir, hw=None, **topic_options):
        self.log_dir, self.hw, self.topic_options = log_dir, hw, topic_options
        self.correlation_id = 0

    async def __aenter__(self):
        self.log = Log(self.log_dir)
        self.server = KafkaServer({})
        await self.server.bind()
        self.topic = MetadataTopic(self.log, cluster_id=CLUSTER_ID,
                                   node=NodeEndpoint(NODE_ID, "127.0.0.1", self.server.port),
                                   high_watermark=lambda: self.log.log_end_offset if self.hw is None else self.hw,
                                   **self.topic_options)
        for key, handler in self.topic.handlers().items():
            self.server.register(key, handler)
        await self.server.start()
        self.conn = await RawConnection.open(self.server.port)
        return self

    async def __aexit__(self, *exc):
        await self.server.close()
        self.log.close()

    async def ask(self, request, version):
        self.correlation_id += 1
        await self.conn.send(request, version, self.correlation_id)
        cid, body = await self.conn.read_response(type(request).API_KEY, version)
        assert cid == self.correlation_id
        return body


def fetch_request(version, offset, *, topic=METADATA_TOPIC, topic_id=TOPIC_ID, partition=0, max_wait_ms=0,
                  min_bytes=0, partition_max_bytes=1 << 20, max_bytes=1 << 24, **partition_fields):
    part = FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes,
                          **partition_fields)
    t = FetchTopic(topic=topic if version < 13 else "", topic_id=topic_id if version >= 13 else uuid.UUID(int=0),
                   partitions=[part])
    return FetchRequest(max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes, topics=[t])


def offsets_in(records: bytes):
    return [r.offset for b in iter_batches(records) for r in b]


def list_offsets(*timestamps, partition=0, topic=METADATA_TOPIC, epoch=-1):
    return ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=topic, partitions=[
        ListOffsetsPartition(partition_index=partition, timestamp=ts, current_leader_epoch=epoch) for ts in timestamps])])


# --- every handler answers in every version it serves ----------------------------------------

def test_every_api_answers_in_every_served_version(metadata_log):
    log_dir, written = metadata_log
    last = written[-1].offset

    async def main():
        async with Harness(log_dir) as h:
            seen = {}
            ranges = {k: (lo, hi) for k, lo, hi in h.server.api_versions()}
            for v in range(ranges[3][0], ranges[3][1] + 1):
                body = await h.ask(MetadataRequest(topics=None if v else []), v)
                seen[("Metadata", v)] = [(t.name, t.error_code, [p.leader_id for p in t.partitions]) for t in body.topics]
            for v in range(ranges[1][0], ranges[1][1] + 1):
                body = await h.ask(fetch_request(v, 0), v)
                seen[("Fetch", v)] = offsets_in(body.responses[0].partitions[0].records)[-1]
            for v in range(ranges[2][0], ranges[2][1] + 1):
                body = await h.ask(list_offsets(-2, -1), v)
                seen[("ListOffsets", v)] = [(p.error_code, p.offset) for p in body.topics[0].partitions]
            for v in range(ranges[60][0], ranges[60][1] + 1):
                body = await h.ask(DescribeClusterRequest(), v)
                seen[("DescribeCluster", v)] = (body.cluster_id, [b.broker_id for b in body.brokers])
            for v in range(ranges[10][0], ranges[10][1] + 1):
                req = FindCoordinatorRequest(key="g") if v < 4 else FindCoordinatorRequest(coordinator_keys=["g"])
                body = await h.ask(req, v)
                seen[("FindCoordinator", v)] = body.error_code if v < 4 else body.coordinators[0].error_code
            for v in range(ranges[22][0], ranges[22][1] + 1):
                body = await h.ask(InitProducerIdRequest(transactional_id=None), v)
                seen[("InitProducerId", v)] = body.error_code
            for v in range(ranges[0][0], ranges[0][1] + 1):
                topic = TopicProduceData(name=METADATA_TOPIC if v < 13 else "", topic_id=TOPIC_ID if v >= 13 else
                                         uuid.UUID(int=0), partition_data=[PartitionProduceData(
                                             index=0, records=build_batch([(None, b"x")]))])
                body = await h.ask(ProduceRequest(acks=-1, timeout_ms=100, topic_data=[topic]), v)
                seen[("Produce", v)] = body.responses[0].partition_responses[0].error_code
            return ranges, seen

    ranges, seen = run(main())
    # Like Kafka, one fetch reads from one segment: the first one here.
    first_segment = sorted(p for p in os.listdir(log_dir) if p.endswith(".log"))[0]
    with open(os.path.join(log_dir, first_segment), "rb") as f:
        first_segment_last = offsets_in(f.read())[-1]
    assert first_segment_last < last
    assert ranges == {0: (3, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 10: (0, 6), 18: (0, 4), 22: (0, 5), 60: (0, 2)}   # InitProducerId v6 is unstable
    for (api, v), answer in seen.items():
        if api == "Metadata":
            assert answer == [(METADATA_TOPIC, 0, [NODE_ID])], (api, v)
        elif api == "Fetch":
            assert answer == first_segment_last, (api, v)
        elif api == "ListOffsets":
            assert answer == [(0, 0), (0, last + 1)], (api, v)
        elif api == "DescribeCluster":
            assert answer == (CLUSTER_ID, [NODE_ID]), (api, v)
        elif api == "FindCoordinator":
            assert answer == Errors.COORDINATOR_NOT_AVAILABLE, (api, v)
        elif api == "InitProducerId":
            assert answer == Errors.CLUSTER_AUTHORIZATION_FAILED, (api, v)
        else:
            assert answer == Errors.INVALID_TOPIC_EXCEPTION, (api, v)


# --- Metadata ---------------------------------------------------------------------------------

def test_metadata_topic_id_epoch_and_unknown_topics(metadata_log):
    log_dir, written = metadata_log

    async def main():
        async with Harness(log_dir) as h:
            by_name = await h.ask(MetadataRequest(topics=[MetadataRequestTopic(name=METADATA_TOPIC),
                                                          MetadataRequestTopic(name="other"),
                                                          MetadataRequestTopic(name="bad/name")]), 12)
            by_id = await h.ask(MetadataRequest(topics=[MetadataRequestTopic(name=None, topic_id=TOPIC_ID),
                                                        MetadataRequestTopic(name=None, topic_id=uuid.UUID(int=77))]), 12)
            none = await h.ask(MetadataRequest(topics=[]), 12)
            return by_name, by_id, none

    by_name, by_id, none = run(main())
    ours, other, bad = by_name.topics
    assert (ours.name, ours.topic_id, ours.is_internal) == (METADATA_TOPIC, TOPIC_ID, False)
    p = ours.partitions[0]
    assert (p.partition_index, p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes)) == \
        (0, NODE_ID, written[-1].epoch, [NODE_ID], [NODE_ID])
    assert (other.error_code, bad.error_code) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.INVALID_TOPIC_EXCEPTION)
    assert by_name.cluster_id == CLUSTER_ID and by_name.controller_id == NODE_ID
    assert [(b.node_id, b.host) for b in by_name.brokers] == [(NODE_ID, "127.0.0.1")]
    assert [(t.name, t.error_code) for t in by_id.topics] == [(METADATA_TOPIC, 0), (None, Errors.UNKNOWN_TOPIC_ID)]
    assert list(none.topics) == []


# --- ListOffsets ------------------------------------------------------------------------------

def test_list_offsets_earliest_latest_by_time_and_max_timestamp(metadata_log):
    log_dir, written = metadata_log
    hw = written[40].offset          # inside the batch 38..41: by-timestamp answers count offsets, not batches

    async def main():
        async with Harness(log_dir, hw=hw) as h:
            target = written[30]
            body = await h.ask(list_offsets(-2, -1, target.timestamp, target.timestamp + 1, -3, -4, -5,
                                            written[hw].timestamp, 0), 9)
            old = await h.ask(list_offsets(-3), 6)
            h.hw = None                              # everything committed
            everything = await h.ask(list_offsets(-3, written[39].timestamp), 9)
            return body, old, everything

    body, old, everything = run(main())
    got = [(p.error_code, p.offset, p.timestamp, p.leader_epoch) for p in body.topics[0].partitions]
    t30 = written[30]
    assert got[0] == (0, 0, -1, 1)                                            # earliest: log start, epoch 1
    assert got[1] == (0, hw, -1, written[-1].epoch)                            # latest: the high watermark
    assert got[2] == (0, t30.offset, t30.timestamp, t30.epoch)                 # exact timestamp
    assert got[3] == (0, written[31].offset, written[31].timestamp, written[31].epoch)   # next one after
    assert got[4] == (0, -1, -1, -1)               # the newest record is the max, at or above the HW: hidden
    assert got[5] == (0, 0, -1, 1)                                            # earliest local
    assert got[6][:2] == (0, -1)                                               # latest tiered: none
    assert got[7][:2] == (0, -1)                                               # only at or above the HW: not found
    assert got[8][:2] == (0, written[0].offset)                                # timestamp 0: the first record
    assert old.topics[0].partitions[0].error_code == Errors.UNSUPPORTED_VERSION   # max timestamp needs v7
    last, t39 = written[-1], written[39]
    assert [(p.offset, p.timestamp, p.leader_epoch) for p in everything.topics[0].partitions] == \
        [(last.offset, last.timestamp, last.epoch), (t39.offset, t39.timestamp, t39.epoch)]


def test_list_offsets_unknown_partition_and_epoch_fencing(metadata_log):
    log_dir, written = metadata_log
    epoch = written[-1].epoch

    async def main():
        async with Harness(log_dir) as h:
            unknown = await h.ask(list_offsets(-1, partition=3), 9)
            other = await h.ask(list_offsets(-1, topic="other"), 9)
            fenced = await h.ask(list_offsets(-1, epoch=epoch - 1), 9)
            ahead = await h.ask(list_offsets(-1, epoch=epoch + 1), 9)
            current = await h.ask(list_offsets(-1, epoch=epoch), 9)
            return [b.topics[0].partitions[0].error_code for b in (unknown, other, fenced, ahead, current)]

    assert run(main()) == [Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                           Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH, Errors.NONE]


# --- Fetch ------------------------------------------------------------------------------------

def test_fetch_stops_at_the_high_watermark_and_reports_it(metadata_log):
    log_dir, written = metadata_log
    # Offsets 0 (LeaderChange) then batches of 4: 1-4, 5-8, ... A high watermark of 7 falls inside 5-8.
    async def main():
        async with Harness(log_dir, hw=7) as h:
            below = await h.ask(fetch_request(12, 0), 12)
            at_hw = await h.ask(fetch_request(12, 7), 12)
            beyond = await h.ask(fetch_request(12, written[-1].offset + 2), 12)
            return below, at_hw, beyond

    below, at_hw, beyond = run(main())
    p = below.responses[0].partitions[0]
    assert offsets_in(p.records) == [0, 1, 2, 3, 4]          # the batch holding 5..8 is not all committed
    assert (p.high_watermark, p.last_stable_offset, p.log_start_offset) == (7, 7, 0)
    assert p.aborted_transactions is None
    q = at_hw.responses[0].partitions[0]
    assert (q.error_code, bytes(q.records), q.high_watermark) == (0, b"", 7)
    r = beyond.responses[0].partitions[0]
    assert (r.error_code, r.high_watermark) == (Errors.OFFSET_OUT_OF_RANGE, -1)
    assert below.session_id == 0 and below.error_code == 0


def test_fetch_byte_limits_keep_at_least_one_batch(metadata_log):
    log_dir, _ = metadata_log

    async def main():
        async with Harness(log_dir) as h:
            tiny = await h.ask(fetch_request(12, 1, partition_max_bytes=1), 12)
            small = await h.ask(fetch_request(12, 1, partition_max_bytes=300), 12)
            return tiny, small

    tiny, small = run(main())
    assert offsets_in(tiny.responses[0].partitions[0].records) == [1, 2, 3, 4]     # one whole batch
    records = bytes(small.responses[0].partitions[0].records)
    assert 0 < len(records) <= 300 and offsets_in(records)[0] == 1


def whole_batches_below(log_, offset, max_bytes, min_one, hw) -> bytes:
    """The answer as the topic read it before it read as the broker does: Log.read's whole
    batches, then those that end below ``hw``, found by parsing them."""
    data = log_.read(offset, max_bytes, min_one_batch=min_one).data
    end = 0
    for batch in iter_batches(data, verify_crc=False):
        if batch.last_offset >= hw:
            break
        end = batch.end_position
    return data[:end]


def test_fetch_answers_the_bytes_of_the_read_cut_by_parsing(tmp_path):
    """Fetch reads as the broker does (Log.read_extent cut at the high watermark): the same bytes
    as Log.read then the whole batches below the high watermark, over several segments, for every
    other fetch offset, high watermarks inside and at the end of batches, byte limits of the
    partition and of the response that cut inside a batch or below the first one (answered
    whole), a second partition read with the budget left (no whole batch required), and appends
    the raft log has not written yet (deferred writes)."""
    log_dir, _ = write_metadata_log(tmp_path, segment_bytes=1024)
    limits = ((1, 1 << 20), (300, 1 << 20), (1000, 1 << 20), (1 << 20, 250), (1 << 20, 1200), (1 << 20, 1 << 20))
    with Log(log_dir, segment_bytes=1024, deferred_writes=True) as log_:
        # Batches of 700-950 bytes (a segment each: larger than most limits above), then three
        # small ones the active segment holds unwritten.
        for size in (650, 700, 750, 800, 850, 900, 100, 100, 100):
            log_.append(build_batch([(None, b"v" * size)], base_offset=log_.log_end_offset))
        unwritten = log_.active_segment.base_offset
        assert len(log_.segments) > 5 and log_.active_segment.has_unwritten and unwritten < log_.log_end_offset - 2
        end = hw = log_.log_end_offset
        # The quorum's epoch, as a controller node gives it: the topic's own epoch cache would
        # read (and so write) the log before the fetch does.
        topic = MetadataTopic(log_, cluster_id=CLUSTER_ID, node=NodeEndpoint(NODE_ID, "127.0.0.1", 1),
                              high_watermark=lambda: hw, leader_epoch=lambda: 3)
        ctx = type("Ctx", (), {"api_version": 12})()

        async def fetch(first_offset, second_offset, partition_max_bytes, max_bytes):
            request = fetch_request(12, first_offset, partition_max_bytes=partition_max_bytes, max_bytes=max_bytes)
            request.topics[0].partitions.append(FetchPartition(partition=0, fetch_offset=second_offset,
                                                               partition_max_bytes=partition_max_bytes))
            body = await topic.fetch(ctx, request)
            return [bytes(p.records) for p in body.responses[0].partitions]

        def old_answers(first_offset, second_offset, partition_max_bytes, max_bytes):
            first = b"" if first_offset >= hw else whole_batches_below(
                log_, first_offset, min(partition_max_bytes, max_bytes), True, hw)
            limit = min(partition_max_bytes, max_bytes - len(first))
            second = b"" if second_offset >= hw or (limit <= 0 and first) else whole_batches_below(
                log_, second_offset, max(limit, 0), not first, hw)
            return [first, second]

        async def compare():
            nonlocal hw
            unwritten_first = await fetch(unwritten, end, 1 << 20, 1 << 20)
            assert not log_.active_segment.has_unwritten and len(unwritten_first[0]) > 300      # the read wrote them
            assert unwritten_first == old_answers(unwritten, end, 1 << 20, 1 << 20)
            compared = cut_at_hw = 0
            for hw in (1, 7, 25, 26, end - 2, end):
                for offset in range(0, end, 2):
                    for pmb, max_bytes in limits:
                        old = old_answers(offset, min(offset + 5, end - 1), pmb, max_bytes)
                        assert await fetch(offset, min(offset + 5, end - 1), pmb, max_bytes) == old, \
                            (hw, offset, pmb, max_bytes)
                        compared += 1
                        cut_at_hw += 0 < len(old[0]) < len(log_.read(offset, min(pmb, max_bytes)).data)
            return compared, cut_at_hw

        compared, cut_at_hw = asyncio.run(compare())
    # The cases the comparison is for were met: many, and answers the high watermark cut.
    assert compared > 1000 and cut_at_hw > 10


def test_fetch_sessions_are_never_created(metadata_log):
    log_dir, _ = metadata_log

    async def main():
        async with Harness(log_dir) as h:
            new_session = fetch_request(12, 0)
            new_session.session_epoch = 0
            full = await h.ask(new_session, 12)
            incremental = fetch_request(12, 0)
            incremental.session_id, incremental.session_epoch = 1234, 1
            refused = await h.ask(incremental, 12)
            return full, refused

    full, refused = run(main())
    assert full.session_id == 0 and full.error_code == 0 and len(full.responses) == 1
    assert (refused.error_code, refused.session_id, list(refused.responses)) == (Errors.FETCH_SESSION_ID_NOT_FOUND, 0, [])


def test_fetch_by_unknown_topic_or_partition(metadata_log):
    log_dir, _ = metadata_log

    async def main():
        async with Harness(log_dir) as h:
            by_id = await h.ask(fetch_request(13, 0, topic_id=uuid.UUID(int=42)), 13)
            by_name = await h.ask(fetch_request(12, 0, topic="nope"), 12)
            partition = await h.ask(fetch_request(12, 0, partition=5), 12)
            return [b.responses[0].partitions[0].error_code for b in (by_id, by_name, partition)]

    assert run(main()) == [Errors.UNKNOWN_TOPIC_ID, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION]


def test_fetch_epoch_fencing_and_divergence(metadata_log):
    log_dir, written = metadata_log
    epoch2 = [w.offset for w in written if w.epoch == 2]
    end_of_epoch2 = epoch2[-1] + 1

    async def main():
        async with Harness(log_dir) as h:
            fenced = await h.ask(fetch_request(12, 0, current_leader_epoch=1), 12)
            diverged = await h.ask(fetch_request(12, end_of_epoch2 + 3, last_fetched_epoch=2), 12)
            fine = await h.ask(fetch_request(12, end_of_epoch2, last_fetched_epoch=2), 12)
            return fenced, diverged, fine

    fenced, diverged, fine = run(main())
    assert fenced.responses[0].partitions[0].error_code == Errors.FENCED_LEADER_EPOCH
    d = diverged.responses[0].partitions[0]
    assert (d.error_code, d.diverging_epoch.epoch, d.diverging_epoch.end_offset, bytes(d.records)) == \
        (0, 2, end_of_epoch2, b"")
    assert offsets_in(fine.responses[0].partitions[0].records)[0] == end_of_epoch2


def test_a_long_poll_is_woken_when_the_high_watermark_advances(metadata_log):
    log_dir, written = metadata_log
    end = written[-1].offset + 1

    async def main():
        # The poll fallback is an hour and max_wait a minute: only the wake-up can answer in time
        # (the test's own 20 s limit fails it otherwise).
        async with Harness(log_dir, hw=5, max_wait_cap_ms=60_000, poll_interval_ms=3_600_000) as h:
            await h.conn.send(fetch_request(12, 5, max_wait_ms=60_000, min_bytes=1), 12, 99)
            await asyncio.sleep(0.1)
            h.hw = end
            h.topic.high_watermark_advanced()
            cid, body = await h.conn.read_response(1, 12)
            return cid, body

    cid, body = run(main())
    p = body.responses[0].partitions[0]
    assert cid == 99 and p.high_watermark == end and offsets_in(p.records)[0] == 5


def test_a_waiting_fetch_reads_the_log_again_only_when_the_high_watermark_moves(metadata_log):
    log_dir, written = metadata_log
    end = written[-1].offset + 1

    async def main():
        async with Harness(log_dir, hw=end, max_wait_cap_ms=60_000, poll_interval_ms=10) as h:
            reads = 0
            real_read = h.log.read_extent

            def counting_read(*args, **kwargs):
                nonlocal reads
                reads += 1
                return real_read(*args, **kwargs)
            h.log.read_extent = counting_read
            # At the high watermark with min_bytes 1: nothing to send; it waits 0.5 s, polling
            # every 10 ms, and must not read the log while nothing changes.
            await h.conn.send(fetch_request(12, written[0].offset, max_wait_ms=500, min_bytes=10**8), 12, 1)
            await h.conn.read_response(1, 12)
            return reads

    assert run(main()) == 1


# --- what a read-only topic refuses ------------------------------------------------------------

def test_produce_is_refused_and_acks0_closes_the_connection(metadata_log):
    log_dir, _ = metadata_log

    def produce(acks, name=METADATA_TOPIC, transactional_id=None):
        return ProduceRequest(acks=acks, timeout_ms=100, transactional_id=transactional_id, topic_data=[
            TopicProduceData(name=name, partition_data=[PartitionProduceData(index=0, records=build_batch([(None, b"v")]))])])

    async def main():
        async with Harness(log_dir) as h:
            ours = await h.ask(produce(1), 9)
            other = await h.ask(produce(1, name="elsewhere"), 9)
            await h.conn.send(produce(0), 9, 50)
            closed = await h.conn.at_eof()
            return ours, other, closed

    ours, other, closed = run(main())
    p = ours.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset, p.error_message) == (
        Errors.INVALID_TOPIC_EXCEPTION, -1, "Cannot append to internal topic __cluster_metadata")
    assert other.responses[0].partition_responses[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert closed


def test_init_producer_id_and_find_coordinator(metadata_log):
    log_dir, _ = metadata_log

    async def main():
        async with Harness(log_dir) as h:
            txn = await h.ask(InitProducerIdRequest(transactional_id="t", transaction_timeout_ms=1000), 4)
            old = await h.ask(FindCoordinatorRequest(key="group", key_type=0), 3)
            new = await h.ask(FindCoordinatorRequest(key_type=1, coordinator_keys=["a", "b"]), 4)
            return txn, old, new

    txn, old, new = run(main())
    assert (txn.error_code, txn.producer_id) == (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)
    assert (old.error_code, old.node_id, old.error_message) == (Errors.COORDINATOR_NOT_AVAILABLE, -1,
                                                                "The coordinator is not available.")
    assert [(c.key, c.error_code) for c in new.coordinators] == [("a", 15), ("b", 15)]


def test_topic_id_defaults_to_kafkas_metadata_topic_id(tmp_path):
    log_dir, _ = write_metadata_log(tmp_path, epochs=1, batches_per_epoch=1)
    (tmp_path / "__cluster_metadata-0" / "partition.metadata").unlink()
    with Log(log_dir) as log_:
        topic = MetadataTopic(log_, cluster_id="c", node=NodeEndpoint(1, "h", 1), high_watermark=lambda: 0)
        assert topic.topic_id == uuid.UUID(int=1)


def test_serve_log_entry_point_serves_and_shuts_down_cleanly(metadata_log):
    import signal
    import subprocess
    import sys

    from kafkawire.net.client import NetworkClient

    log_dir, written = metadata_log
    proc = subprocess.Popen([sys.executable, "-m", "kafkawire.net.serve_log", "--log-dir", log_dir, "--port", "0",
                             "--high-watermark", "25"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"serving {log_dir} on 127.0.0.1:"), line + proc.stderr.read()
        port = int(line.split(" on 127.0.0.1:")[1].split()[0])

        async def ask():
            async with NetworkClient() as client:
                peer = ("127.0.0.1", port)
                metadata = await client.send(peer, MetadataRequest(topics=None))
                offsets = await client.send(peer, list_offsets(-1))
                return metadata, offsets

        metadata, offsets = run(ask())
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=15)
    assert metadata.cluster_id == CLUSTER_ID and [b.node_id for b in metadata.brokers] == [NODE_ID]
    assert offsets.topics[0].partitions[0].offset == 25
    assert code == 0
