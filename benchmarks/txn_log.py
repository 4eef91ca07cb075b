"""The partition side of transactions (kafkawire.broker.partition, txn_log), in one run:

* append: a transactional batch + its COMMIT marker per transaction, against the same number of
  idempotent batches alone (what a transaction adds to the log's work per batch);
* read: a read_committed read (below the LSO, the aborted transactions collected from the
  ``.txnindex`` files) against a read_uncommitted one of the same range, on a log where every
  other transaction was aborted (so the index has an entry every 2 transactions).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/txn_log.py

Prints medians (per batch for the appends, per read of 1 MB for the reads) and the ratios.
"""
from __future__ import annotations

import statistics
import tempfile
import time
import uuid

from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.validation import validate_produce
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch

BATCHES = 2000
ROUNDS = 7
NOW = int(time.time() * 1000)
RECORDS = [(b"key", b"v" * 100, [], NOW)] * 10


def open_partition(directory: str) -> LeaderPartition:
    return LeaderPartition.open(directory, "bench", 0, uuid.UUID(int=1), leader_epoch=0, segment_bytes=1 << 20,
                                now_ms=NOW)


def fill(partition: LeaderPartition, *, transactional: bool, abort_every: int = 2) -> None:
    for i in range(BATCHES):
        data = build_batch(RECORDS, producer_id=7, producer_epoch=0, base_sequence=i * len(RECORDS),
                           is_transactional=transactional)
        validated = validate_produce(data, topic_partition="bench-0", max_message_bytes=1 << 20,
                                     log_append_time=False, now_ms=NOW)
        partition.append(validated, now_ms=NOW)
        if transactional:
            partition.append_marker(producer_id=7, producer_epoch=0, coordinator_epoch=0,
                                    commit=i % abort_every != 0, now_ms=NOW)


def append_seconds(transactional: bool) -> float:
    times = []
    for _ in range(ROUNDS):
        with tempfile.TemporaryDirectory() as directory:
            partition = open_partition(directory)
            start = time.perf_counter()
            fill(partition, transactional=transactional)
            times.append((time.perf_counter() - start) / BATCHES)
            partition.log.close()
    return statistics.median(times)


def read_seconds(partition: LeaderPartition, committed: bool) -> float:
    times = []
    end = partition.last_stable_offset()
    for _ in range(ROUNDS):
        start = time.perf_counter()
        offset = partition.log.log_start_offset
        while offset < end:
            if committed:
                data, _ = partition.read_committed(offset, 1 << 20, min_one_batch=True)
            else:
                data = partition.read(offset, 1 << 20, min_one_batch=True)
            offset = _next_offset(data)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _next_offset(data: bytes) -> int:
    last = None
    for batch in iter_batches(data):
        last = batch
    return last.last_offset + 1


def main() -> None:
    plain, txn = append_seconds(False), append_seconds(True)
    print(f"append, per batch: idempotent {plain * 1e6:.1f} us, transactional + marker {txn * 1e6:.1f} us, "
          f"ratio {txn / plain:.2f}")
    with tempfile.TemporaryDirectory() as directory:
        partition = open_partition(directory)
        fill(partition, transactional=True)
        entries = sum(len(s.txn_index.entries()) for s in partition.log.segments)
        uncommitted, committed = read_seconds(partition, False), read_seconds(partition, True)
        print(f"read the whole log ({len(partition.log.segments)} segments, {entries} aborted transactions "
              f"indexed): read_uncommitted {uncommitted * 1e3:.1f} ms, read_committed {committed * 1e3:.1f} ms, "
              f"ratio {committed / uncommitted:.2f}")
        partition.log.close()


if __name__ == "__main__":
    main()
