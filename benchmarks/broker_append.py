"""The leader's produce path in one process, without sockets: validate_produce (the C record
check) and LeaderPartition.append (producer state, Log.append, the segment write), for batches
of 100 records of 100 bytes, uncompressed, the batch passed as a memoryview as the Produce
decoder hands it over. Prints the median CPU seconds (time.process_time) per million records
over the rounds: of the whole path, and of the append alone (after the checks).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/broker_append.py [--batches 5000] [--rounds 7]

To compare two trees, run it from each in turn (interleaved) and compare the medians.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid

from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.validation import validate_produce
from kafkawire.records.builder import build_batch

RECORDS_PER_BATCH = 100


def one_round(batches: int, data: memoryview) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as log_dir:
        partition = LeaderPartition.open(log_dir, "bench", 0, uuid.UUID(int=1), leader_epoch=3,
                                         segment_bytes=1 << 30)
        now_ms = int(time.time() * 1000)
        clock = time.process_time
        spent = appending = 0.0
        for _ in range(batches):
            start = clock()
            validated = validate_produce(data, topic_partition="bench-0", max_message_bytes=1 << 20,
                                         log_append_time=False, now_ms=now_ms)
            checked = clock()
            partition.append(validated, now_ms=now_ms)
            end = clock()
            spent += end - start
            appending += end - checked
        partition.log.close()
    per_million = 1e6 / (batches * RECORDS_PER_BATCH)
    return spent * per_million, appending * per_million


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    now_ms = int(time.time() * 1000)
    value = b"0123456789abcdef" * 6 + b"0123"
    data = memoryview(build_batch([(None, value, (), now_ms)] * RECORDS_PER_BATCH))
    results = [one_round(args.batches, data) for _ in range(args.rounds)]
    whole = statistics.median(r[0] for r in results)
    append = statistics.median(r[1] for r in results)
    print(f"produce path: {whole:.3f} CPU s per million records, of which the append {append:.3f} "
          f"(medians of {args.rounds} rounds of {args.batches} batches of {RECORDS_PER_BATCH} records)")


if __name__ == "__main__":
    main()
