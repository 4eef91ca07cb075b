"""``kafkawire pcap --check``: MB of capture per second, the fast way against the first way (issue 26).

Makes a realistic capture (benchmarks/pcap_capture.py: producers, consumers and an admin client on
one broker, Produce and Fetch with record batches, Metadata, 1448-byte segments and their ACKs)
unless ``--capture`` names one, then times, in interleaved rounds, median of ``--runs``, in this
process, what the command does but the printing: ``read_capture(path, check=True, fast=...)``
(reading, reassembly, framing, pairing, decoding every frame, re-encoding and comparing it,
checking every record batch) and every summary line and the check's last line. The fast way
(the default) and the first way (``fast=False``, what ``KAFKAWIRE_PURE=1`` runs) must give the
same lines; a difference fails the benchmark. Times are of the process's CPU (on a machine
shared with other work, wall time swings with the load) and wall time is printed too; a first,
untimed round of each warms the codecs up. ``--cli`` also times the whole command each way, in
``--runs`` interleaved rounds, each a new process with its output to /dev/null (the interpreter's
start, the imports and the codecs' first use included; kafkawire's modules byte-compiled first,
as ``pip install`` leaves them): median wall time and median CPU time of the process (user +
system, from the kernel's accounting of the child).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/pcap_check.py [--mb 50] [--runs 5] [--pcapng] [--capture PATH] [--cli]
"""
from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pcap_capture  # noqa: E402  (benchmarks/ is not a package)
from dump_log import installed_python_env  # noqa: E402

from kafkawire import _native  # noqa: E402
from kafkawire.capture import read_capture  # noqa: E402
from kafkawire.capture.read import collector_paused  # noqa: E402
from kafkawire.tools.pcap import check_summary, summary_line  # noqa: E402


def report(path: Path, fast: bool) -> list[str]:
    with collector_paused():             # as `kafkawire pcap` runs
        capture = read_capture(path, check=True, fast=fast)
        lines = [summary_line(f, fast) for f in capture.frames]
        lines.append(check_summary(capture.frames)[0])
        return lines + capture.problems


def timed(path: Path, fast: bool) -> tuple[float, float, list[str]]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    lines = report(path, fast)
    return time.process_time() - cpu, time.perf_counter() - wall, lines


def cli_seconds(path: Path, pure: bool, env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole `kafkawire pcap --check` process."""
    env = {**env, "KAFKAWIRE_PURE": "1" if pure else "0"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(os.devnull, "w") as sink:
        result = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "pcap", "--check", str(path)],
                                stdout=sink, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"`kafkawire pcap --check` exited {result.returncode}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def time_cli(path: Path, size: float, runs: int, directory: str) -> None:
    env = installed_python_env(directory)
    samples: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for _ in range(runs):
        for pure in (False, True):
            samples[pure].append(cli_seconds(path, pure, env))
    for pure, name in ((False, "fast way"), (True, "first way")):
        wall = statistics.median(s[0] for s in samples[pure])
        cpu = statistics.median(s[1] for s in samples[pure])
        print(f"`kafkawire pcap --check`, {name}, whole process, median of {runs}: {wall:.2f} s wall "
              f"({size / wall:.1f} MB/s), {cpu:.2f} s CPU ({size / cpu:.1f} MB/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pcapng", action="store_true")
    parser.add_argument("--capture", type=Path, help="an existing capture instead of a generated one")
    parser.add_argument("--cli", action="store_true", help="also time the whole command in a new process")
    args = parser.parse_args()
    print(f"native: {_native.status()}; load before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.capture
        if path is None:
            path = Path(tmp) / ("bench.pcapng" if args.pcapng else "bench.pcap")
            packets = pcap_capture.write(path, args.mb, args.pcapng)
            print(f"capture: {path.name}, {path.stat().st_size / 1e6:.1f} MB, {packets} packets")
        size = path.stat().st_size / 1e6
        _, _, fast_lines = timed(path, True)
        _, _, first_lines = timed(path, False)
        if fast_lines != first_lines:
            sys.exit("the fast way and the first way differ: the benchmark is void")
        print(f"{len(fast_lines)} lines, the same both ways; the check: {next(x for x in fast_lines if ' frames, ' in x)!r}")
        samples: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(args.runs):
            for fast in (True, False):
                cpu, wall, _ = timed(path, fast)
                samples[fast].append((cpu, wall))
        rates = {}
        for fast, name in ((True, "fast way"), (False, "first way")):
            cpu = statistics.median(s[0] for s in samples[fast])
            wall = statistics.median(s[1] for s in samples[fast])
            rates[fast] = size / cpu
            print(f"{name:>9}: {size / cpu:8.1f} MB/s of CPU time ({cpu:.3f} s), {size / wall:8.1f} MB/s of wall time "
                  f"({wall:.3f} s), median of {args.runs}")
        print(f"ratio (fast / first, CPU time): {rates[True] / rates[False]:.1f}x")
        if args.cli:
            time_cli(path, size, args.runs, tmp)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
