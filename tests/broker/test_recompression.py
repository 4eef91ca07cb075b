"""A produced batch stored in its topic's ``compression.type`` (kafkawire.broker.recompression),
as Kafka 4.3.1's LogValidator decides and builds it: re-encoded only when the codec differs
(``producer`` keeps the producer's), the producer's id, epoch, sequence and records kept, and the
new batch checked against ``max.message.bytes`` again (UnifiedLog.append)."""
from __future__ import annotations

import os
import struct
import time

import pytest
from crc32c import crc32c

from kafkawire.broker.validation import ProduceRefused, validate_produce
from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, iter_batches
from kafkawire.records.batch import CREATE_TIME, LOG_APPEND_TIME
from kafkawire.records.builder import build_batch
from kafkawire.records.compression import compress, decompress

from .wire import call      # a raw request to the session's broker

# The session's embedded broker (kafkawire_broker), shared with the other wire tests.
pytest_plugins = ["kafkawire.testing.pytest_plugin"]

NOW = 1_800_000_000_000
RECORDS = [(b"k%d" % i, b"value-%d" % i * 20, [("h", b"x%d" % i)], NOW - 100 + i) for i in range(5)]
IDEMPOTENT = dict(producer_id=42, producer_epoch=3, base_sequence=10)


RECORDS_HEADER_BYTES = 61       # a v2 batch's header; its records section follows


def stored(data: bytes, compression_type: str, *, log_append_time=False, max_message_bytes=1048588, levels=()):
    validated = validate_produce(data, topic_partition="t-0", max_message_bytes=max_message_bytes, now_ms=NOW + 7,
                                 log_append_time=log_append_time, compression_type=compression_type,
                                 compression_levels=levels)
    return validated, next(iter(iter_batches(validated.data)))


def written_at(codec: int, data: bytes):
    """A check of one batch: is its records section what ``codec`` writes at a given level?"""
    section = data[RECORDS_HEADER_BYTES:]
    raw = decompress(codec, section)
    return lambda level: section == compress(codec, raw, level)


def contents(batch):
    return [(bytes(r.key), bytes(r.value), [(k, bytes(v)) for k, v in r.headers], r.timestamp) for r in batch]


@pytest.mark.parametrize("source, topic, codec", [(NONE, "gzip", GZIP), (GZIP, "uncompressed", NONE),
                                                  (GZIP, "zstd", ZSTD)])
def test_a_batch_in_another_codec_than_the_topics_is_written_again_in_the_topics(source, topic, codec):
    validated, batch = stored(build_batch(RECORDS, compression_type=source, **IDEMPOTENT), topic)
    assert (batch.compression_type, batch.is_valid, batch.timestamp_type, validated.records) == (codec, True,
                                                                                                  CREATE_TIME, 5)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, 10)
    assert validated.batch.base_sequence == 10              # what the producer state checks
    assert contents(batch) == [(k, v, h, t) for k, v, h, t in RECORDS]


@pytest.mark.parametrize("source, topic", [(GZIP, "producer"), (NONE, "producer"), (GZIP, "gzip"),
                                           (NONE, "uncompressed")])
def test_a_batch_already_in_the_topics_codec_keeps_its_bytes(source, topic):
    data = build_batch(RECORDS, compression_type=source)
    assert stored(data, topic)[0].data == data


@pytest.mark.parametrize("topic, codec, level", [("gzip", GZIP, 1), ("lz4", LZ4, 12), ("zstd", ZSTD, 19)])
def test_a_batch_written_again_is_compressed_at_the_topics_compression_level(topic, codec, level):
    """LogValidator compresses at the topic's compression.<codec>.level (LogConfig.compression):
    before, every batch written again took the codec's default level."""
    records = [(b"k%d" % i, (b"%d lorem ipsum dolor %d sit amet " % (i, i * 7)) * 40, [], NOW) for i in range(40)]
    validated, batch = stored(build_batch(records), topic, levels=((GZIP, 1), (LZ4, 12), (ZSTD, 19)))
    is_written_at = written_at(codec, validated.data)
    assert batch.is_valid and is_written_at(level) and not is_written_at(None)
    default, _ = stored(build_batch(records), topic)
    assert written_at(codec, default.data)(None)


def test_log_append_time_gives_the_new_batch_the_append_time_and_the_records_keep_the_producers():
    validated, batch = stored(build_batch(RECORDS), "gzip", log_append_time=True)
    assert (batch.timestamp_type, batch.max_timestamp, validated.log_append_time) == (LOG_APPEND_TIME, NOW + 7, NOW + 7)
    assert batch.base_timestamp == NOW - 100                 # MemoryRecordsBuilder: the first record's timestamp


