"""A consumer's fetch on a plaintext listener leaves its records in the log's files and the
connection sends them with sendfile (kafkawire.protocol.file_range, kafkawire.net.file_send); the
bytes a consumer reads must be the same as when they are read into the answer. In process, on a
temporary directory: the partition's reads against a reference computed from the segment files,
then whole Fetch answers encoded both ways and the file-backed one sent over a real TCP
connection, for read_uncommitted and read_committed (aborted transactions), an incremental
session, a follower's fetch, a max_bytes cut, and segments appended to, rolled and deleted
between the read and the send; a file truncated under the send fails it (the connection closes)."""
from __future__ import annotations

import asyncio
import os
import socket
from types import SimpleNamespace

from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.validation import validate_produce
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kafkawire.net.file_send import write_file_frame
from kafkawire.net.loop import run as run_as_the_node_does
from kafkawire.protocol.file_range import FileFrame, FileRange
from kafkawire.protocol.framing import encode_response
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch
from kafkawire.storage.batch_scan import FILE_RANGE_MIN_BYTES

from .test_read_from_followers import TOPIC_ID, broker_registration, close, image_with, make_broker

NOW = 1_800_000_000_000
A, B, C = 11, 22, 33
VALUE = b"x" * 100


class Producers:
    def __init__(self, partition):
        self.partition, self.next_seq = partition, {}

    def send(self, pid: int, count: int, *, txn: bool = True) -> None:
        seq = self.next_seq.get(pid, 0)
        data = build_batch([(b"k%d" % i, VALUE, [], NOW) for i in range(count)], producer_id=pid, producer_epoch=0,
                           base_sequence=seq, is_transactional=txn)
        validated = validate_produce(data, topic_partition=self.partition.name, max_message_bytes=1 << 20,
                                     log_append_time=False, now_ms=NOW)
        self.next_seq[pid] = seq + count
        self.partition.append(validated, now_ms=NOW)

    def end(self, pid: int, *, commit: bool) -> None:
        self.partition.append_marker(producer_id=pid, producer_epoch=0, coordinator_epoch=1, commit=commit, now_ms=NOW)


def fill(partition, *, roll: bool = False) -> None:
    """About 650 KB: plain batches, committed and aborted transactions interleaved, and one
    transaction left open near the end (the LSO below the HW); ``roll``: a new segment every 3
    rounds (the broker's log.segment.bytes cannot go below 1 MB)."""
    producers = Producers(partition)
    for round_no in range(12):
        if roll and round_no % 3 == 2:
            partition.log.roll()
        producers.send(C, 150, txn=False)
        producers.send(A, 100)
        producers.send(B, 120)
        producers.end(A, commit=round_no % 3 != 0)
        producers.send(C, 90, txn=False)
        producers.end(B, commit=round_no % 2 == 0)
    producers.send(A, 80)                       # open: the last stable offset stays at its first offset
    producers.send(C, 200, txn=False)


def expected_read(partition, offset: int, max_bytes: int, min_one: bool, upper: int) -> bytes:
    """What the fetch must answer, from the segment files alone: whole batches from the one
    holding ``offset``, max_bytes (one batch at least with min_one), those below ``upper``."""
    for segment in partition.log.segments:
        with open(segment.log_path, "rb") as f:
            data = f.read()
        batches = [b for b in iter_batches(data, verify_crc=False) if b.last_offset >= offset]
        if not batches:
            continue
        start = end = batches[0].position
        for b in batches:
            if b.end_position - start > max_bytes and not (min_one and end == start):
                break
            end = b.end_position
        cut = start
        for b in batches:
            if b.end_position > end or b.last_offset >= upper:
                break
            cut = b.end_position
        return data[start:cut]
    return b""


def as_bytes(records) -> bytes:
    if type(records) is FileRange:
        try:
            return records.read()
        finally:
            records.close()
    return records


