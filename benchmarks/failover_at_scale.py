"""Failover at scale (issue 28 goal 5): kill -9 of the active controller of a three-voter
kafkawire quorum at P partitions while N fake brokers heartbeat and CreateTopics are in flight;
the time until a new active controller serves a CreateTopics, how many brokers were fenced
(goal: none) and whether every acknowledged CreateTopics is still there (goal: all).

    PYTHONPATH=. .venv/bin/python benchmarks/failover_at_scale.py --brokers 500 --partitions 1000000 \
        --runs 3 --dir /tmp/failover-1m

The cluster is built once (the brokers registered by raw BrokerRegistration, the partitions by
CreateTopics of 1,000-partition topics, as tests/nemesis/paced_storm.py builds it, with
broker.session.timeout.ms at 10 minutes so that the build fences nobody, and the fetch timeout at
20 s so that a long garbage collection of a loaded machine does not cost the build its leader)
and kept in ``--dir`` with what the fake brokers need to come back (DIR/built.json: cluster id,
ports, broker epochs). Then the three nodes are cold-started from DIR, and the load runs from then
to the end; once every broker is unfenced, the two followers are restarted one at a time with
broker.session.timeout.ms at Kafka's default (9 s, or ``--session-timeout-ms``), so that every
new leader has real sessions (the cold start itself keeps the build's 10 minutes: see _runs).
The load:

* every broker heartbeats every 500 ms (one connection each, a broker sends its next heartbeat
  500 ms after the answer, a failed one too, as Kafka's BrokerLifecycleManager; a failure,
  NOT_CONTROLLER or a lost connection, makes it try the next node, as a broker finds the new
  controller);
* ``--creators`` clients create 10-partition topics back to back, each trying the next node
  after an error (100 ms later, a client's retry.backoff.ms).

Each of ``--runs`` runs waits until every broker's last answer says unfenced (or
``--min-unfenced`` of them), then ``--warmup``
seconds, kills -9 the active controller (CreateTopics are in flight then: the creators never
stop) and goes on for ``--after`` seconds; the killed node is then started again, and the next
run begins once it is ready to take over: registered with the new leader, its log at the
leader's high watermark, and a snapshot the leader sent it (one that fell behind) loaded. Per run:

* failover: from the kill to the first CreateTopics answered NONE by another node (the
  creators' answers, so it is served, not merely elected); the new leader's log gives its
  pre-vote ("-> Prospective"), its election ("-> Leader") and its activation ("is the active
  controller") against the kill's wall time, and its full collections until it served;
* fenced: the brokers unfenced at the kill and answered fenced after it, and the lines of the
  surviving nodes' logs after the kill of a broker fenced for its session ("whose session expired");
* lost: every topic whose CreateTopics was answered NONE so far, asked again with validate_only
  on the new leader: each must be TOPIC_ALREADY_EXISTS.

Bounded: every request has a timeout, every wait a deadline; loopback only; the nodes are this
process's children, killed by pid on the way out.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkawire.messages.broker_heartbeat_request import BrokerHeartbeatRequest  # noqa: E402
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest  # noqa: E402
from kafkawire.net.client import NetworkClient, TransportError  # noqa: E402
from kafkawire.protocol.error_codes import Errors  # noqa: E402
from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError, describe_quorum  # noqa: E402
from tests.nemesis.paced_storm import STORM_PROPERTIES, FakeBrokers, build, rss_mb  # noqa: E402

HEARTBEAT_EVERY_S = 0.5     # also after a failed one, as BrokerLifecycleManager's scheduleNextCommunicationAfterFailure
RETRY_AFTER_S = 0.1         # a CreateTopics client's retry.backoff.ms
HEARTBEAT_TIMEOUT_MS = 5000
CREATE_TIMEOUT_MS = 10_000
PROBE_PARTITIONS = 10
START_BOUND_S = 300                  # a cold start of 1M partitions takes ~30 s; loaded, more
UNFENCED_BOUND_S = 300
BUILT = "built.json"
# The build only (not the runs): a full collection of the leader on a loaded machine can outlast
# the 2 s fetch timeout while the image grows, and a lost leadership fails the build's CreateTopics.
BUILD_PROPERTIES = {"controller.quorum.fetch.timeout.ms": "20000"}


# --- the cluster, built once ---------------------------------------------------------------------
def _quorum(base: str, properties: dict, saved: dict | None) -> LocalQuorum:
    quorum = LocalQuorum(base, voters=3, properties=properties)
    if saved is not None:        # the same ports: the voters' endpoints are in the log
        quorum.ports = {int(k): v for k, v in saved["ports"].items()}
        quorum.cluster_id = saved["cluster_id"]
    return quorum


def build_once(base: str, brokers: int, partitions: int) -> dict:
    path = os.path.join(base, BUILT)
    if os.path.exists(path):
        with open(path) as f:
            saved = json.load(f)
        if saved["brokers"] != brokers or saved["partitions"] != partitions:
            raise SystemExit(f"{path} holds {saved['brokers']} brokers x {saved['partitions']} partitions; "
                             "use another --dir")
        print(f"reusing the cluster in {base} (built in {saved['build_s']:.0f} s)", flush=True)
        return saved
    quorum = _quorum(base, {**STORM_PROPERTIES, **BUILD_PROPERTIES}, None)
    try:
        with quorum.started():
            leader = quorum.wait_for_leader(60).leader_id
            fakes = FakeBrokers(quorum.address(leader), quorum.cluster_id, brokers)

            async def grow():
                try:
                    await fakes.register()
                    await build(quorum.address(leader), partitions, fakes)
                finally:
                    await fakes.close()
            started = time.monotonic()
            asyncio.run(grow())
            saved = {"brokers": brokers, "partitions": partitions, "build_s": time.monotonic() - started,
                     "cluster_id": quorum.cluster_id, "ports": quorum.ports,
                     "epochs": fakes.epochs}
    finally:
        quorum.__exit__()
    with open(path, "w") as f:
        json.dump(saved, f)
    print(f"built {brokers} brokers x {partitions} partitions in {saved['build_s']:.0f} s", flush=True)
    return saved


# --- the load: heartbeats and CreateTopics that follow the leader ----------------------------------
@dataclass
class Load:
    addresses: list
    target: int = 0                          # index into addresses: where clients send first
    beats: list = field(default_factory=list)       # (monotonic answered, broker, answer: error, "fenced" or "NONE")
    fenced_now: dict = field(default_factory=dict)  # broker -> its last answer said fenced
    creates: list = field(default_factory=list)     # (monotonic sent, answered, address index, name, error)
    stop: bool = False

    def next_target(self, failed: int) -> None:
        if self.target == failed:
            self.target = (failed + 1) % len(self.addresses)

    def unfenced_fraction(self, count: int) -> float:
        return sum(not fenced for fenced in self.fenced_now.values()) / count


async def _heartbeats(load: Load, broker: int, epoch: int, index: int, count: int) -> None:
    await asyncio.sleep(index * HEARTBEAT_EVERY_S / count)
    async with NetworkClient(client_id=f"fake-broker-{broker}", request_timeout_ms=HEARTBEAT_TIMEOUT_MS,
                             connect_timeout_ms=1000) as client:
        while not load.stop:
            at = load.target
            try:
                reply = await client.send(load.addresses[at], BrokerHeartbeatRequest(
                    broker_id=broker, broker_epoch=epoch, current_metadata_offset=2**62))
                answer = Errors.for_code(reply.error_code).name
            except (TransportError, asyncio.TimeoutError, OSError) as exc:
                answer = type(exc).__name__
            if answer == "NONE":
                load.fenced_now[broker] = reply.is_fenced
                answer = "fenced" if reply.is_fenced else answer
            else:
                load.next_target(at)
            load.beats.append((time.monotonic(), broker, answer))
            await asyncio.sleep(HEARTBEAT_EVERY_S)


async def _creator(load: Load, prefix: str) -> None:
    n = 0
    async with NetworkClient(client_id=f"failover-{prefix}", request_timeout_ms=CREATE_TIMEOUT_MS,
                             connect_timeout_ms=1000) as client:
        while not load.stop:
            n += 1
            name, at, sent = f"{prefix}-{n}", load.target, time.monotonic()
            request = CreateTopicsRequest(topics=[CreatableTopic(
                name=name, num_partitions=PROBE_PARTITIONS, replication_factor=3, assignments=[], configs=[])],
                timeout_ms=CREATE_TIMEOUT_MS)
            try:
                reply = await client.send(load.addresses[at], request)
                error = Errors.for_code(reply.topics[0].error_code).name
            except (TransportError, asyncio.TimeoutError, OSError) as exc:
                error = type(exc).__name__
            load.creates.append((sent, time.monotonic(), at, name, error))
            if error != "NONE":
                load.next_target(at)
                await asyncio.sleep(RETRY_AFTER_S)


async def _missing(address, names: list[str]) -> list[tuple[str, str]]:
    """The acknowledged topics the controller at ``address`` does not hold: CreateTopics with
    validate_only, 100 names a request; anything but TOPIC_ALREADY_EXISTS is a loss."""
    missing = []
    async with NetworkClient(client_id="failover-check", request_timeout_ms=30_000) as client:
        for first in range(0, len(names), 100):
            request = CreateTopicsRequest(topics=[CreatableTopic(
                name=n, num_partitions=PROBE_PARTITIONS, replication_factor=3, assignments=[], configs=[])
                for n in names[first:first + 100]], timeout_ms=30_000, validate_only=True)
            reply = await client.send(address, request)
            missing += [(t.name, Errors.for_code(t.error_code).name) for t in reply.topics
                        if t.error_code != Errors.TOPIC_ALREADY_EXISTS]
    return missing


# --- what the nodes' logs say --------------------------------------------------------------------
_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (.*)$")


def _log_lines(path: str, offset: int) -> list[tuple[float, str]]:
    """(wall time, text) of the lines of a node's log from byte ``offset`` (this run's)."""
    lines = []
    with open(path, errors="replace") as f:
        f.seek(offset)
        for line in f:
            m = _LINE.match(line)
            if m:
                stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                lines.append((stamp, m.group(3)))
    return lines


def _first(lines, pattern: str, after: float) -> float | None:
    return next((t for t, text in lines if t >= after and re.search(pattern, text)), None)


def _timeline(lines, kill_wall: float, served_wall: float) -> dict:
    """The new leader's steps after the kill (s from the kill), and its full collections until served."""
    def since(pattern):
        t = _first(lines, pattern, kill_wall)
        return None if t is None else round(t - kill_wall, 3)
    gcs = [int(m.group(1)) for t, text in lines if kill_wall <= t <= served_wall + 0.05
           for m in [re.search(r"garbage collection of generation 2 took (\d+) ms", text)] if m]
    return {"prospective": since(r"-> Prospective"), "leader": since(r"-> Leader\("),
            "active": since(r"is the active controller"), "full_gcs_ms": gcs}


