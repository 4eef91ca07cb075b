"""The share-partition state machine (kafkawire.broker.share_partition), without I/O: the cost per
record of acquiring records a batch at a time and acknowledging them (ACCEPT), against that of a
plain Python loop over the same offsets (the floor any per-record state costs here).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/share_partition.py [--records 200000] [--batch 500]

Each round: ``--records`` records in batches of ``--batch``, each batch acquired by one member
and acknowledged in one ACCEPT range (as KafkaShareConsumer's commitSync sends it); prints the
median of 5 rounds in records per second, and the ratio to the plain loop.
"""
from __future__ import annotations

import argparse
import statistics
import time

from kafkawire.broker.share_partition import ACCEPT, SharePartition, ShareSettings

ROUNDS = 5


def share_round(records: int, batch: int) -> float:
    sp, settings = SharePartition(0), ShareSettings()
    started = time.perf_counter()
    for first in range(0, records, batch):
        last = min(first + batch, records) - 1
        for f, la, _ in sp.acquire("m", [(first, last, False)], max_records=batch, now_ms=0, settings=settings):
            sp.acknowledge("m", f, la, [ACCEPT], now_ms=0, settings=settings)
    assert sp.start_offset == records
    return time.perf_counter() - started


def plain_round(records: int) -> float:
    started = time.perf_counter()
    states = {}
    for offset in range(records):
        states[offset] = 1
    for offset in range(records):
        del states[offset]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    share = statistics.median(share_round(args.records, args.batch) for _ in range(ROUNDS))
    plain = statistics.median(plain_round(args.records) for _ in range(ROUNDS))
    print(f"acquire + ACCEPT: {args.records / share:,.0f} records/s (median of {ROUNDS}); "
          f"plain dict loop: {args.records / plain:,.0f} records/s; ratio {share / plain:.1f}x")


if __name__ == "__main__":
    main()
