"""`kafkawire test-raft-server`: a raft node with a synthetic workload, after Kafka's
kafka.tools.TestRaftServer (--config, --throughput, --record-size), and --latency-window: how
many of the latest appends the commit-latency percentiles cover.

    kafkawire test-raft-server --config controller.properties --throughput 2000 --record-size 256

The leader appends ``--throughput`` records per second of ``--record-size`` bytes; every node
publishes its raft metrics (commit latency included) to kafkawire-raft-metrics.json in its
metadata.log.dir. There is no metadata controller: the log holds raw records.
"""
from __future__ import annotations

import argparse
import logging
import sys
from .server_start import add_max_api_versions, load_config, serve, setup_logging

COMMAND = "test-raft-server"
HELP = "run a raft node that appends a synthetic workload while it leads (Kafka's TestRaftServer)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="the server.properties file")
    parser.add_argument("--throughput", type=int, default=5000, help="records per second (default 5000)")
    parser.add_argument("--record-size", type=int, default=256, help="bytes per record (default 256)")
    parser.add_argument("--latency-window", type=int, default=None, metavar="APPENDS",
                        help="how many of the latest appends the commit-latency-p50/p99 metrics cover "
                             "(default: the driver's, 16384)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARN", "ERROR"])
    add_max_api_versions(parser)


def run(args: argparse.Namespace) -> int:
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.net.config import ConfigError
    from kafkawire.net.loop import run as run_loop
    from kafkawire.raft.node.load_generator import LoadGenerator

    if args.throughput <= 0 or args.record_size <= 0:
        print("test-raft-server: --throughput and --record-size must be positive", file=sys.stderr)
        return 1
    if args.latency_window is not None and args.latency_window <= 0:
        print(f"test-raft-server: --latency-window must be positive, not {args.latency_window}", file=sys.stderr)
        return 1
    setup_logging(args.log_level)      # after the arguments' checks: a refusal configures nothing
    try:
        config = load_config(args.config, args.override)
    except ConfigError as exc:
        print(f"test-raft-server: {args.config}: {exc}", file=sys.stderr)
        return 1

    factory = workload_factory(args, LoadGenerator)
    logging.getLogger(__name__).info("workload: %d records/s of %d bytes while leading",
                                               args.throughput, args.record_size)
    return run_loop(serve(config, factory, max_versions=args.max_api_versions))


def workload_factory(args: argparse.Namespace, workload):
    """The state machine factory ``serve`` calls with the node's driver: the workload, and the
    driver's commit-latency window sized by --latency-window."""

    def factory(driver, server_config, meta):
        if args.latency_window is not None:      # percentiles over a whole benchmark window, not its last 0.16 s
            driver.metrics.commit_latency.size = args.latency_window
        return workload(driver, throughput=args.throughput, record_size=args.record_size)

    return factory
