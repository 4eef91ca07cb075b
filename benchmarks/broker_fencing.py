"""Fencing a broker that leads a tenth of the partitions (issue 28: "fencing a broker that leads
10% of 1M partitions: the leader changes committed within 2 s"), in process: the active
controller of benchmarks/controller_scale.py (the fake raft of tests/controller/harness.py,
whose appends commit on the next loop turn, so what is measured is the controller's own work
on its event loop), --brokers brokers registered and unfenced, --partitions partitions with
replication factor 3 (each broker leads partitions/brokers of them), then broker 1 is fenced
while every other broker heartbeats every 500 ms:

    .venv/bin/python benchmarks/broker_fencing.py [--partitions 1000000] [--brokers 10]
        [--how fence|shutdown|expire|unregister|unregister-fenced|restart|unfence|offline-dir]

``fence``: broker 1 heartbeats with WantFence (UNFENCED -> FENCED, handleBrokerFenced);
``shutdown``: with WantShutDown (controlled shutdown, handleBrokerInControlledShutdown), again
every 500 ms until told to shut down; ``expire``: it stops heartbeating and its session
(--session-ms) expires (maybeFenceOneStaleBroker); ``unregister``: an UnregisterBroker of
broker 1, still active (handleBrokerUnregistered: it leaves every ISR and ELR; above Kafka's
bound of 10,000 records refused as Kafka refuses it); ``unregister-fenced``: the same, of broker 1
fenced as for ``restart``; ``restart``:
broker 1 is fenced by a fence record alone (as a new active controller leaves a broker whose
fence job it did not finish: still in its follower ISRs) and its set-up is not timed, then a new
incarnation registers with a previous broker epoch that does not match (an unclean shutdown,
handleBrokerShutdown: with ELR on it leaves every ISR and ELR). For these two the time is until
the request is answered. ``unfence``: set-up (not timed) fences broker 1 by its fence record and
makes it the last ISR member, leaderless, of every partition whose ISR held it (as after the
others left the ISRs and it went down; a PartitionChangeRecord each), then it heartbeats caught
up (FENCED -> UNFENCED, handleBrokerUnfenced: it is elected in every one of them); timed until
every partition has a leader again. ``offline-dir``: broker 1 heartbeats with its log directory
(its only one: every replica of it is there) in OfflineLogDirs (handleDirectoriesOffline);
timed until it is in no ISR. (Its registration keeps listing the directory: Kafka's replay takes
an empty LogDirs for no change, and so does ours.)

Printed: the time from the heartbeat (or the session's expiry) until broker 1 leads nothing
and its fence (or shutdown) is committed; the records and batches written meanwhile; the longest
single controller event (the longest stretch the loop was held, from a probe sleeping 1 ms at a
time, next to the longest ``generate`` of the controller's own metric); and the other brokers'
heartbeat latency p50/p99/max during it.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.controller_scale import Cluster, _LagProbe  # noqa: E402
from kafkawire.raft.node.gc_pauses import log_long_pauses  # noqa: E402
from kafkawire.controller.versions import elr_enabled  # noqa: E402
from kafkawire.controller.frames import frame  # noqa: E402
from tests.controller.harness import broker_request, heartbeat  # noqa: E402

HEARTBEAT, REGISTRATION, UNREGISTER = 63, 62, 64
ANSWERED = ("unregister", "unregister-fenced", "restart")
BEAT_EVERY_S = 0.5
VICTIM = 1


class _GcPauses:
    """The longest garbage collection while entered (ms, wall), how many there were (``full``: of
    generation 2), and their
    CPU time in all (``cpu_ms``: of this thread, which a loaded machine does not inflate)."""

    def __init__(self):
        self.longest_ms, self.total_ms, self.cpu_ms, self.count, self.full = 0.0, 0.0, 0.0, 0, 0
        self._start = self._start_cpu = 0.0

    def _callback(self, phase, info):
        if phase == "start":
            self._start, self._start_cpu = time.perf_counter(), time.thread_time()
        else:
            took_ms = (time.perf_counter() - self._start) * 1000
            self.cpu_ms += (time.thread_time() - self._start_cpu) * 1000
            self.count += 1
            self.full += info.get("generation") == 2
            self.total_ms += took_ms
            self.longest_ms = max(self.longest_ms, took_ms)

    def __enter__(self):
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._callback)


class _EventCpu:
    """The CPU time of each controller event (of this thread: the machine is shared, wall time
    is not the controller's), the garbage collections during it left out (``pauses`` counts
    them, by their CPU time: under load their wall time would take out too much): a write's
    generate, and the apply and append of its records."""

    def __init__(self, controller, pauses: _GcPauses):
        self.events_ms: list = []
        generate, append_ahead = controller._generate, controller._append_ahead
        started = [0.0, 0.0]

        def elapsed_ms() -> float:
            return (time.thread_time() - started[0]) * 1000 - (pauses.cpu_ms - started[1])

        def timed_generate(*args):
            started[:] = [time.thread_time(), pauses.cpu_ms]
            try:
                return generate(*args)
            finally:
                self.events_ms.append(elapsed_ms())

        def timed_append_ahead(records):
            try:
                return append_ahead(records)
            finally:
                self.events_ms[-1] = elapsed_ms()
        controller._generate, controller._append_ahead = timed_generate, timed_append_ahead


def _percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


async def _others_beat(cluster: Cluster, stop: asyncio.Event, latencies: list) -> None:
    others = [b for b in cluster.epochs if b != VICTIM]

    async def one(index: int, b: int):
        due = time.monotonic() + index * BEAT_EVERY_S / len(others)
        while not stop.is_set():
            await asyncio.sleep(max(due - time.monotonic(), 0))
            reply = await cluster.beat(b)
            # From when it was due: a loop held by the controller delays the heartbeat's start too,
            # as it would delay reading a real broker's request.
            latencies.append((time.monotonic() - due) * 1000)
            assert reply.error_code == 0 and not reply.is_fenced, (b, reply)
            due = max(due + BEAT_EVERY_S, time.monotonic())
    await asyncio.gather(*(one(i, b) for i, b in enumerate(others)))


def _moved(cluster: Cluster, how: str) -> bool:
    """Broker 1's fence (shutdown) is committed and it leads nothing in the controller's state
    (written: the caller waits for the commit)."""
    controller = cluster.controller
    broker = controller.image.brokers[VICTIM]
    index = controller.state.partition_index
    if how == "unfence":
        return not broker.fenced and not index._leader.of(-1)          # (works on a tree from before unfencing.py)
    if how == "offline-dir":
        return index.isr_count(VICTIM) == 0
    marked = broker.in_controlled_shutdown if how == "shutdown" else broker.fenced
    return marked and not index.has_leaderships(VICTIM)


def _done(cluster: Cluster, how: str) -> bool:
    """_moved, and broker 1's removal from the ISRs has ended (its job, if any: fencing.py) and
    is committed."""
    moves = getattr(cluster.controller, "moves", None)      # absent in a tree from before fencing.py
    return (_moved(cluster, how) and not (moves is not None and moves.in_progress(VICTIM))
            and not cluster.controller.pipeline.in_flight)


async def _victim(cluster: Cluster, how: str) -> None:
    handler = cluster.handlers[HEARTBEAT]
    if how in ("unfence", "offline-dir"):
        request = heartbeat(VICTIM, cluster.epochs[VICTIM], cluster.quorum.end_offset)
        if how == "offline-dir":
            request.offline_log_dirs = list(cluster.controller.image.brokers[VICTIM].directories)
        await handler.handle(_ctx(), request)
    elif how == "fence":
        request = heartbeat(VICTIM, cluster.epochs[VICTIM], cluster.quorum.end_offset, want_fence=True)
        await handler.handle(_ctx(), request)
    elif how == "shutdown":
        while True:
            request = heartbeat(VICTIM, cluster.epochs[VICTIM], cluster.quorum.end_offset, want_shut_down=True)
            reply = await handler.handle(_ctx(), request)
            if reply.should_shut_down:
                return
            await asyncio.sleep(BEAT_EVERY_S)


async def _answer(cluster: Cluster, how: str):
    """The UnregisterBroker's or the new incarnation's registration's answer."""
    if how.startswith("unregister"):
        from kafkawire.messages.unregister_broker_request import UnregisterBrokerRequest
        return await cluster.handlers[UNREGISTER].handle(_ctx(), UnregisterBrokerRequest(broker_id=VICTIM))
    request = broker_request(VICTIM)
    request.previous_broker_epoch = cluster.epochs[VICTIM] - 1         # not the stored epoch: unclean
    return await cluster.handlers[REGISTRATION].handle(_ctx(4), request)