def test_reads_in_the_file_are_the_bytes_of_the_segments(tmp_path, monkeypatch):
    partition = LeaderPartition.open(str(tmp_path), "t", 0, TOPIC_ID, leader_epoch=3, segment_bytes=200_000,
                                     now_ms=NOW)
    fill(partition)
    assert len(partition.log.segments) >= 4
    hw, lso = partition.high_watermark(), partition.last_stable_offset()
    assert lso < hw
    in_file_seen = 0
    for offset in (0, 1, 149, 150, 700, 1234, 2500, lso - 1, hw - 1, hw):
        for max_bytes in (0, 1, 50_000, FILE_RANGE_MIN_BYTES, 300_000, 1 << 20):
            for min_one in (True, False):
                want = expected_read(partition, offset, max_bytes, min_one, hw)
                for in_file in (False, True):
                    got = partition.read(offset, max_bytes, min_one_batch=min_one, in_file=in_file)
                    in_file_seen += type(got) is FileRange
                    assert as_bytes(got) == want, (offset, max_bytes, min_one, in_file)
                if offset < lso:
                    want = expected_read(partition, offset, max_bytes, min_one, lso)
                    plain, aborted = partition.read_committed(offset, max_bytes, min_one_batch=min_one)
                    ranged, aborted_too = partition.read_committed(offset, max_bytes, min_one_batch=min_one,
                                                                   in_file=True)
                    assert plain == as_bytes(ranged) == want and aborted == aborted_too, (offset, max_bytes)
    assert in_file_seen > 20            # the large reads did stay in the files
    # past FileRange.MAX_OPEN ranges waiting to be sent, a read is answered from memory
    monkeypatch.setattr(FileRange, "MAX_OPEN", FileRange.open_ranges + 1)
    held = partition.read(0, 1 << 20, min_one_batch=True, in_file=True)
    over = partition.read(0, 1 << 20, min_one_batch=True, in_file=True)
    assert (type(held), type(over)) == (FileRange, bytes) and as_bytes(held) == over
    # the parsing path (legacy messages, corrupt headers) finds the same ranges as the header scan
    for segment in partition.log.segments:
        for offset in (segment.base_offset, segment.base_offset + 333):
            for max_bytes, upper in ((10_000, hw), (1 << 20, lso), (1 << 20, None)):
                assert segment.read_extent(offset, max_bytes, upper=upper) == \
                    segment._read_extent_by_parsing(offset, max_bytes, True, upper)
    partition.close()


def single_replica_image():
    return image_with(1, isr=(1,), brokers={1: broker_registration(1)})


def filled_leader(tmp_path):
    """(a broker leading t-0 alone, that partition filled and rolled into several segments)."""
    broker, state = make_broker(tmp_path)
    state["image"] = single_replica_image()
    broker.on_metadata()
    partition = broker.partitions[("t", 0)]
    fill(partition, roll=True)
    return broker, partition


def fetch_request(offsets: dict, *, committed: bool, max_bytes: int, session_id: int = 0, epoch: int = -1):
    return FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=1 if committed else 0,
                        session_id=session_id, session_epoch=epoch, rack_id="",
                        topics=[FetchTopic(topic="t", topic_id=TOPIC_ID, partitions=[
                            FetchPartition(partition=0, fetch_offset=o, partition_max_bytes=1 << 20)
                            for o in offsets.values()])])


async def sent_over_tcp(frame) -> bytes:
    """The bytes a client reads when the server's writer sends ``frame`` (bytes or a FileFrame).
    Both ends' socket buffers are small, so a range fills the socket and its send must wait."""
    async def serve(_reader, writer):
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        if type(frame) is FileFrame:
            await write_file_frame(writer, frame)
        else:
            writer.write(frame)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.connect(server.sockets[0].getsockname())
    client.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=client)
    received = await reader.read()          # to the server's close
    writer.close()
    server.close()
    await server.wait_closed()
    return received


def test_a_fetch_answer_sent_from_the_files_is_the_answer_read_into_memory(tmp_path, monkeypatch):
    sendfile_calls = []
    real_sendfile = os.sendfile

    def counted_sendfile(*args):
        try:
            sent = real_sendfile(*args)
        except BlockingIOError:
            sendfile_calls.append("full")
            raise
        sendfile_calls.append(sent)
        return sent
    monkeypatch.setattr(os, "sendfile", counted_sendfile)

    async def go():
        broker, partition = filled_leader(tmp_path)
        open_before = FileRange.open_ranges
        plaintext = SimpleNamespace(api_version=16, listener_name="PLAINTEXT", security_protocol="PLAINTEXT")
        in_memory = SimpleNamespace(api_version=16, listener_name="PLAINTEXT", security_protocol="SSL")
        ranges_sent = 0
        for committed in (False, True):
            for offset, max_bytes in ((0, 1 << 20), (0, 150_000), (1500, 100_000), (2000, 10)):
                request = fetch_request({0: offset}, committed=committed, max_bytes=max_bytes)
                memory = await broker.fetch_api.fetch(in_memory, request)
                records = memory.responses[0].partitions[0].records
                assert type(records) is bytes and records, (committed, offset, max_bytes)
                expected = encode_response(memory, 16, 5)
                files = await broker.fetch_api.fetch(plaintext, request)
                assert encode_response(files, 16, 5) == expected      # read when encoded to bytes
                frame = encode_response(files, 16, 5, file_frame=True)
                ranges_sent += type(frame) is FileFrame
                assert await sent_over_tcp(frame) == expected, (committed, offset, max_bytes)
        # a follower's fetch (replica 2, v15) too
        follower = fetch_request({0: 0}, committed=False, max_bytes=1 << 20)
        follower.replica_state = ReplicaState(replica_id=2, replica_epoch=20)
        expected = encode_response(await broker.fetch_api.fetch(in_memory, follower), 16, 6)
        frame = encode_response(await broker.fetch_api.fetch(plaintext, follower), 16, 6, file_frame=True)
        ranges_sent += type(frame) is FileFrame
        assert type(frame) is FileFrame and await sent_over_tcp(frame) == expected
        assert ranges_sent >= 5 and len(sendfile_calls) >= ranges_sent       # sent by sendfile, not read
        assert FileRange.open_ranges == open_before        # every range sent was closed
        assert "full" in sendfile_calls         # and they waited for the socket to drain
        # an incremental session: the second answer carries the partition again from its new offset
        first = await broker.fetch_api.fetch(plaintext, fetch_request({0: 0}, committed=False, max_bytes=1 << 20,
                                                                      epoch=0))
        session, first_records = first.session_id, bytes(first.responses[0].partitions[0].records)
        expected = encode_response(first, 16, 1)
        assert session > 0 and await sent_over_tcp(encode_response(first, 16, 1, file_frame=True)) == expected
        upto = max(b.last_offset for b in iter_batches(first_records)) + 1
        request = fetch_request({0: upto}, committed=False, max_bytes=1 << 20, session_id=session, epoch=1)
        incremental = await broker.fetch_api.fetch(plaintext, request)
        records = incremental.responses[0].partitions[0].records
        assert incremental.session_id == session and type(records) is FileRange
        assert bytes(records) == expected_read(partition, upto, 1 << 20, True, partition.high_watermark())
        expected = encode_response(incremental, 16, 2)
        assert await sent_over_tcp(encode_response(incremental, 16, 2, file_frame=True)) == expected
        await close(broker)
    run_as_the_node_does(go())        # uvloop when installed: it has no loop.sendfile


