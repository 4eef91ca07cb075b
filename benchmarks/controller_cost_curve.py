"""The controller's cost curve beside Kafka 4.3.1's (issue 28, goal 3): the same operations on a
three-voter quorum of kafkawire controllers and on one of Kafka's (Maven jars, the processes of
tests/interop/mixed_quorum.py), one system at a time, at each size.

    .venv/bin/python benchmarks/controller_cost_curve.py [--systems kafkawire,kafka] [--sizes 10000,100000]
                                                         [--brokers 10] [--kafka-heap 1g] [--repeat 3]
                                                         [--set KEY=VALUE ...]

Per size and system, a fresh quorum (fsync on, loopback; broker.session.timeout.ms 10 minutes
so the fake brokers of tests/nemesis/paced_storm.py stay registered between their heartbeat
rounds), then, in this order, each timed on the wall clock and by the active controller's CPU
(every thread's, from the process's CPU clock, clock_gettime of the clock id Linux gives a pid,
to the nanosecond; /proc/<pid>/stat's 10 ms ticks where that clock cannot be read: the machine
is shared, and the CPU is the figure least hurt by that):

* build: N fake brokers registered and unfenced (raw BrokerRegistration/BrokerHeartbeat), then
  CreateTopics of 1,000 partitions (replication factor 3) four at a time up to the size;
  partitions/s, CPU per partition, and the leader's resident memory per partition after it;
* create probe: 20 CreateTopics of 10 partitions one after another, latency p50;
* fence: broker 1 (it leads 1/N of the partitions and is in 3/N of the ISRs) asks WantFence, then
  heartbeats without it every 100 ms; done when a heartbeat unfences it again, which both
  controllers do only once its partitions have moved (Kafka in the fence's own event, kafkawire
  in bounded steps after it);
* elect preferred: ElectLeaders PREFERRED over every partition (topic_partitions null). It
  elects next to nothing: broker 1 left every ISR when fenced, and the fake brokers never fetch,
  so none adds it back; what is measured is the request's walk of every partition;
* reassign start/cancel: AlterPartitionReassignments of 1% of the partitions to another replica
  set, then of the same partitions with null replicas (the fake brokers never catch up, so the
  reassignments stay in progress until cancelled);
* ``--repeat R`` (default 3): elect preferred, and reassign start then cancel, are each done R
  times in a row and reported as the mean of the R (wall and CPU), with each round's CPU in the
  note. One of them costs tens of milliseconds at 100k partitions, and a garbage collection of
  the whole heap (CPython's full collection, Java's) lands in whichever step crosses its
  threshold: one round said 1x or 4x Kafka's by where that fell, the mean of a few counts it at
  its share;
* delete: DeleteTopics of a tenth of the topics, 50 a request;
* failover: kill -9 of the active controller; done when another node answers a CreateTopics;
* cold restart: kill -9 of every node, all started again; done when one answers a CreateTopics
  (its snapshot and log loaded, a leader elected).

``--set KEY=VALUE`` adds a setting to every node of both systems (Kafka's controllers start
with kafkawire's own keys in their properties and do not use them).

Printed: a line per (size, system, operation), then kafkawire's over Kafka's ratio of each wall
time and CPU time at each size (below 1: kafkawire is faster). Kafka's JVMs get --kafka-heap
each (-Xmx); its resident memory counts the JVM's heap as committed then.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkawire.messages.alter_partition_reassignments_request import (  # noqa: E402
    AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic)
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState  # noqa: E402
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest  # noqa: E402
from kafkawire.net.client import NetworkClient, TransportError  # noqa: E402
from kafkawire.protocol.error_codes import Errors  # noqa: E402
from kafkawire.raft.node.local_quorum import QuorumError, describe_quorum  # noqa: E402
from tests.interop.mixed_quorum import MixedQuorum  # noqa: E402
from tests.nemesis.paced_storm import (STORM_PROPERTIES, TOPIC_PARTITIONS, FakeBrokers, _topic, build,  # noqa: E402
                                       rss_mb)
from tests.nemesis.paced_storm import cpu_seconds as cpu_ticks  # noqa: E402

PROBES = 20
FENCE_POLL_S, BOUND_S = 0.1, 600
REQUEST_TIMEOUT_MS = 120_000
PREFERRED = 0
CPUCLOCK_SCHED = 2          # Linux's process CPU clock ids: ((~pid) << 3) | 2 (MAKE_PROCESS_CPUCLOCK)


def cpu_seconds(pid: int) -> float:
    """Every thread's CPU time of process ``pid`` (the dead ones' too), to the nanosecond, from
    the process's CPU clock (what clock_getcpuclockid(3) gives, which Python does not wrap);
    /proc/<pid>/stat's ticks (10 ms) where the kernel refuses that clock."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | CPUCLOCK_SCHED) / 1e9
    except OSError:
        return cpu_ticks(pid)