def test_a_batch_too_large_once_written_again_is_message_too_large_with_kafkas_text():
    data = build_batch([(b"k", bytes(range(256)) * 4)], compression_type=GZIP)
    with pytest.raises(ProduceRefused) as info:
        stored(data, "uncompressed", max_message_bytes=len(data) + 10)
    size = len(build_batch([(b"k", bytes(range(256)) * 4, [], NOW - 100)]))
    assert (info.value.code, str(info.value)) == (
        Errors.MESSAGE_TOO_LARGE, f"Message batch size is {size} bytes in append topartition t-0 which exceeds the "
                                  f"maximum configured size of {len(data) + 10}.")


def test_a_negative_timestamp_cannot_be_written_again_as_in_memoryrecordsbuilder():
    data = bytearray(build_batch([(b"k", b"v", [], 0)]))
    struct.pack_into(">q", data, 27, -5)                     # the record's timestamp: -5 (not -1)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    with pytest.raises(ProduceRefused) as info:
        stored(bytes(data), "gzip")
    assert (info.value.code, str(info.value)) == (Errors.UNKNOWN_SERVER_ERROR, "Invalid negative timestamp -5")


def test_the_topics_compression_type_reaches_the_stored_batch_through_the_wire(kafkawire_broker):
    node, topic = kafkawire_broker, "recompressed-gzip"
    records = [(k, v, h, int(time.time() * 1000)) for k, v, h, _ in RECORDS]      # within the broker's bounds
    created = call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreatableTopicConfig(name="compression.type", value="gzip"),
                 CreatableTopicConfig(name="compression.gzip.level", value="1")])]))
    assert created.topics[0].error_code == Errors.NONE
    deadline = time.monotonic() + 30
    while call(node, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name=topic, partition_data=[PartitionProduceData(index=0, records=build_batch(records))])]),
            api_version=9).responses[0].partition_responses[0].error_code != Errors.NONE:
        assert time.monotonic() < deadline, "timed out waiting for the new topic's leader"
        time.sleep(0.05)
    segment = os.path.join(node.log_dir, f"{topic}-0", "00000000000000000000.log")
    with open(segment, "rb") as f:
        batch = next(iter(iter_batches(f.read())))
    assert (batch.compression_type, [r[:2] for r in contents(batch)]) == (GZIP, [r[:2] for r in records])
    with open(segment, "rb") as f:
        assert written_at(GZIP, f.read(batch.size_in_bytes))(1)          # the topic's compression.gzip.level


def test_a_batch_in_each_codec_is_stored_as_the_producer_sent_it_through_the_wire(kafkawire_broker):
    """Issue 29's "every codec": one Produce of five batches, one per codec Kafka has, to a
    topic of Kafka's default `compression.type=producer`; each is stored in its own codec, with
    its records, at dense offsets (the broker's C or pure checks decompressed each one)."""
    node, topic = kafkawire_broker, "every-codec"
    now = int(time.time() * 1000)
    codecs = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
    batches = [build_batch([(b"k%d" % c, b"codec-%d" % c * 30, [], now)] * 3, compression_type=c) for c in codecs]
    created = call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])]))
    assert created.topics[0].error_code == Errors.NONE
    deadline = time.monotonic() + 30
    for data in batches:
        while (answer := call(node, ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=0, records=data)])]),
                api_version=9).responses[0].partition_responses[0]).error_code != Errors.NONE:
            assert time.monotonic() < deadline, f"timed out waiting for the new topic's leader: {answer}"
            time.sleep(0.05)
    with open(os.path.join(node.log_dir, f"{topic}-0", "00000000000000000000.log"), "rb") as f:
        stored = list(iter_batches(f.read()))
    assert [(b.compression_type, b.base_offset, b.is_valid) for b in stored] == \
        [(c, 3 * i, True) for i, c in enumerate(codecs)]
    assert [[r[:2] for r in contents(b)] for b in stored] == \
        [[(b"k%d" % c, b"codec-%d" % c * 30)] * 3 for c in codecs]


def test_a_recompression_decodes_the_records_once_and_does_not_check_the_new_batchs_crc(monkeypatch):
    """The pure path's checks decode the records: the new batch is built from those; the new
    batch's CRC is the builder's, so only the producer's batch has its CRC computed."""
    from kafkawire.broker import validation
    from kafkawire.records.batch import RecordBatch
    monkeypatch.setattr(validation._native, "records", None)
    decoded, crcs = [], []
    real_iter, real_crc = RecordBatch.__iter__, RecordBatch.compute_crc
    monkeypatch.setattr(RecordBatch, "__iter__", lambda self: decoded.append(1) or real_iter(self))
    monkeypatch.setattr(RecordBatch, "compute_crc", lambda self: crcs.append(1) or real_crc(self))
    validated = validate_produce(build_batch(RECORDS, compression_type=GZIP), topic_partition="t-0",
                                 max_message_bytes=1048588, now_ms=NOW + 7, log_append_time=False,
                                 compression_type="uncompressed")
    assert (len(decoded), len(crcs)) == (1, 1)
    monkeypatch.undo()
    assert contents(next(iter(iter_batches(validated.data)))) == [(k, v, h, t) for k, v, h, t in RECORDS]