async def _fenced_alone(cluster: Cluster) -> None:
    """Broker 1 fenced by its fence record only: its ISRs stay as they are (the restart's set-up)."""
    from kafkawire.controller.cluster import FENCE
    from kafkawire.controller.frames import frame
    controller = cluster.controller
    await controller._write(lambda: ([frame("BrokerRegistrationChangeRecord", 0, broker_id=VICTIM,
                                            broker_epoch=cluster.epochs[VICTIM], fenced=FENCE)], None))


async def _last_isr_member(cluster: Cluster) -> None:
    """Broker 1 fenced (its fence record alone) and the only ISR member of every partition whose
    ISR held it, with no leader (the unfencing's set-up), written in batches of 5000."""
    from kafkawire.controller.partition_index import partition_of
    controller = cluster.controller
    await _fenced_alone(cluster)
    keys = sorted(controller.state.partition_index._isr.of(VICTIM))
    for first in range(0, len(keys), 5000):
        changes = [frame("PartitionChangeRecord", 0, topic_id=topic_id, partition_id=pid, leader=-1, isr=[VICTIM])
                   for topic_id, pid in map(partition_of, keys[first:first + 5000])]
        await controller._write(lambda: (changes, None))
        for b in cluster.epochs:                   # a long set-up must not let the sessions expire
            if b != VICTIM:
                await cluster.beat(b)


