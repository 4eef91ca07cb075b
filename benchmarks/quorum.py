"""A three-voter kafkawire quorum on 127.0.0.1, with fsync: commit latency and throughput of
appends, and the time to elect a new leader after kill -9, next to the floor one fsync plus
one loopback round trip sets, all measured in the same run.

    .venv/bin/python benchmarks/quorum.py [--rates 500,2000,5000] [--lingers 25,0] [--seconds 8] [--kills 5]

How each number is obtained:

* floor: the median of 200 "write 4 KiB + fsync" on the benchmark's directory, plus the
  median of 2000 request/response round trips (100 bytes) over a loopback TCP connection.
  A commit needs at least the leader's fsync, one follower fetch round trip and that
  follower's fsync (the two fsyncs overlap only partly), so the floor is a lower bound.
* commit latency: `kafkawire test-raft-server` (Kafka's TestRaftServer workload) on each
  node; the leader schedules appends of one 256-byte record at the target rate, those due in
  a tick in one call (refused ones are dropped and counted, "appends refused") and times each
  from when it was due to its commit (the driver's commit-latency window, kept as weighted
  samples, sized here to the appends the target rate makes in the measuring window:
  test-raft-server --latency-window; before 2026-11-30 evening it was the driver's default,
  the last 16384 appends, 0.16 s of them at 100,000/s, so one stall decided the p99). Medians
  and p99 come from the leader's metrics file written next after the measuring window (within
  1.5 s): the last rate x seconds appends before it, a window as long as the measuring one
  when the leader takes the whole target rate, longer when it refuses some (then reaching into
  the 2 s of warm-up before it).
* throughput: the high watermark's growth over the window (DescribeQuorum before and after,
  asked of whichever node leads then), divided by the time between those two answers.
* leader CPU per committed record: the leader process's CPU seconds over the window (user +
  system, every thread, from /proc/PID/stat) over the records committed in it, in
  microseconds; on a shared machine the figure least hurt by other work (the wall-clock ones
  wait for a core). "-" when leadership moved during the window. The load average (1 min) at
  the window's end is printed beside it.
* ``--events DIR``: what the commits over 20 ms overlapped in any node (collections, loop
  holds working or waiting for a core, fsyncs of 5 ms or more, snapshot writes), counted per
  event, not timed: benchmarks/quorum_events.py.
* ``--profile DIR``: every node's main thread (its event loop) runs under cProfile with the
  thread's CPU time as its clock, only during the measuring window (SIGUSR1 / SIGUSR2, as
  benchmarks/broker_throughput.py); the leader's profile is written to
  DIR/leader-linger-L-rate-R.prof (read it with ``python -m pstats``). The profiler slows
  the loop, so its rows are not throughput figures.
* responsiveness, sampled every 250 ms during the window: how long the leader takes to answer
  DescribeQuorum (same event loop as the fetches), and the age of each follower's last fetch as
  the leader saw it (a follower that hears nothing for controller.quorum.fetch.timeout.ms
  starts an election); "new epochs" counts elections won during the window (0 when the
  leader kept its leadership). A leader change is a figure here, not a failure.
* controller.quorum.append.linger.ms is Kafka's default 25 ms, and 0 in a second pass: the
  linger is a deliberate wait that batches appends.
* election after kill -9: SIGKILL the leader, poll DescribeQuorum on the others every 20 ms
  until one reports itself leader of a higher epoch; restart the killed node and let it catch
  up before the next round. Bounded by controller.quorum.fetch.timeout.ms (2000 by default:
  followers wait that long without a fetch answer before they start an election) plus the
  election itself. Each kill's time is printed with the epochs the leadership moved: more
  than one is a split vote (both survivors timed out together and became candidates of one
  epoch; before 2026-12-01 that cost a second round, an election timeout of 1-2 s).
  ``--rates ""`` skips the load runs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkawire.net.client import TransportError  # noqa: E402
from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError  # noqa: E402

from benchmarks.quorum_events import events_python, node_interpreter, summarize as summarize_events  # noqa: E402


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


class Window:
    """What the leader answers while the load runs, sampled with DescribeQuorum every 250 ms:
    how long it took to answer, how long ago each follower's last fetch reached it (a leader
    that stops answering fetches shows here first), and whether leadership moved."""

    def __init__(self, q: LocalQuorum):
        self.q = q
        self.describe_ms: list[float] = []
        self.fetch_age_ms: list[float] = []
        self.failed_describes = 0
        self.view_at = None     # time.monotonic() when the last view returned was answered

    def leader(self, timeout_s: float = 10):
        """The leader's view, or None if no node answers as leader within timeout_s."""
        try:
            view = self.q.wait_for_leader(timeout_s)
        except QuorumError:
            return None
        self.view_at = time.monotonic()
        return view

    def sample(self, view, seconds: float):
        """Sample until ``seconds`` have passed; returns the last view (None: no leader)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end and view is not None:
            t = time.monotonic()
            try:
                fresh = self.q.describe(view.leader_id, timeout_ms=3000)
            except (QuorumError, TransportError, OSError):
                self.failed_describes += 1        # not the leader any more, or too slow to answer
                view = self.leader(max(end - time.monotonic(), 1))
                continue
            now_ms = time.time() * 1000
            self.view_at = time.monotonic()
            self.describe_ms.append((time.monotonic() - t) * 1000)
            self.fetch_age_ms += [now_ms - r.last_fetch_timestamp for r in fresh.voters
                                  if r.replica_id != fresh.leader_id and r.last_fetch_timestamp > 0]
            view = fresh
            time.sleep(max(0.25 - (time.monotonic() - t), 0))
        return view


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a process, every thread (Linux /proc; None elsewhere or once gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# A node's main thread under cProfile between SIGUSR1 and SIGUSR2 (see --profile); argv is
# what LocalQuorum runs after the interpreter: -m kafkawire.tools.cli ARGS...
PROFILED_NODE = """
import cProfile, os, runpy, signal, sys, time
profiler = cProfile.Profile(time.thread_time)
profile_to = os.path.join(os.environ["QUORUM_BENCH_PROFILE_DIR"], f"node-{os.getpid()}.prof")
signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
signal.signal(signal.SIGUSR2, lambda *_: (profiler.disable(), profiler.dump_stats(profile_to)))
sys.argv = ["kafkawire", *sys.argv[3:]]
runpy.run_module("kafkawire.tools.cli", run_name="__main__")
"""


def profiled_python(directory: str) -> str:
    """An interpreter for LocalQuorum that runs each node under PROFILED_NODE."""
    return node_interpreter(directory, "profiled_node.py", PROFILED_NODE, "QUORUM_BENCH_PROFILE_DIR")


def _signal_all(q: LocalQuorum, signum: int) -> None:
    for proc in q.processes.values():
        if proc.poll() is None:
            proc.send_signal(signum)


# Kafka's TestRaftServer has no snapshot generator: it never writes a snapshot. test-raft-server
# runs the node's driver, which snapshots every metadata.log.max.record.bytes.between.snapshots
# (20 MB: ~1.3 a second per node at 100,000 records/s of 256 bytes), each a file and directory
# fsync beside the log's; the load runs turn that off (--set puts it back) to measure what
# Kafka's workload measures. Before 2026-12-01 they snapshotted.
NO_SNAPSHOTS = {"metadata.log.max.record.bytes.between.snapshots": str(2 ** 62)}


def load_run(base: str, rate: int, seconds: float, linger_ms: int, profile_dir: str | None = None,
             settings: dict | None = None, events_dir: str | None = None) -> dict:
    python = profiled_python(profile_dir) if profile_dir else events_python(events_dir) if events_dir else None
    q = LocalQuorum(os.path.join(base, f"rate-{rate}-linger-{linger_ms}"), 3,
                    properties={"controller.quorum.append.linger.ms": str(linger_ms), **NO_SNAPSHOTS, **(settings or {})},
                    python=python,
                    server_args=lambda c: ["test-raft-server", "--config", c, "--throughput", str(rate),
                                           "--record-size", "256", "--log-level", "WARN",
                                           "--latency-window", str(max(int(rate * seconds), 1))])
    leader_cpu = None
    with q:
        q.format()
        q.start_all()
        window = Window(q)
        first = window.leader(30)
        if first is not None:
            time.sleep(2)       # warm up: connections, first batches
            first = window.leader()
        first_at = window.view_at
        leader_pid = q.processes[first.leader_id].pid if first is not None else None
        if python:
            _signal_all(q, signal.SIGUSR1)
        cpu0 = cpu_seconds(leader_pid) if leader_pid else None
        t0 = time.monotonic()
        last = window.sample(first, seconds)
        last = last or (window.leader() if first is not None else None)
        last_at = window.view_at
        t1 = time.monotonic()
        cpu1 = cpu_seconds(leader_pid) if leader_pid else None
        if python:
            _signal_all(q, signal.SIGUSR2)
        if cpu0 is not None and cpu1 is not None and last is not None and last.leader_id == first.leader_id \
                and last.leader_epoch == first.leader_epoch:
            leader_cpu = cpu1 - cpu0
        load = os.getloadavg()[0]
        metrics = {}
        if last is not None:
            time.sleep(1.5)     # the metrics file is written every second
            with open(os.path.join(q.data_dir(last.leader_id), "kafkawire-raft-metrics.json")) as f:
                metrics = json.load(f)["metrics"]
        q.stop_all()
    shutil.rmtree(q.base_dir, ignore_errors=True)     # its logs: a GB or more at 100,000/s
    events = summarize_events(events_dir, leader_pid) if events_dir else []
    if profile_dir and leader_pid:
        made = os.path.join(profile_dir, f"node-{leader_pid}.prof")
        if os.path.exists(made):
            shutil.move(made, os.path.join(profile_dir, f"leader-linger-{linger_ms}-rate-{rate}.prof"))
    records = None if first is None or last is None else last.high_watermark - first.high_watermark
    # The high watermarks are those of the first and the last view: their growth over the time
    # between those two answers (before 2026-12-01 over t0..t1, which ends up to 250 ms after
    # the last view: every rate came out ~4% short, the "workload's 4%" of earlier notes).
    committed = None if records is None else records / (last_at - first_at)
    cpu_us = (leader_cpu / (committed * (t1 - t0)) * 1e6 if leader_cpu is not None and committed
              else None)
    # A new epoch is an election won: leadership moved (or the leader was elected again).
    epochs = None if first is None or last is None else last.leader_epoch - first.leader_epoch
    return {"rate": rate, "linger": linger_ms, "committed_per_s": committed, "new_epochs": epochs,
            "leader": None if first is None else first.leader_id,
            "p50": metrics.get("commit-latency-p50"), "p99": metrics.get("commit-latency-p99"),
            "refused": metrics.get("appends-refused", 0), "cpu_us": cpu_us, "load": load,
            "describe_p50": _median(window.describe_ms), "describe_max": max(window.describe_ms, default=None),
            "fetch_age_max": max(window.fetch_age_ms, default=None), "failed_describes": window.failed_describes,
            "events": events}


def _median(values):
    return statistics.median(values) if values else None


def _num(value, width: int, digits: int = 0) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def election_runs(base: str, kills: int) -> tuple[list[float], list[int]]:
    """The time from each kill -9 of the leader to a survivor's answering as leader of a higher
    epoch, and by how many epochs the leader's moved: 1 is one round; 2 or more, a split vote
    (both survivors candidates of one epoch, refusing each other) and a second round."""
    q = LocalQuorum(os.path.join(base, "elections"), 3,
                    server_args=lambda c: ["test-raft-server", "--config", c, "--throughput", "200",
                                           "--log-level", "WARN"])
    times, epochs = [], []
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
            epochs.append(new.leader_epoch - view.leader_epoch)
            q.start(old)

            def caught_up(new=new, old=old):
                v = q.describe(new.leader_id)
                ends = {r.replica_id: r.log_end_offset for r in v.voters}
                return v if ends.get(old, -1) >= v.high_watermark - 200 and ends.get(old, -1) > 0 else None
            view = q.wait_until(caught_up, 30, f"node {old} to catch up")
            view = q.wait_for_leader(10)
        q.stop_all()
    return times, epochs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", default="500,2000,5000")
    p.add_argument("--lingers", default="25,0", help="controller.quorum.append.linger.ms values (default 25,0)")
    p.add_argument("--seconds", type=float, default=8)
    p.add_argument("--kills", type=int, default=5, help="leader kills for the election times (0: none)")
    p.add_argument("--profile", metavar="DIR", help="cProfile the nodes' loops during each window; "
                   "the leader's profile goes to DIR")
    p.add_argument("--events", metavar="DIR", help="record in every node what can make a commit take over "
                   "20 ms (collections, loop holds, slow fsyncs, snapshots) and print what the tail commits "
                   "overlapped (benchmarks/quorum_events.py); not with --profile")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a server.properties setting for every node (repeatable), e.g. "
                   "kafkawire.quorum.append.queue.max.ms=10")
    args = p.parse_args()
    # A SIGTERM (timeout, Ctrl-C's sibling) unwinds through LocalQuorum's exit, which stops the
    # nodes; without this they would outlive the benchmark.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = tempfile.mkdtemp(prefix="kafkawire-quorum-bench-")
    try:
        return _measure(args, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)    # about 1 GB of logs a run at 100,000/s


def _measure(args, base: str) -> int:
    fs, rtt = fsync_ms(base), loopback_rtt_ms()
    floor = fs + rtt
    print(f"floor: fsync {fs:.3f} ms (median of 200), loopback round trip {rtt:.3f} ms (median of 2000): "
          f"{floor:.3f} ms")
    print(f"{'linger':>6} {'target/s':>9} {'committed/s':>12} {'p50 ms':>7} {'p99 ms':>7} {'p50/floor':>10} "
          f"{'new epochs':>10} {'describe p50/max ms':>20} {'fetch age max ms':>17} {'leader us/rec':>13} "
          f"{'load':>5}")
    if args.profile and args.events:
        print("quorum.py: --profile and --events both wrap the nodes; give one", file=sys.stderr)
        return 2
    for directory in (args.profile, args.events):
        if directory:
            os.makedirs(directory, exist_ok=True)
    for linger in [int(v) for v in args.lingers.split(",")]:
        for rate in [int(r) for r in args.rates.split(",") if r]:
            r = load_run(base, rate, args.seconds, linger, args.profile and os.path.abspath(args.profile),
                         dict(setting.split("=", 1) for setting in args.set),
                         args.events and os.path.abspath(args.events))
            ratio = None if r["p50"] is None else r["p50"] / floor
            describe = f"{_num(r['describe_p50'], 9, 1)}/{_num(r['describe_max'], 0, 0)}"
            print(f"{linger:>6} {rate:>9} {_num(r['committed_per_s'], 12)} {_num(r['p50'], 7, 1)} "
                  f"{_num(r['p99'], 7, 1)} {_num(ratio, 10, 1)} {_num(r['new_epochs'], 10)} {describe:>20} "
                  f"{_num(r['fetch_age_max'], 17)} {_num(r['cpu_us'], 13, 2)} {r['load']:>5.1f}" + (f"  ({r['failed_describes']} describes failed)"
                                                       if r["failed_describes"] else "")
                  + ("  (no node answered as leader within 30 s)" if r["leader"] is None else "")
                  + (f"  ({r['refused']} appends refused)" if r["refused"] else "")
                  + ("  (no leader at the end)" if r["leader"] is not None and r["committed_per_s"] is None
                     else ""), flush=True)
            for line in r["events"]:
                print(line, flush=True)
    if args.kills <= 0:
        return 0
    times, epochs = election_runs(base, args.kills)
    print(f"election after kill -9: median {statistics.median(times):.0f} ms over {len(times)} kills "
          f"(min {min(times):.0f}, max {max(times):.0f}); controller.quorum.fetch.timeout.ms=2000, "
          f"election.timeout.ms=1000; {statistics.median(times) / floor:.0f}x the floor; "
          f"{sum(e > 1 for e in epochs)} split votes (more than one epoch to a leader); load {os.getloadavg()[0]:.1f}")
    print("  each kill: " + ", ".join(f"{t:.0f} ms (+{e} epoch{'s' if e > 1 else ''})" for t, e in zip(times, epochs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