# --- the runs -------------------------------------------------------------------------------------
@dataclass
class RunResult:
    leader_before: int
    leader_after: int
    failover_s: float
    timeline: dict
    beats: Counter               # the heartbeats' answers after the kill
    fenced: list                 # brokers unfenced at the kill and answered fenced after it
    unfenced_at_kill: int
    session_expiries: list       # the nodes' log lines after the kill of a broker fenced for its session
    creates_in_flight: int       # sent before the kill, answered after it
    create_answers: Counter      # after the kill
    acknowledged: int            # every CreateTopics answered NONE so far (all runs)
    missing: list
    leader_rss_mb: float
    load: tuple

    def line(self) -> str:
        return (f"leader {self.leader_before} killed -> node {self.leader_after} served CreateTopics after "
                f"{self.failover_s:.2f} s (its log, s after the kill: {self.timeline}); of "
                f"{self.unfenced_at_kill} brokers unfenced at the kill, fenced after it {len(self.fenced)} "
                f"{self.fenced[:10]} (sessions expired in the logs: {len(self.session_expiries)}); "
                f"CreateTopics in flight at the kill {self.creates_in_flight}, answers after it "
                f"{dict(self.create_answers)}; acknowledged so far {self.acknowledged}, missing {len(self.missing)} "
                f"{self.missing[:5]}; heartbeats after the kill {dict(self.beats)}; killed leader's RSS "
                f"{self.leader_rss_mb:.0f} MB; load {self.load[0]:.1f} -> {self.load[1]:.1f}")