def _ctx(version: int = 0):
    from tests.controller.harness import Ctx
    return Ctx(version)


async def measure(partitions: int, brokers: int, how: str, session_ms: int, profile: str | None = None,
                  freeze_after_ms: int = 500, moves_per_event: int | None = None) -> dict:
    # As a node: what survives a full collection of 500 ms or more is frozen (the default
    # kafkawire.gc.freeze.after.ms, raft/node/gc_pauses.py), so full collections walk only
    # what was made since.
    log_long_pauses(freeze_after_ms)
    cluster = Cluster(brokers)
    if moves_per_event is not None:
        cluster.controller.moves.max_moves_per_event = moves_per_event
    cluster.controller.sessions.session_timeout_ms = session_ms
    build = time.perf_counter()
    await cluster.start(partitions)
    build = time.perf_counter() - build
    controller = cluster.controller
    led = len(controller.state.partition_index._leader.of(VICTIM))
    in_isrs = controller.state.partition_index.isr_count(VICTIM)
    elr = elr_enabled(controller.state.image.metadata_version, controller.state.image.finalized_features)
    if how in ("restart", "unregister-fenced"):
        await _fenced_alone(cluster)
    elif how == "unfence":
        await _last_isr_member(cluster)
    latencies: list = []
    stop = asyncio.Event()
    beats = asyncio.ensure_future(_others_beat(cluster, stop, latencies))
    try:
        await asyncio.sleep(2 * BEAT_EVERY_S)          # the other brokers' heartbeats settle
        latencies.clear()
        batches, end = len(cluster.quorum.batches), cluster.quorum.end_offset
        with _GcPauses() as pauses:
            events = _EventCpu(controller, pauses)
            async with _LagProbe() as probe:
                profiler = _start_profile(profile)
                started, cpu = time.perf_counter(), time.process_time()
                answer = None
                if how in ANSWERED:
                    answer = await _answer(cluster, how)
                    while cluster.controller.pipeline.in_flight:
                        await asyncio.sleep(0.001)
                elif how == "expire":           # its session ends now: the controller's next duty fences it
                    controller.sessions._sessions[VICTIM].last_contact_ms -= session_ms + 1
                    controller.poke()
                else:
                    asyncio.ensure_future(_victim(cluster, how))
                while how not in ANSWERED and not _moved(cluster, how):
                    await asyncio.sleep(0.001)
                moved_at = controller.applied_offset
                while controller.committed_offset < moved_at:
                    await asyncio.sleep(0.001)
                leaders_moved = time.perf_counter() - started
                cpu_moved = time.process_time() - cpu
                gc_moved = (pauses.cpu_ms / 1000, pauses.full)
                while how not in ANSWERED and not _done(cluster, how):
                    await asyncio.sleep(0.001)
                took, cpu = time.perf_counter() - started, time.process_time() - cpu
                _end_profile(profiler, profile)
        stop.set()
        await beats
    finally:
        stop.set()
        await cluster.stop()
    new = cluster.quorum.batches[batches:]
    change_records = sum(1 for offset, m in cluster.quorum.records()
                         if offset >= end and type(m).NAME == "PartitionChangeRecord")
    return {"answer": answer, "in isrs": in_isrs, "elr": elr, "left in isrs": controller.state.partition_index.isr_count(VICTIM),
            "build s": build, "led": led, "took s": took, "cpu s": cpu, "leaders moved s": leaders_moved, "cpu moved s": cpu_moved,
            "gc cpu moved s": gc_moved[0], "full gcs moved": gc_moved[1], "batches": len(new),
            "records": sum(map(len, new)), "changes": change_records, "largest batch": max(map(len, new), default=0),
            "longest stall ms": probe.worst_ms, "gc ms": pauses.longest_ms, "gcs": pauses.count, "full gcs": pauses.full, "gc cpu s": pauses.cpu_ms / 1000,
            "events": len(events.events_ms), "longest event ms": max(events.events_ms, default=0),
            "events cpu s": sum(events.events_ms) / 1000,
            "beats": len(latencies), "beat p50 ms": statistics.median(latencies) if latencies else float("nan"),
            "beat p99 ms": _percentile(latencies, 0.99), "beat max ms": _percentile(latencies, 1.0)}


