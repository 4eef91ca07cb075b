"""The heartbeat storm at scale on a real three-voter quorum (issue 28, goal 1: 500 brokers
heartbeating every 500 ms at 1M partitions, every heartbeat answered within 20 ms at p99, the
active controller under 25% of a core, CreateTopics p50 unchanged from the idle figure).

    .venv/bin/python benchmarks/heartbeat_storm.py [--sizes 100x100000,500x1000000] [--seconds 20] [--property K=V]
        [--profile DIR] [--scrape-every SECONDS]

Each size (BROKERSxPARTITIONS) gets a fresh quorum of `kafkawire server-start` processes (fsync
on, loopback); the workload and how each figure is obtained are tests/nemesis/paced_storm.py's
(its docstring): the fake brokers are registered and the cluster built with CreateTopics, then
an idle window and a storm window of --seconds each. Printed per size: heartbeats sent and
answered (NONE) and answered/s, heartbeat latency p50/p99/max as this client sees it (its own
event loop included: its CPU share is printed too, and its own loop's stalls over 50 ms, to be
told from the controller's), the active controller's CPU share in each
window from /proc/<pid>/stat, CreateTopics p50/p99 idle and under the storm and their ratio, the
load average (the machine is shared), and the server's side of a heartbeat: the active
controller's own kafka.network RequestMetrics of BrokerHeartbeat (TotalTimeMs p50/p99/0.999,
RequestQueueTimeMs and LocalTimeMs p99), scraped from its Prometheus endpoint just before and
after the storm window; as Kafka's, its quantiles are of the last 1028 heartbeats answered (the
storm's last second at 500 brokers), and its count moved by those answered in the window.
``--scrape-every S`` scrapes it every S seconds during the storm too (each scrape walks the
image's partitions on the leader's loop: 12 ms at 100k) and prints each scrape's p99.

``--profile DIR``: every node runs under cProfile (benchmarks/quorum.py's profiled interpreter:
the main thread, its event loop, with the thread's CPU time as the clock), enabled in the
active controller for the storm window only; its profile goes to DIR/storm-BxP.prof (read it
with ``python -m pstats``). The profiler slows the loop: its latencies are not figures.

Kafka 4.3.1's controller is not measured here: no benchmark of this project drives a Kafka
controller quorum yet (tests/interop has single Kafka nodes for interop tests only).

In the in-process benchmark (benchmarks/controller_scale.py) the controller's own CPU per
heartbeat is measured against the partition count; this one adds the network, raft, fsync and
the followers.
"""
from __future__ import annotations

import argparse
import glob
import os
import signal
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.quorum import profiled_python  # noqa: E402
from tests.nemesis.paced_storm import problems, run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100x100000", help="BROKERSxPARTITIONS, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the idle and the storm windows")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for every node (repeatable), e.g. controller.quorum.fetch.timeout.ms=20000")
    parser.add_argument("--profile", metavar="DIR", help="cProfile the active controller's loop during the storm "
                        "into DIR/storm-BxP.prof")
    parser.add_argument("--scrape-every", type=float, metavar="SECONDS",
                        help="scrape the active controller's request metrics this often during the storm too")
    args = parser.parse_args()
    properties = dict(p.split("=", 1) for p in args.property)
    profiling = {}
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
        profiling = {"python": profiled_python(args.profile), "storm_signals": (signal.SIGUSR1, signal.SIGUSR2)}
    for size in args.sizes.split(","):
        brokers, partitions = (int(n) for n in size.lower().split("x"))
        with tempfile.TemporaryDirectory(prefix="kafkawire-heartbeat-storm-") as base:
            report = run(base, brokers, partitions, args.seconds, properties, scrape_every_s=args.scrape_every,
                         **profiling)
        print(report.lines())
        for made in glob.glob(os.path.join(args.profile or "", "node-*.prof")) if args.profile else ():
            os.replace(made, os.path.join(args.profile, f"storm-{brokers}x{partitions}.prof"))
            print(f"  profile of the active controller's loop in the storm: {args.profile}/storm-{brokers}x{partitions}.prof")
        ratio = statistics.median(report.storm_creates_ms) / statistics.median(report.idle_creates_ms)
        print(f"  CreateTopics p50 storm/idle: {ratio:.2f}")
        for problem in problems(report):
            print(f"  PROBLEM: {problem}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
