"""Start-up of a one-node combined kafkawire (process.roles=broker,controller) to its first
accepted produce: `kafkawire storage format --standalone`, then `kafkawire server-start` as a
new process, then kafka-python's first produce (acks=1, the topic auto-created).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/broker_startup.py [--runs 7] [--bytecode on|off|both]

Prints the median (and min-max) over the runs of: the format command; and from the server
process's start: its broker listener accepting connections, the broker unfenced (it lists itself
in Metadata), and the first produce acknowledged. ``--bytecode off`` runs the processes with
PYTHONDONTWRITEBYTECODE=1 and no __pycache__ to read (every process compiles every module it
imports, the generated codecs too); ``on`` lets Python cache bytecode (one warm-up run writes
it), as an installed kafkawire has it (pip compiles at install).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaProducer

from kafkawire.testing import EmbeddedBroker
from kafkawire.tools.main_broker import is_listening

REPO = Path(__file__).resolve().parents[1]
POLL_S = 0.005


def _wait(condition, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the node did not get there in time")
        time.sleep(POLL_S)


def one_run() -> dict[str, float]:
    broker = EmbeddedBroker()
    try:
        start = time.perf_counter()
        broker.format()
        times = {"format": time.perf_counter() - start}
        start = time.perf_counter()
        broker.launch()
        _wait(lambda: is_listening(broker.broker_port))
        times["listening"] = time.perf_counter() - start
        _wait(broker.is_ready)
        times["unfenced"] = time.perf_counter() - start
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks=1, enable_idempotence=False,
                                 retry_backoff_ms=5, reconnect_backoff_ms=5)
        producer.send("startup", b"first").get(timeout=30)
        times["first produce"] = time.perf_counter() - start
        producer.close(timeout=5)
        return times
    finally:
        broker.stop()


def _clear_bytecode() -> None:
    for cache in (REPO / "kafkawire").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


def measure(runs: int, bytecode: bool) -> None:
    if bytecode:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        one_run()                              # writes the __pycache__ directories
    else:
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        _clear_bytecode()
    results = [one_run() for _ in range(runs)]
    print(f"bytecode caching {'on' if bytecode else 'off (PYTHONDONTWRITEBYTECODE=1)'}, {runs} runs, "
          f"load average {os.getloadavg()[0]:.1f}:")
    for phase in results[0]:
        values = [r[phase] for r in results]
        print(f"  {phase:14} median {statistics.median(values):6.3f} s  ({min(values):.3f}-{max(values):.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--bytecode", choices=["on", "off", "both"], default="both")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; kafkawire from {REPO}")
    for bytecode in ((False, True) if args.bytecode == "both" else (args.bytecode == "on",)):
        measure(args.runs, bytecode)


if __name__ == "__main__":
    main()