def _start_profile(path: str | None):
    """A cProfile of the measured window (everything on the loop: the moves, the heartbeats)."""
    if path is None:
        return None
    import cProfile
    profiler = cProfile.Profile()
    profiler.enable()
    return profiler


def _end_profile(profiler, path: str | None) -> None:
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(path)


def _what_ended(how: str) -> str:
    if how == "unfence":
        return "unfenced and every partition led again (committed)"
    if how == "offline-dir":
        return "it is in no ISR (committed)"
    return f"{how} committed and it leads nothing"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--how", choices=("fence", "shutdown", "expire", "unfence", "offline-dir") + ANSWERED,
                        default="fence")
    parser.add_argument("--session-ms", type=int, default=600_000,
                        help="broker.session.timeout.ms (long: the build must not expire anyone)")
    parser.add_argument("--profile", metavar="FILE", help="a cProfile of the measured window, written to FILE")
    parser.add_argument("--freeze-after-ms", type=int, default=500, help="kafkawire.gc.freeze.after.ms (the node's)")
    parser.add_argument("--moves-per-event", type=int, help="the partitions a step moves (default: fencing.py's)")
    args = parser.parse_args()
    row = asyncio.run(measure(args.partitions, args.brokers, args.how, args.session_ms, args.profile,
                              args.freeze_after_ms, args.moves_per_event))
    print(f"{args.partitions} partitions, {args.brokers} brokers ({args.how}): built in {row['build s']:.0f} s; "
          f"broker {VICTIM} led {row['led']}; {_what_ended(args.how)} after "
          f"{row['leaders moved s']:.2f} s ({row['cpu moved s']:.2f} s of CPU, of which garbage collections "
          f"{row['gc cpu moved s']:.2f} s, {row['full gcs moved']} full), its job ended after {row['took s']:.2f} s "
          f"({row['cpu s']:.2f} s of CPU, the heartbeats' included); "
          f"{row['records']} records ({row['changes']} PartitionChangeRecords) in {row['batches']} batches "
          f"(largest {row['largest batch']}); longest loop stall {row['longest stall ms']:.0f} ms "
          f"(wall), longest of {row['events']} controller events {row['longest event ms']:.0f} ms CPU, all {row['events cpu s']:.2f} s (garbage collections left out), longest of {row['gcs']} garbage collections ({row['full gcs']} full) {row['gc ms']:.0f} ms (wall; {row['gc cpu s']:.2f} s of CPU in all); other brokers' heartbeats: {row['beats']}, "
          f"p50 {row['beat p50 ms']:.1f} ms p99 {row['beat p99 ms']:.1f} ms max {row['beat max ms']:.1f} ms",
          flush=True)
    if args.how in ANSWERED:
        print(f"broker {VICTIM} was in {row['in isrs']} ISRs (ELR {'on' if row['elr'] else 'off'}), is in "
              f"{row['left in isrs']} now; the answer: {row['answer']}", flush=True)


if __name__ == "__main__":
    main()
