"""A realistic Kafka capture of any size, written with our own codecs, for benchmarks/pcap_check.py.

Several connections to a broker on 9092, interleaved in time as tcpdump on an Ethernet interface
would see them: producers (ApiVersions, Metadata, then Produce v9 with 1-3 partitions of record
batches of 20-200 records, some compressed), consumers (ApiVersions, Metadata, then Fetch v12
whose responses carry such batches) and an admin client asking Metadata for 50 topics now and
then. Each direction is cut into 1448-byte segments (a 1500-byte MTU with TCP timestamps), the
other side ACKs every second segment, connections open with a handshake and end with FINs.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/pcap_capture.py OUT.pcap [--mb 50] [--pcapng]
"""
from __future__ import annotations

import argparse
import random
import struct
import uuid

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.metadata_response import (MetadataResponse, MetadataResponseBroker,
                                                  MetadataResponsePartition, MetadataResponseTopic)
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.messages.produce_response import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
from kafkawire.protocol import framing
from kafkawire.protocol.apis import api_versions_response
from kafkawire.records import GZIP, LZ4, NONE, ZSTD, build_batch

MSS = 1448
BROKER = (bytes([10, 1, 0, 5]), 9092)
SYN, FIN, PSH, ACK = 0x02, 0x01, 0x08, 0x10
TOPICS = [f"orders-{i}" for i in range(50)]


def _batch(rng: random.Random, offset: int) -> bytes:
    count = rng.randint(20, 200)
    records = [(f"key-{rng.randrange(10**6)}".encode(),
                ('{"id": %d, "amount": %d, "note": "%s"}' % (offset + i, rng.randrange(10**5), "x" * rng.randint(20, 120))).encode(),
                [("trace", b"%016x" % rng.getrandbits(64))] if i % 3 == 0 else [])
               for i in range(count)]
    codec = rng.choice((NONE, NONE, NONE, NONE, GZIP, LZ4, ZSTD))
    return build_batch(records, base_offset=offset, compression_type=codec, base_timestamp=1_700_000_000_000 + offset)


def _metadata_response(topics) -> MetadataResponse:
    brokers = [MetadataResponseBroker(node_id=i, host=f"broker-{i}.example", port=9092, rack=f"r{i}") for i in range(3)]
    return MetadataResponse(brokers=brokers, cluster_id="kw-bench", controller_id=1, topics=[
        MetadataResponseTopic(name=name, topic_id=uuid.UUID(int=i + 1), partitions=[
            MetadataResponsePartition(partition_index=p, leader_id=p % 3, leader_epoch=4, replica_nodes=[0, 1, 2],
                                      isr_nodes=[0, 1, 2]) for p in range(6)])
        for i, name in enumerate(topics)])


def _handshake_frames(client_id: str, correlation: int):
    request = framing.encode_request(ApiVersionsRequest(client_software_name="kw-bench", client_software_version="1"),
                                     3, correlation, client_id)
    yield request, framing.encode_response(api_versions_response(), 3, correlation)
    topics = TOPICS[:3]
    request = framing.encode_request(MetadataRequest(topics=[MetadataRequestTopic(name=t) for t in topics]), 12,
                                     correlation + 1, client_id)
    yield request, framing.encode_response(_metadata_response(topics), 12, correlation + 1)


def _producer(rng: random.Random, n: int):
    client_id, offsets = f"producer-{n}", {}
    yield from _handshake_frames(client_id, 1)
    correlation = 3
    while True:
        topic = rng.choice(TOPICS[:3])
        partitions = rng.sample(range(6), rng.randint(1, 3))
        batches = []
        for p in partitions:
            batches.append(_batch(rng, offsets.get((topic, p), 0)))
            offsets[(topic, p)] = offsets.get((topic, p), 0) + 1000
        request = ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[TopicProduceData(name=topic, partition_data=[
            PartitionProduceData(index=p, records=b) for p, b in zip(partitions, batches)])])
        response = ProduceResponse(responses=[TopicProduceResponse(name=topic, partition_responses=[
            PartitionProduceResponse(index=p, base_offset=offsets[(topic, p)] - 1000) for p in partitions])])
        yield framing.encode_request(request, 9, correlation, client_id), framing.encode_response(response, 9, correlation)
        correlation += 1


