"""A three-voter kafkawire quorum on 127.0.0.1, with fsync: commit latency and throughput of
appends, and the time to elect a new leader after kill -9, next to the floor one fsync plus
one loopback round trip sets, all measured in the same run.

    .venv/bin/python benchmarks/quorum.py [--rates 500,2000,5000] [--seconds 8] [--kills 5]

How each number is obtained:

* floor: the median of 200 "write 4 KiB + fsync" on the benchmark's directory, plus the
  median of 2000 request/response round trips (100 bytes) over a loopback TCP connection.
  A commit needs at least the leader's fsync, one follower fetch round trip and that
  follower's fsync (the two fsyncs overlap only partly), so the floor is a lower bound.
* commit latency: `kafkawire test-raft-server` (Kafka's TestRaftServer workload) on each
  node; the leader appends 256-byte records at the target rate and times each append from
  Propose to commit (the driver's commit-latency window, the last 16384 appends). Medians and
  p99 come from the leader's metrics file at the end of the measuring window.
* throughput: the high watermark's growth over the window (DescribeQuorum before and after).
* controller.quorum.append.linger.ms is Kafka's default 25 ms, and 0 in a second pass: the
  linger is a deliberate wait that batches appends.
* election after kill -9: SIGKILL the leader, poll DescribeQuorum on the others every 20 ms
  until one reports itself leader of a higher epoch; restart the killed node and let it catch
  up before the next round. Bounded by controller.quorum.fetch.timeout.ms (2000 by default:
  followers wait that long without a fetch answer before they start an election) plus the
  election itself.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from raft.node.local_quorum import LocalQuorum, QuorumError  # noqa: E402


def fsync_ms(directory: str, rounds: int = 200) -> float:
    path = os.path.join(directory, "fsync-probe")
    samples = []
    with open(path, "wb") as f:
        for _ in range(rounds):
            f.write(os.urandom(4096))
            f.flush()
            t = time.perf_counter()
            os.fsync(f.fileno())
            samples.append((time.perf_counter() - t) * 1000)
    os.remove(path)
    return statistics.median(samples)


def loopback_rtt_ms(rounds: int = 2000) -> float:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def echo():
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            data = conn.recv(100)
            if not data:
                break
            conn.sendall(data)
        conn.close()

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    client = socket.create_connection(server.getsockname())
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    samples = []
    message = b"x" * 100
    for _ in range(rounds):
        t = time.perf_counter()
        client.sendall(message)
        got = 0
        while got < len(message):
            got += len(client.recv(100))
        samples.append((time.perf_counter() - t) * 1000)
    client.close()
    server.close()
    thread.join(timeout=5)
    return statistics.median(samples)


def load_run(base: str, rate: int, seconds: float, linger_ms: int) -> dict:
    q = LocalQuorum(os.path.join(base, f"rate-{rate}-linger-{linger_ms}"), 3,
                    properties={"controller.quorum.append.linger.ms": str(linger_ms)},
                    server_args=lambda c: ["test-raft-server", "--config", c, "--throughput", str(rate),
                                           "--record-size", "256", "--log-level", "WARN"])
    with q:
        q.format()
        q.start_all()
        view = q.wait_for_leader(30)
        time.sleep(2)       # warm up: connections, first batches
        h0, t0 = q.describe(view.leader_id).high_watermark, time.monotonic()
        time.sleep(seconds)
        h1, t1 = q.describe(view.leader_id).high_watermark, time.monotonic()
        time.sleep(1.5)     # the metrics file is written every second
        with open(os.path.join(q.data_dir(view.leader_id), "kafkawire-raft-metrics.json")) as f:
            metrics = json.load(f)["metrics"]
        q.stop_all()
    return {"rate": rate, "linger": linger_ms, "committed_per_s": (h1 - h0) / (t1 - t0),
            "p50": metrics["commit-latency-p50"], "p99": metrics["commit-latency-p99"],
            "avg": metrics["commit-latency-avg"]}


def election_runs(base: str, kills: int) -> list[float]:
    q = LocalQuorum(os.path.join(base, "elections"), 3,
                    server_args=lambda c: ["test-raft-server", "--config", c, "--throughput", "200",
                                           "--log-level", "WARN"])
    times = []
    with q:
        q.format()
        q.start_all()
        view = q.wait_for_leader(30)
        for _ in range(kills):
            old = view.leader_id
            q.kill(old)
            t = time.monotonic()
            deadline = t + 30
            new = None
            while time.monotonic() < deadline and new is None:
                for i in q.running():
                    try:
                        v = q.describe(i, timeout_ms=500)
                    except Exception:
                        continue
                    if v.leader_id == i and v.leader_epoch > view.leader_epoch:
                        new = v
                        break
                else:
                    time.sleep(0.02)
            if new is None:
                raise QuorumError("no new leader within 30 s of the kill")
            times.append((time.monotonic() - t) * 1000)
            q.start(old)

            def caught_up(new=new, old=old):
                v = q.describe(new.leader_id)
                ends = {r.replica_id: r.log_end_offset for r in v.voters}
                return v if ends.get(old, -1) >= v.high_watermark - 200 and ends.get(old, -1) > 0 else None
            view = q.wait_until(caught_up, 30, f"node {old} to catch up")
            view = q.wait_for_leader(10)
        q.stop_all()
    return times


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", default="500,2000,5000")
    p.add_argument("--seconds", type=float, default=8)
    p.add_argument("--kills", type=int, default=5)
    args = p.parse_args()
    base = tempfile.mkdtemp(prefix="kafkawire-quorum-bench-")
    fs, rtt = fsync_ms(base), loopback_rtt_ms()
    floor = fs + rtt
    print(f"floor: fsync {fs:.3f} ms (median of 200), loopback round trip {rtt:.3f} ms (median of 2000): "
          f"{floor:.3f} ms")
    print(f"{'linger':>6} {'target/s':>9} {'committed/s':>12} {'p50 ms':>7} {'p99 ms':>7} {'p50/floor':>10}")
    for linger in (25, 0):
        for rate in [int(r) for r in args.rates.split(",")]:
            r = load_run(base, rate, args.seconds, linger)
            print(f"{linger:>6} {rate:>9} {r['committed_per_s']:>12.0f} {r['p50']:>7.1f} {r['p99']:>7.1f} "
                  f"{r['p50'] / floor:>10.1f}", flush=True)
    times = election_runs(base, args.kills)
    print(f"election after kill -9: median {statistics.median(times):.0f} ms over {len(times)} kills "
          f"(min {min(times):.0f}, max {max(times):.0f}); controller.quorum.fetch.timeout.ms=2000, "
          f"election.timeout.ms=1000; {statistics.median(times) / floor:.0f}x the floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
