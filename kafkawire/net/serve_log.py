"""Serve a __cluster_metadata log directory to Kafka clients, read-only, until interrupted.

    python -m kafkawire.net.serve_log --log-dir DATA/__cluster_metadata-0 --port 9092

Node id and cluster id come from the meta.properties beside the log directory when there is
one (``--node-id`` / ``--cluster-id`` override them). The high watermark is the log end offset
unless ``--high-watermark`` says otherwise. Opening the log runs kafkawire's log recovery,
which may rebuild index files and cut a torn tail: serve a copy of data you must not touch.
Prints ``serving <dir> on <host>:<port>`` once it accepts connections; SIGINT or SIGTERM shut
it down cleanly.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys

from kafkawire.storage.log import Log
from kafkawire.storage.state_files import StateFileError, read_meta_properties

from .loop import run
from .metadata_topic import MetadataTopic, NodeEndpoint
from .server import KafkaServer

DEFAULT_CLUSTER_ID = "kafkawire-serve-log"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kafkawire.net.serve_log", description=__doc__.split("\n\n")[0])
    p.add_argument("--log-dir", required=True, help="the __cluster_metadata-0 directory")
    p.add_argument("--port", type=int, required=True, help="port to listen on (0: any free port)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on and advertise (default 127.0.0.1)")
    p.add_argument("--node-id", type=int, help="this node's id (default: meta.properties, else 1)")
    p.add_argument("--cluster-id", help="cluster id (default: meta.properties, else %(default)s)")
    p.add_argument("--high-watermark", type=int, help="visible end for consumers (default: the log end offset)")
    p.add_argument("--verbose", "-v", action="store_true", help="log at INFO")
    return p.parse_args(argv)


def _identity(log_dir: str, node_id, cluster_id) -> tuple[int, str]:
    meta_path = os.path.join(os.path.dirname(os.path.abspath(log_dir)), "meta.properties")
    if (node_id is None or cluster_id is None) and os.path.exists(meta_path):
        try:
            meta = read_meta_properties(meta_path)
            node_id = meta.node_id if node_id is None else node_id
            cluster_id = meta.cluster_id if cluster_id is None else cluster_id
        except (StateFileError, OSError) as exc:
            logging.getLogger(__name__).warning("ignoring %s: %s", meta_path, exc)
    return (1 if node_id is None else node_id), (cluster_id or DEFAULT_CLUSTER_ID)


async def serve(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.log_dir):
        print(f"serve_log: {args.log_dir} is not a directory", file=sys.stderr)
        return 2
    node_id, cluster_id = _identity(args.log_dir, args.node_id, args.cluster_id)
    with Log(args.log_dir) as log_:
        for report in log_.recovery_reports:
            if report.truncated:
                print(f"serve_log: recovery cut {report.truncated_bytes} bytes of {report.file}: {report.reason}",
                      file=sys.stderr)
        fixed_hw = args.high_watermark
        server = KafkaServer({}, host=args.host, port=args.port)
        await server.bind()
        topic = MetadataTopic(log_, cluster_id=cluster_id, node=NodeEndpoint(node_id, args.host, server.port),
                              high_watermark=(lambda: log_.log_end_offset) if fixed_hw is None else (lambda: fixed_hw))
        for key, handler in topic.handlers().items():
            server.register(key, handler)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await server.start()
        print(f"serving {args.log_dir} on {args.host}:{server.port} (node {node_id}, cluster {cluster_id}, "
              f"offsets {log_.log_start_offset}..{log_.log_end_offset})", flush=True)
        await stop.wait()
        await server.close()
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run(serve(args))


if __name__ == "__main__":
    sys.exit(main())
