"""The server's own CPU per request (issue 28: a heartbeat's cost was mostly the node's request
path, not the controller's): a KafkaServer in this process answers a one-topic Metadata v12 from
memory; a client in another process sends ``--requests`` of them one after another on one
connection (TCP_NODELAY), after 200 to warm up; the figure is this process's thread CPU time over
the run, per request (and the wall time per request, which on a loaded machine is mostly waiting).

    PYTHONPATH=. .venv/bin/python benchmarks/request_path.py [--requests 10000] [--runs 3] [--profile]

To compare with an older tree, run this file with that tree first on PYTHONPATH (it imports the
kafkawire it finds), alternating the two. ``--profile``: cProfile of the server's loop over one
run, by own time, with the thread's CPU time as its clock.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import subprocess
import sys
import tempfile
import time

from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.metadata_response import MetadataResponse, MetadataResponsePartition, MetadataResponseTopic
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.framing import encode_request

# The client: port, requests, warm-up requests, a file holding the request frame (a produce
# request's is too long for the command line; benchmarks/produce_request_path.py sends those).
CLIENT = r'''
import socket, struct, sys
port, n, warm = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
frame = open(sys.argv[4], "rb").read()
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def one():
    s.sendall(frame)
    head = b""
    while len(head) < 4:
        head += s.recv(4 - len(head))
    size, got = struct.unpack(">i", head)[0], 0
    while got < size:
        got += len(s.recv(size - got))
for _ in range(warm):
    one()
print("warm", flush=True)
sys.stdin.readline()
for _ in range(n):
    one()
print("done", flush=True)
'''


async def answer(ctx, request):
    return MetadataResponse(topics=[MetadataResponseTopic(name=t.name, partitions=[
        MetadataResponsePartition(partition_index=0)]) for t in request.topics])


async def one_run(requests: int, profile: bool) -> tuple[float, float]:
    """(server CPU us, wall us) per request."""
    frame = encode_request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12, 1)
    async with KafkaServer({3: answer}) as server:
        with tempfile.NamedTemporaryFile() as frame_file:
            frame_file.write(frame)
            frame_file.flush()
            client = await asyncio.create_subprocess_exec(
                sys.executable, "-c", CLIENT, str(server.port), str(requests), "200", frame_file.name,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            async with asyncio.timeout(120):        # warmed up: the frame is read
                assert (await client.stdout.readline()).strip() == b"warm"
        try:
            async with asyncio.timeout(120):
                profiler = cProfile.Profile(time.thread_time) if profile else None
                cpu, wall = time.thread_time(), time.monotonic()
                if profiler:
                    profiler.enable()
                client.stdin.write(b"go\n")
                await client.stdin.drain()
                assert (await client.stdout.readline()).strip() == b"done"
                if profiler:
                    profiler.disable()
                cpu, wall = time.thread_time() - cpu, time.monotonic() - wall
                await client.wait()
        finally:
            if client.returncode is None:
                client.kill()
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    return cpu / requests * 1e6, wall / requests * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    runs = [asyncio.run(one_run(args.requests, args.profile and i == 0)) for i in range(args.runs)]
    cpu = [r[0] for r in runs]
    wall = [r[1] for r in runs]
    print(f"server CPU {statistics.median(cpu):.1f} us a request (min {min(cpu):.1f}, max {max(cpu):.1f}), "
          f"wall {statistics.median(wall):.1f} us, {args.requests} requests x {args.runs} runs")


if __name__ == "__main__":
    main()