def test_segments_deleted_between_the_read_and_the_send_are_sent_as_they_were(tmp_path):
    """Kafka answers what it read: the range holds its own descriptor, so deleting (and closing)
    the segments after the fetch read them changes nothing the consumer gets. (On asyncio's own
    loop; the test above runs on the node's.)"""
    async def go():
        broker, partition = filled_leader(tmp_path)
        plaintext = SimpleNamespace(api_version=16, listener_name="PLAINTEXT", security_protocol="PLAINTEXT")
        request = fetch_request({0: 0}, committed=False, max_bytes=1 << 20)
        expected = encode_response(await broker.fetch_api.fetch(plaintext, request), 16, 9)
        answer = await broker.fetch_api.fetch(plaintext, request)
        frame = encode_response(answer, 16, 9, file_frame=True)
        assert type(frame) is FileFrame
        first_segment = partition.log.segments[0].log_path
        Producers(partition).send(44, 300, txn=False)      # appended and rolled after the read: not sent
        partition.log.roll()
        assert partition.log.delete_segments_before(partition.log.segments[2].base_offset) == 2
        assert not os.path.exists(first_segment)
        # the deleted segments' descriptors are free again: new files may get their numbers
        others = [open(tmp_path / f"other-{n}", "wb+") for n in range(4)]
        for other in others:
            other.write(b"not the log" * 1000)
            other.flush()
        assert await sent_over_tcp(frame) == expected
        for other in others:
            other.close()
        await close(broker)
    asyncio.run(go())


def test_a_range_truncated_under_the_send_fails_the_send_instead_of_sending_a_short_frame(tmp_path):
    async def go():
        path = tmp_path / "segment"
        path.write_bytes(b"r" * 200_000)
        with open(path, "rb") as f:
            frame = FileFrame([b"head", FileRange.of(f.fileno(), 0, 200_000), b"tail"])
        os.truncate(path, 100_000)
        failed = []

        async def serve(_reader, writer):
            try:
                await write_file_frame(writer, frame)
            except ConnectionError as exc:
                failed.append(str(exc))
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname())
        received = await reader.read()
        writer.close()
        server.close()
        await server.wait_closed()
        assert failed and "truncated" in failed[0] and len(received) == 4 + 100_000
        assert frame[1].fd == -1            # closed all the same
    run_as_the_node_does(go())


def test_the_brokers_fetch_max_bytes_caps_a_larger_max_bytes_of_the_request(tmp_path):
    """ReplicaManager.fetchMessages reads at most min(the request's max_bytes, fetch.max.bytes):
    a request asking 1 MB of a broker with fetch.max.bytes=150000 gets the whole batches that fit
    in 150,000 bytes, as a request asking 150,000 does."""
    async def go():
        broker, state = make_broker(tmp_path, "fetch.max.bytes=150000\n")
        state["image"] = single_replica_image()
        broker.on_metadata()
        partition = broker.partitions[("t", 0)]
        fill(partition)
        in_memory = SimpleNamespace(api_version=16, listener_name="PLAINTEXT", security_protocol="SSL")
        answer = await broker.fetch_api.fetch(in_memory, fetch_request({0: 0}, committed=False, max_bytes=1 << 20))
        records = answer.responses[0].partitions[0].records
        assert records == expected_read(partition, 0, 150_000, True, partition.high_watermark())
        assert 100_000 < len(records) <= 150_000
        await close(broker)
    asyncio.run(go())
