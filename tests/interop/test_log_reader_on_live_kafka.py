"""The read-only log reader (issue 25) on the log directory of a live Apache Kafka 4.3.1 node
(one JVM, process.roles=broker,controller) while kafka-python produces to it.

Not one byte of the node's files changes because of the reader: the closed segments (and their
indexes) keep their sha256 and mtime, the active segment's bytes before the reading are a prefix
of its bytes after, and every file the reader opens is opened "rb". Everything up to the high
watermark of replication-offset-checkpoint at the time of reading is read, in order, and
reading to the end gives the same records and then more, stopping cleanly at whatever the
broker is in the middle of writing. The node's own __cluster_metadata log reads as an image
holding the topic.
"""
from __future__ import annotations

import builtins
import hashlib
import os
import threading
import time
from pathlib import Path

import kafkawire
from kafkawire.storage.state_files import read_offset_checkpoint

CLUSTER_ID = "UmVhZE9ubHlSZWFkZXJUZQ"
TOPIC = "live"
PAD = b"x" * 1000


def _produce_until(bootstrap: str, stop: threading.Event, sent: list, errors: list) -> None:
    """Values b"%08d" % n + padding, n = 0, 1, ... in order (acks=all, one request in flight)."""
    from kafka import KafkaProducer
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=20000,
                                 max_block_ms=30000, max_in_flight_requests_per_connection=1)
    except Exception as exc:            # reported by the test, which is waiting for records
        errors.append(exc)
        return
    try:
        n = 0
        while not stop.is_set():
            futures = [producer.send(TOPIC, value=b"%08d" % (n + i) + PAD) for i in range(200)]
            producer.flush(timeout=30)
            for future in futures:
                future.get(timeout=30)
            n += len(futures)
            sent.append(n)
    except Exception as exc:
        errors.append(exc)
    finally:
        producer.close(timeout=10)


def _wait_for(what: str, condition, timeout_s: float, errors: list):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert not errors, f"the producer failed: {errors[0]!r}"
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _segments(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log"))


def _high_watermark(log_dir: Path) -> int:
    try:
        return read_offset_checkpoint(log_dir / "replication-offset-checkpoint").get((TOPIC, 0), 0)
    except (OSError, ValueError):
        return 0


def _closed_segment_files(partition: Path) -> dict[str, tuple[str, int]]:
    """sha256 and mtime of the .log, .index and .timeindex of every segment but the active one."""
    out = {}
    for log in _segments(partition)[:-1]:
        for path in (log, log.with_suffix(".index"), log.with_suffix(".timeindex")):
            if path.exists():
                out[path.name] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return out


def test_the_reader_changes_nothing_of_a_live_broker_and_reads_up_to_its_high_watermark(kafka_node_factory,
                                                                                          monkeypatch):
    node = kafka_node_factory(1, "broker,controller", properties={
        "log.segment.bytes": str(1 << 20),                         # Kafka's smallest: several segments soon
        "replica.high.watermark.checkpoint.interval.ms": "200",
        "num.partitions": "1", "offsets.topic.num.partitions": "1"})
    node.format(CLUSTER_ID, "--standalone")
    node.start()
    node.wait_ready()
    stop, sent, errors = threading.Event(), [], []
    producer = threading.Thread(target=_produce_until, args=(node.broker_address, stop, sent, errors), daemon=True)
    producer.start()
    partition = node.data_dir / f"{TOPIC}-0"
    try:
        _wait_for("three segments and a checkpointed high watermark",
                  lambda: partition.is_dir() and len(_segments(partition)) >= 3 and _high_watermark(node.data_dir) > 0,
                  180, errors)
        closed_before = _closed_segment_files(partition)
        active = _segments(partition)[-1]
        active_before = active.read_bytes()
        modes = []
        real_open = builtins.open

        def recording_open(file, mode="r", *args, **kwargs):
            if str(node.data_dir) in os.fspath(file):
                modes.append(mode)
            return real_open(file, mode, *args, **kwargs)
        monkeypatch.setattr(builtins, "open", recording_open)
        committed = kafkawire.read_log_directory(node.data_dir, upto="high_watermark").partition(TOPIC, 0)
        hw = committed.high_watermark
        upto_hw = [(r.offset, bytes(r.value)) for r in committed.records()]
        to_end_reader = kafkawire.read_log_directory(node.data_dir).partition(TOPIC, 0)
        to_end = [(r.offset, bytes(r.value)) for r in to_end_reader.records()]
        replay = kafkawire.read_metadata_image(node.metadata_dir)
        monkeypatch.undo()
        _wait_for("more records after the reading", lambda: len(sent) >= 2 and sent[-1] > len(to_end) + 200, 60, errors)
    finally:
        stop.set()
        producer.join(timeout=60)
    assert not errors, f"the producer failed: {errors[0]!r}"
    assert modes and set(modes) == {"rb"}, modes
    print(f"high watermark {hw}, {len(to_end)} records to the end, tail {to_end_reader.tail}, "
          f"{len(closed_before)} closed segment files")
    assert hw > 0 and [offset for offset, _ in upto_hw] == list(range(hw))
    assert [int(value[:8]) for _, value in upto_hw] == list(range(hw))     # in order, none lost or doubled
    assert to_end[:hw] == upto_hw and [offset for offset, _ in to_end] == list(range(len(to_end)))
    assert TOPIC in replay.image.topics_by_name, replay.problems
    after = _closed_segment_files(partition)         # the broker may have rolled more segments meanwhile
    assert len(closed_before) >= 6 and {name: after.get(name) for name in closed_before} == closed_before
    assert active.read_bytes()[:len(active_before)] == active_before
