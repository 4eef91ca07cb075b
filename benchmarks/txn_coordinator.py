"""The transaction coordinator's own cost, in process (kafkawire.broker.txn_coordinator with its
records encoded as for __transaction_state, the markers answered at once): whole transactions
(AddPartitionsToTxn of 4 partitions, EndTxn commit, the markers, CompleteCommit) per second, and
the load of __transaction_state (each record decoded as Kafka's TransactionLogKey/Value), in
one run, against building the same records alone.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/txn_coordinator.py [--ids 200] [--rounds 5]

Prints the medians of the rounds: transactions/s, records written per transaction, load
records/s, and the ratio of a transaction's cost to encoding its records alone.
"""
from __future__ import annotations

import argparse
import statistics
import time

from kafkawire.broker.txn_coordinator import TransactionCoordinator, TxnSettings
from kafkawire.broker.txn_records import decode_txn_record, txn_key, txn_value
from kafkawire.protocol.error_codes import Errors

PARTITIONS = {("orders", p) for p in range(4)}


class Markers:
    def __init__(self):
        self.coordinator = None

    def send(self, metadata, epoch, committed, complete):
        metadata.partitions.clear()                 # every marker written at once
        self.coordinator.complete(metadata, epoch, complete)


def build(ids: int):
    written = []
    markers = Markers()
    clock = iter(range(10**12))
    pids = iter(range(10**9))
    c = TransactionCoordinator(TxnSettings(), owner=lambda txn_id: (Errors.NONE, 0),
                               persist=lambda txn_id, records: written.extend(records) or Errors.NONE,
                               generate_producer_id=lambda: next(pids), markers=markers,
                               now_ms=lambda: next(clock), tv_level=lambda: 2)
    markers.coordinator = c
    for i in range(ids):
        c.init_producer_id(f"tx-{i}", 60_000, None)
    return c, written


def transactions(c, ids: int, per_id: int) -> float:
    start = time.perf_counter()
    for _ in range(per_id):
        for i in range(ids):
            m = c.txns[f"tx-{i}"]
            c.add_partitions(m.transactional_id, m.producer_id, m.producer_epoch, PARTITIONS, 2)
            c.end_transaction(m.transactional_id, m.producer_id, m.producer_epoch, True, tv=2)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ids", type=int, default=200)
    parser.add_argument("--per-id", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    txn_rates, load_rates, ratios, per_txn = [], [], [], 0
    for _ in range(args.rounds):
        c, written = build(args.ids)
        before = len(written)
        elapsed = transactions(c, args.ids, args.per_id)
        count = args.ids * args.per_id
        records = written[before:]
        per_txn = len(records) / count
        txn_rates.append(count / elapsed)
        start = time.perf_counter()
        for key, value in records:
            decode_txn_record(key, value)
        load_rates.append(len(records) / (time.perf_counter() - start))
        # the same records' encoding alone: what the state machine adds on top of it
        transits = [c.txns["tx-0"]._current()] * len(records)
        start = time.perf_counter()
        for t in transits:
            txn_key("tx-0"), txn_value(t, 2)
        encode = time.perf_counter() - start
        ratios.append(elapsed / encode)
    print(f"transactions/s (add 4 partitions, commit, markers, complete): {statistics.median(txn_rates):,.0f}")
    print(f"__transaction_state records per transaction: {per_txn:.0f}")
    print(f"load: records decoded/s: {statistics.median(load_rates):,.0f}")
    print(f"a transaction's cost / encoding its records alone: {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