@dataclass
class Step:
    system: str
    size: int
    name: str
    wall_s: float
    cpu_s: float
    note: str = ""

    def line(self) -> str:
        return f"{self.size:>8} {self.system:<9} {self.name:<16} {self.wall_s:9.3f} s {self.cpu_s:8.3f} s CPU  {self.note}"


class Run:
    """One system at one size: its quorum, its fake brokers, and the steps measured."""

    def __init__(self, system: str, size: int, brokers: int, base_dir: str, kafka_heap: str, repeat: int = 1,
                 settings: dict | None = None):
        self.system, self.size, self.repeat = system, size, repeat
        self.quorum = MixedQuorum(base_dir, {i: system for i in (1, 2, 3)},
                                  properties={**STORM_PROPERTIES, **(settings or {})})
        self.quorum.format_static()
        for node in self.quorum.kafka.values():
            node.heap = kafka_heap
        self.broker_count = brokers
        self.steps: list[Step] = []
        self.leader = 0

    def address(self, node_id: int | None = None):
        host, port = self.quorum.address(node_id or self.leader).rsplit(":", 1)
        return host, int(port)

    async def timed(self, name: str, work, note=lambda result, wall, cpu: "", quiet: bool = False):
        pid = self.quorum.pid(self.leader)
        cpu, started = cpu_seconds(pid), time.perf_counter()
        result = await work
        wall, cpu = time.perf_counter() - started, cpu_seconds(pid) - cpu
        text = note(result, wall, cpu)
        if wall > 1.0:      # long enough for the followers' fetch timeout (2 s) to be near: let an election show
            await asyncio.sleep(3.0)
        leader = await self._leader_now()
        if leader != self.leader:          # the step cost the leader its leadership: said, and followed
            text += f"; LEADERSHIP LOST: node {self.leader} -> node {leader}"
            self.leader = leader
        self.steps.append(Step(self.system, self.size, name, wall, cpu, text))
        if not quiet:
            print(self.steps[-1].line(), flush=True)
        return result

    async def measure(self) -> None:
        """The steps, against ``self.leader`` (set by the caller: MixedQuorum's waits run their
        own event loops)."""
        fakes = FakeBrokers(self.address(), self.quorum.ours.cluster_id, self.broker_count)
        try:
            await self.timed("build", self._build(fakes), lambda _, wall, cpu: (
                f"{self.size / wall:,.0f} partitions/s, {cpu / self.size * 1e6:.1f} us CPU/partition, "
                f"RSS {rss_mb(self.quorum.pid(self.leader)):.0f} MB "
                f"({rss_mb(self.quorum.pid(self.leader)) * 2**20 / self.size:,.0f} B/partition)"))
            await self.timed("create probe", self._probes(), lambda ms, *_: f"p50 {statistics.median(ms):.1f} ms")
            await self.timed("fence", self._fence(fakes), lambda polls, *_: f"{polls} heartbeats until unfenced")
            await self._repeated({"elect preferred": (self._elect, lambda moved: f"{moved:,} leaders elected")})
            await self._repeated({"reassign start": (lambda: self._reassign(cancel=False), lambda n: f"{n:,} partitions"),
                                  "reassign cancel": (lambda: self._reassign(cancel=True), lambda n: f"{n:,} cancelled")})
            await self.timed("delete", self._delete(), lambda n, *_: f"{n:,} partitions deleted")
        finally:
            await fakes.close()
        await self._restart_step("failover", [self.leader])
        await self._restart_step("cold restart", self.quorum.ids)

    async def _repeated(self, steps: dict) -> None:
        """``steps`` (name -> (work, note of its result)) in order, ``self.repeat`` times; each
        name's step the mean of its rounds, each round's CPU in the note."""
        rounds: dict[str, list[Step]] = {name: [] for name in steps}
        for _ in range(self.repeat):
            for name, (work, note) in steps.items():
                before = len(self.steps)
                await self.timed(name, work(), lambda result, *_, note=note: note(result), quiet=True)
                rounds[name].append(self.steps.pop(before))
        for name, done in rounds.items():
            cpus = ", ".join(f"{s.cpu_s * 1000:.1f}" for s in done)
            notes = "; ".join(dict.fromkeys(s.note for s in done))
            self.steps.append(Step(self.system, self.size, name, statistics.fmean(s.wall_s for s in done),
                                   statistics.fmean(s.cpu_s for s in done),
                                   f"{notes}; mean of {len(done)}, CPU ms {cpus}" if len(done) > 1 else notes))
            print(self.steps[-1].line(), flush=True)

    async def _leader_now(self) -> int:
        """The node that says it leads (DescribeQuorum of each live node), waiting for one."""
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            claims = []                      # (epoch, node) of each node that says it leads
            for node_id in self.quorum.ids:
                if not self.quorum.alive(node_id):
                    continue
                try:
                    view = await describe_quorum(self.address(node_id), timeout_ms=2000)
                except (TransportError, QuorumError, OSError, asyncio.TimeoutError):
                    continue
                if view.leader_id == node_id:
                    claims.append((view.leader_epoch, node_id))
            if claims:
                return max(claims)[1]
            await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.system}: no leader within {BOUND_S} s")

    async def _build(self, fakes: FakeBrokers) -> None:
        await fakes.register()
        await build(self.address(), self.size, fakes)

    async def _probes(self) -> list[float]:
        latencies = []
        async with NetworkClient(client_id="cost-probe", request_timeout_ms=REQUEST_TIMEOUT_MS) as client:
            for n in range(PROBES):
                started = time.perf_counter()
                reply = await client.send(self.address(), _topic(f"probe-{n}", 10))
                _expect(reply.topics[0].error_code, "CreateTopics probe")
                latencies.append((time.perf_counter() - started) * 1000)
        return latencies

    async def _fence(self, fakes: FakeBrokers) -> int:
        victim = fakes.ids[0]
        reply = await fakes._beat(victim, want_fence=True)
        _expect(reply.error_code, "the fencing heartbeat")
        deadline, polls = time.monotonic() + BOUND_S, 0
        while time.monotonic() < deadline:
            await asyncio.sleep(FENCE_POLL_S)
            polls += 1
            reply = await fakes._beat(victim)
            if reply.error_code == Errors.NONE and not reply.is_fenced:
                return polls
        raise RuntimeError(f"{self.system}: broker {victim} still fenced after {BOUND_S} s")

    async def _elect(self) -> int:
        async with NetworkClient(client_id="cost-elect", request_timeout_ms=REQUEST_TIMEOUT_MS) as client:
            reply = await client.send(self.address(), ElectLeadersRequest(
                election_type=PREFERRED, topic_partitions=None, timeout_ms=REQUEST_TIMEOUT_MS))
        _expect(reply.error_code, "ElectLeaders")
        return sum(p.error_code == Errors.NONE for t in reply.replica_election_results for p in t.partition_result)

    def _moved_partitions(self) -> list[tuple[str, int]]:
        """1% of the partitions: the first partitions of the build's topics, spread over them."""
        wanted = max(self.size // 100, 1)
        topics = max(self.size // TOPIC_PARTITIONS, 1)
        per_topic = max(wanted // topics, 1)
        return [(f"scale-{t}", p) for t in range(topics) for p in range(per_topic)][:wanted]

    async def _reassign(self, cancel: bool) -> int:
        moved = self._moved_partitions()
        by_topic: dict[str, list] = {}
        for topic, p in moved:
            replicas = None if cancel else [(p + k) % self.broker_count + 1 for k in (3, 4, 5)]
            by_topic.setdefault(topic, []).append(ReassignablePartition(partition_index=p, replicas=replicas))
        request = AlterPartitionReassignmentsRequest(timeout_ms=REQUEST_TIMEOUT_MS, topics=[
            ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()])
        async with NetworkClient(client_id="cost-reassign", request_timeout_ms=REQUEST_TIMEOUT_MS) as client:
            reply = await client.send(self.address(), request)
        _expect(reply.error_code, "AlterPartitionReassignments")
        # a target that happened to be the partition's replicas already completes at once: its
        # cancel is NO_REASSIGNMENT_IN_PROGRESS (the placement's striping makes that common)
        fine = (Errors.NONE, Errors.NO_REASSIGNMENT_IN_PROGRESS) if cancel else (Errors.NONE,)
        codes = [p.error_code for r in reply.responses for p in r.partitions]
        bad = [(r.name, p.partition_index, Errors.for_code(p.error_code).name) for r in reply.responses
               for p in r.partitions if p.error_code not in fine]
        if bad:
            raise RuntimeError(f"{self.system}: AlterPartitionReassignments refused {bad[:3]} ({len(bad)} in all)")
        return sum(c == Errors.NONE for c in codes)

    async def _delete(self) -> int:
        topics = [f"scale-{t}" for t in range(max(self.size // TOPIC_PARTITIONS // 10, 1))]
        async with NetworkClient(client_id="cost-delete", request_timeout_ms=REQUEST_TIMEOUT_MS) as client:
            for first in range(0, len(topics), 50):
                names = topics[first:first + 50]
                reply = await client.send(self.address(), DeleteTopicsRequest(
                    topics=[DeleteTopicState(name=n) for n in names], topic_names=names, timeout_ms=REQUEST_TIMEOUT_MS))
                for response in reply.responses:
                    _expect(response.error_code, f"DeleteTopics {response.name}")
        return len(topics) * TOPIC_PARTITIONS

    async def _restart_step(self, name: str, killed: list[int]) -> None:
        """kill -9 of ``killed`` (all started again if that was every node), then the time until
        some node answers a CreateTopics; the CPU is the answering node's whole life (for a
        failover it was a follower until then, for a cold restart it started with the step)."""
        everyone = sorted(killed) == self.quorum.ids
        started = time.perf_counter()
        for node_id in killed:
            self.quorum.kill(node_id)
        if everyone:
            self.quorum.start_all()
        answered_by = await self._first_create(f"after-{name.replace(' ', '-')}",
                                               exclude=set() if everyone else set(killed))
        wall = time.perf_counter() - started
        self.leader = answered_by
        self.steps.append(Step(self.system, self.size, name, wall, cpu_seconds(self.quorum.pid(answered_by)),
                               f"answered by node {answered_by} (CPU: that process's whole life); "
                               f"answers before: {dict(self.on_the_way)}"))
        print(self.steps[-1].line(), flush=True)

    async def _first_create(self, prefix: str, exclude: set) -> int:
        deadline, attempt = time.monotonic() + BOUND_S, 0
        self.on_the_way = Counter()
        while time.monotonic() < deadline:
            for node_id in self.quorum.ids:
                if node_id in exclude or not self.quorum.alive(node_id):
                    continue
                attempt += 1
                try:
                    async with NetworkClient(client_id="cost-restart", request_timeout_ms=2000,
                                             connect_timeout_ms=1000) as client:
                        reply = await client.send(self.address(node_id), _topic(f"{prefix}-{attempt}", 10))
                except (TransportError, asyncio.TimeoutError, OSError) as exc:
                    self.on_the_way[type(exc).__name__] += 1
                    continue
                if reply.topics[0].error_code == Errors.NONE:
                    return node_id
                self.on_the_way[Errors.for_code(reply.topics[0].error_code).name] += 1
            await asyncio.sleep(0.05)
        raise RuntimeError(f"{self.system}: no CreateTopics answered within {BOUND_S} s\n{self.quorum.log_tails()}")


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise SystemExit(f"--set {text!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def _expect(code: int, what: str) -> None:
    if code != Errors.NONE:
        raise RuntimeError(f"{what}: {Errors.for_code(code).name}")


def ratios(steps: list[Step]) -> list[str]:
    lines = ["", "kafkawire / Kafka (wall, CPU; below 1: kafkawire is faster):"]
    by = {(s.size, s.system, s.name): s for s in steps}
    for size in sorted({s.size for s in steps}):
        for name in dict.fromkeys(s.name for s in steps if s.size == size):
            ours, kafka = by.get((size, "kafkawire", name)), by.get((size, "kafka", name))
            if ours and kafka and kafka.wall_s > 0 and kafka.cpu_s > 0:
                lines.append(f"{size:>8} {name:<16} wall {ours.wall_s / kafka.wall_s:6.2f}   "
                             f"CPU {ours.cpu_s / kafka.cpu_s:6.2f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default="kafkawire,kafka")
    parser.add_argument("--sizes", default="10000,100000", help="partitions, comma-separated")
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--kafka-heap", default="1g", help="-Xmx of each Kafka controller JVM")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of elect preferred and of reassign start/cancel, their mean reported")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for every node (repeatable)")
    parser.add_argument("--dir", help="keep each quorum's nodes (their logs) in DIR/<system>-<size> (default: deleted)")
    args = parser.parse_args()
    settings = dict(_setting(text) for text in args.set)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, not {args.repeat}")
    steps: list[Step] = []
    print(f"{'size':>8} {'system':<9} {'operation':<16} {'wall':>11} {'CPU':>12}  (load {os.getloadavg()[0]:.1f})")
    for size in (int(s) for s in args.sizes.split(",")):
        for system in args.systems.split(","):
            with tempfile.TemporaryDirectory(prefix=f"cost-curve-{system}-") as tmp:
                base = os.path.join(args.dir, f"{system}-{size}") if args.dir else tmp
                run = Run(system, size, args.brokers, base, args.kafka_heap, args.repeat, settings)
                try:
                    run.quorum.start_all()
                    run.leader = run.quorum.wait_for_leader(120).leader_id
                    asyncio.run(run.measure())
                finally:
                    run.quorum.kill_all()
                steps += run.steps
        print(f"(load {os.getloadavg()[0]:.1f})")
    print("\n".join(ratios(steps)))


if __name__ == "__main__":
    main()