async def _leader(quorum: LocalQuorum, bound_s: float) -> int:
    """The node that says it leads (DescribeQuorum, without blocking this loop's load)."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        for i in quorum.running():
            try:
                view = await describe_quorum(quorum.address(i), 1000)
            except (TransportError, QuorumError, OSError, asyncio.TimeoutError):
                continue
            if view.leader_id == i and view.high_watermark >= 0:
                return i
        await asyncio.sleep(0.1)
    raise RuntimeError(f"no leader within {bound_s} s")


async def _until(predicate, bound_s: float, what: str) -> None:
    deadline = time.monotonic() + bound_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {bound_s} s waiting for {what}")
        await asyncio.sleep(0.2)


def _log_size(quorum: LocalQuorum, node_id: int) -> int:
    path = quorum.log_path(node_id)
    return os.path.getsize(path) if os.path.exists(path) else 0


def _log_says(quorum: LocalQuorum, node_id: int, offset: int, text: str) -> bool:
    with open(quorum.log_path(node_id), errors="replace") as f:
        f.seek(offset)
        return text in f.read()


async def _result(quorum, load: Load, kill: tuple, unfenced_at_kill: set, offsets: dict, after_s: float) -> RunResult:
    victim, kill_wall, kill_mono, rss, load_before = kill
    served = [(answered, at) for _, answered, at, _, error in load.creates
              if answered > kill_mono and error == "NONE" and quorum.node_ids[at] != victim]
    if not served:
        raise RuntimeError(f"no CreateTopics served within {after_s} s of the kill\n"
                           + "\n".join(quorum.log_tail(i) for i in quorum.node_ids))
    first, at = min(served)
    new_leader = quorum.node_ids[at]
    acknowledged = [name for *_, name, error in load.creates if error == "NONE"]
    missing = await _missing(quorum.address(new_leader), acknowledged)
    logs = {i: _log_lines(quorum.log_path(i), offsets[i]) for i in quorum.node_ids}
    after = [(t, b, answer) for t, b, answer in load.beats if t > kill_mono]
    return RunResult(
        victim, new_leader, first - kill_mono,
        _timeline(logs[new_leader], kill_wall, kill_wall + first - kill_mono),
        Counter(answer for _, _, answer in after),
        sorted({b for _, b, answer in after if answer == "fenced" and b in unfenced_at_kill}), len(unfenced_at_kill),
        [text for i in quorum.node_ids if i != victim for _, text in logs[i] if "whose session expired" in text],
        sum(sent < kill_mono < answered for sent, answered, *_ in load.creates),
        Counter(error for _, answered, _, _, error in load.creates if answered > kill_mono),
        len(acknowledged), missing, rss, (load_before, os.getloadavg()[0]))


async def _kill_the_leader(quorum: LocalQuorum, load: Load, args) -> RunResult:
    victim = await _leader(quorum, 30)
    offsets = {i: _log_size(quorum, i) for i in quorum.node_ids}
    unfenced_at_kill = {b for b, fenced in load.fenced_now.items() if not fenced}
    kill = (victim, time.time(), time.monotonic(), rss_mb(quorum.processes[victim].pid), os.getloadavg()[0])
    quorum.kill(victim)
    await asyncio.sleep(args.after)
    return await _result(quorum, load, kill, unfenced_at_kill, offsets, args.after)


_INSTALLED = re.compile(r"node \d+: installed snapshot (\(epoch=\d+, offset=\d+\)) fetched from the leader")
_LOADED_IN_STEPS = re.compile(r"node \d+: loaded snapshot (\(epoch=\d+, offset=\d+\)) \(\d+ records\) in ")


def _snapshot_load_pending(quorum: LocalQuorum, node_id: int, offset: int) -> bool:
    """Whether the last snapshot the node installed from the leader since ``offset`` is not
    loaded yet (raft/node/driver.py logs the install, driver_load.py the end of its load in steps;
    a newer install drops a load in progress, so only the last one counts)."""
    with open(quorum.log_path(node_id), errors="replace") as f:
        f.seek(offset)
        text = f.read()
    installs = _INSTALLED.findall(text)
    if not installs:
        return False
    last = text.rfind(f"installed snapshot {installs[-1]} fetched")
    return installs[-1] not in _LOADED_IN_STEPS.findall(text[last:])


async def _caught_up(quorum: LocalQuorum, node_id: int) -> bool:
    """Whether the leader sees ``node_id``'s log end at its high watermark or past it."""
    leader = await _leader(quorum, 30)
    view = await describe_quorum(quorum.address(leader), 2000)
    ends = {v.replica_id: v.log_end_offset for v in view.voters}
    return ends.get(node_id, -1) >= view.high_watermark