def _consumer(rng: random.Random, n: int):
    client_id, offset = f"consumer-{n}", 0
    yield from _handshake_frames(client_id, 1)
    correlation = 3
    while True:
        topic = TOPICS[rng.randrange(3)]
        partitions = rng.sample(range(6), rng.randint(1, 2))
        request = FetchRequest(max_wait_ms=500, min_bytes=1, max_bytes=52428800, session_id=7, session_epoch=correlation,
                               topics=[FetchTopic(topic=topic, partitions=[
                                   FetchPartition(partition=p, fetch_offset=offset, partition_max_bytes=1048576)
                                   for p in partitions])])
        response = FetchResponse(session_id=7, responses=[FetchableTopicResponse(topic=topic, partitions=[
            PartitionData(partition_index=p, high_watermark=offset + 10000, last_stable_offset=offset + 10000,
                          log_start_offset=0, records=b"".join(_batch(rng, offset + k * 1000) for k in range(rng.randint(1, 3))))
            for p in partitions])])
        yield framing.encode_request(request, 12, correlation, client_id), framing.encode_response(response, 12, correlation)
        correlation += 1
        offset += 3000


def _admin(rng: random.Random, n: int):
    client_id, correlation = f"admin-{n}", 1
    yield from _handshake_frames(client_id, correlation)
    correlation = 3
    while True:
        request = MetadataRequest(topics=None, allow_auto_topic_creation=False)
        yield (framing.encode_request(request, 12, correlation, client_id),
               framing.encode_response(_metadata_response(TOPICS), 12, correlation))
        correlation += 1


class _Connection:
    """One TCP connection's sequence numbers and the packets it sends (Ethernet frames)."""

    def __init__(self, rng: random.Random, port: int, exchanges):
        self.client = (bytes([10, 1, 1, port % 250 + 1]), port)
        self.seq = {True: rng.getrandbits(32), False: rng.getrandbits(32)}   # True: the client's side
        self.exchanges = exchanges

    def packet(self, from_client: bool, flags: int, payload: bytes = b"") -> bytes:
        (src, sport), (dst, dport) = (self.client, BROKER) if from_client else (BROKER, self.client)
        seq, ack = self.seq[from_client], self.seq[not from_client]
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
        self.seq[from_client] += len(payload) + (1 if flags & (SYN | FIN) else 0)
        return b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00" + ip + tcp + payload

    def open(self):
        yield self.packet(True, SYN)
        yield self.packet(False, SYN | ACK)
        yield self.packet(True, ACK)

    def send(self, from_client: bool, data: bytes):
        for n, at in enumerate(range(0, len(data), MSS)):
            yield self.packet(from_client, PSH | ACK, data[at:at + MSS])
            if n % 2:
                yield self.packet(not from_client, ACK)

    def close(self):
        yield self.packet(True, FIN | ACK)
        yield self.packet(False, FIN | ACK)
        yield self.packet(True, ACK)


def packets(mb: float, seed: int = 26):
    """Ethernet frames, interleaved over the connections, until about mb megabytes are written."""
    rng = random.Random(seed)
    kinds = [_producer] * 4 + [_consumer] * 3 + [_admin]
    connections = [_Connection(rng, 40000 + i, kind(rng, i)) for i, kind in enumerate(kinds)]
    for c in connections:
        yield from c.open()
    total = 0
    while total < mb * 1e6:
        c = rng.choice(connections)
        request, response = next(c.exchanges)
        for data in (*c.send(True, request), *c.send(False, response)):
            total += len(data) + 16
            yield data
    for c in connections:
        yield from c.close()


def write(path, mb: float, pcapng: bool = False, seed: int = 26) -> int:
    """Write the capture; returns the number of packets."""
    count, t = 0, 1_700_000_000.0
    with open(path, "wb") as out:
        if pcapng:
            out.write(struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28))
            out.write(struct.pack("<IIHHI", 1, 20, 1, 0, 262144) + struct.pack("<I", 20))
        else:
            out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for data in packets(mb, seed):
            count += 1
            t += 0.00002
            micros = int(t * 1e6)
            if pcapng:
                padded = data + b"\0" * (-len(data) % 4)
                out.write(struct.pack("<IIIIIII", 6, 32 + len(padded), 0, micros >> 32, micros & 0xFFFFFFFF, len(data),
                                      len(data)) + padded + struct.pack("<I", 32 + len(padded)))
            else:
                out.write(struct.pack("<IIII", micros // 1_000_000, micros % 1_000_000, len(data), len(data)) + data)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--pcapng", action="store_true")
    args = parser.parse_args()
    print(f"{args.out}: {write(args.out, args.mb, args.pcapng)} packets")


if __name__ == "__main__":
    main()