async def _restart(quorum: LocalQuorum, node_id: int, stop: bool) -> None:
    """Start ``node_id`` again (stopped first if ``stop``) with the quorum's properties, and wait
    until it is ready to take over: registered with the active controller, its log caught up
    with the leader's high watermark, and any snapshot the leader sent it loaded (a node that
    fell behind gets one after registering; at 1M partitions its load in steps took 27 s under
    load, and a kill meanwhile left the new leader unable to serve until it ended)."""
    if stop:
        await asyncio.get_running_loop().run_in_executor(None, quorum.stop, node_id)
    quorum.write_config(node_id)
    offset = _log_size(quorum, node_id)
    quorum.start(node_id)
    started = time.monotonic()
    await _until(lambda: _log_says(quorum, node_id, offset, "active controller acknowledged our registration"),
                 START_BOUND_S, f"node {node_id} started again and registered")
    deadline = started + START_BOUND_S
    while _snapshot_load_pending(quorum, node_id, offset) or not await _caught_up(quorum, node_id):
        if time.monotonic() > deadline:
            raise RuntimeError(f"node {node_id} not caught up (log and snapshot load) within {START_BOUND_S} s "
                               f"of its start\n{quorum.log_tail(node_id)}")
        await asyncio.sleep(0.2)
    print(f"node {node_id} started again: registered, caught up and loaded in {time.monotonic() - started:.1f} s",
          flush=True)


async def _runs(quorum: LocalQuorum, saved: dict, args, properties: dict) -> list[RunResult]:
    """The load from the quorum's cold start to the end. The cold start runs with
    broker.session.timeout.ms at 10 minutes: under load, the loading of 1M partitions and the
    first leader's first full collections kept brokers from it past 9 s and it fenced them, and
    their partitions' moves then took minutes; so once every broker is unfenced, the followers
    are restarted one at a time with ``properties`` (the runs' session timeout), and each run's
    new leader has them. Then ``args.runs`` kills of the leader, the killed node started again
    with ``properties`` before the next."""
    ids = quorum.node_ids
    load = Load([quorum.address(i) for i in ids])
    load.target = ids.index(await _leader(quorum, START_BOUND_S))
    epochs = {int(b): e for b, e in saved["epochs"].items()}
    tasks = [asyncio.ensure_future(_heartbeats(load, b, e, i, len(epochs))) for i, (b, e) in enumerate(epochs.items())]
    tasks += [asyncio.ensure_future(_creator(load, f"fo{int(time.time())}-{c}")) for c in range(args.creators)]
    results = []
    try:
        def unfenced() -> bool:
            return load.unfenced_fraction(len(epochs)) >= args.min_unfenced
        await _until(unfenced, UNFENCED_BOUND_S, f"{args.min_unfenced:.0%} of the brokers answered unfenced")
        leader = await _leader(quorum, 30)
        quorum.properties = properties              # the runs' session timeout, node by node
        for follower in (i for i in ids if i != leader):
            await _restart(quorum, follower, stop=True)
        for run in range(args.runs):
            await _until(unfenced, UNFENCED_BOUND_S, f"{args.min_unfenced:.0%} of the brokers answered unfenced")
            await asyncio.sleep(args.warmup)
            results.append(await _kill_the_leader(quorum, load, args))
            print(f"run {run + 1}: {results[-1].line()}", flush=True)
            if run + 1 < args.runs:
                await _restart(quorum, results[-1].leader_before, stop=False)
    finally:
        load.stop = True
        await asyncio.wait(tasks, timeout=CREATE_TIMEOUT_MS / 1000 + 1)
        for task in tasks:
            task.cancel()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", required=True, help="where the cluster is built once and kept (DIR/built.json)")
    parser.add_argument("--creators", type=int, default=4, help="clients creating topics back to back")
    parser.add_argument("--min-unfenced", type=float, default=1.0,
                        help="the fraction of the brokers answered unfenced before a kill (the fenced ones are "
                             "left out of the count of brokers fenced by the failover)")
    parser.add_argument("--warmup", type=float, default=10, help="s of load before a kill, every broker unfenced")
    parser.add_argument("--after", type=float, default=20, help="s of load after a kill")
    parser.add_argument("--session-timeout-ms", type=int, default=9000, help="broker.session.timeout.ms of the runs")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for every node in the runs (repeatable)")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    saved = build_once(args.dir, args.brokers, args.partitions)
    properties = dict(p.split("=", 1) for p in args.property)
    properties.setdefault("broker.session.timeout.ms", str(args.session_timeout_ms))
    quorum = _quorum(args.dir, {**properties, **STORM_PROPERTIES}, saved)     # the cold start's (see _runs)
    for i in quorum.node_ids:
        quorum.write_config(i)
    started = time.monotonic()
    try:
        quorum.start_all()
        results = asyncio.run(_runs(quorum, saved, args, properties))
    finally:
        quorum.__exit__()
    times = [r.failover_s for r in results]
    print(f"failover: median {statistics.median(times):.2f} s of {[round(t, 2) for t in times]}; brokers fenced "
          f"{[len(r.fenced) for r in results]}; acknowledged CreateTopics missing {[len(r.missing) for r in results]} "
          f"({time.monotonic() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
