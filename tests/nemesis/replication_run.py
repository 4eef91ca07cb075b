"""The replication nemesis: three combined kafkawire nodes, a topic with replication factor 3
and min.insync.replicas=2, idempotent acks=all producers, a transactional producer and a
read_committed consumer and a consumer committing offsets (confluent-kafka), while faults come one after another: kill -9 of a
partition leader, of a follower, of the active controller, kill -9 of the leader the moment a
record was acknowledged (acks=all across a failover), a kill -9 leaving a torn segment tail,
SIGSTOP, each held 1-3 s and healed; and network partitions (netsplit.py): a partition's leader
cut from every other node until another node sees its leadership moved (the controller fenced it,
or the raft quorum elected a new controller that did), or one follower's inter-broker links to
its leader cut until the leader's ISR drops it; then held 0.5-2 s more, while clients still reach
the old leader, and healed. Then every replica must return to the ISR, the producers
flush, the consumer reads to the end, and replication_checks.py runs.

    python -m tests.nemesis.replication_run --duration 600 [--seed N] [--dir DIR] [--kinds K1,K2]

It prints the figures and exits 1 if a check fails; tests/nemesis/test_replication_nemesis.py
runs it briefly.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.protocol.error_codes import Errors

from .broker_cluster import NODES, BrokerCluster, ask
from .replication_checks import ReplicationVerdict, check_reads, check_replicas
from .replication_workload import Consumer, IdempotentProducer, OffsetCommitter, TransactionalProducer

TOPIC = "replicated"
PARTITIONS = 2
IN_SYNC_BOUND_S = 60            # every replica back in the ISR within this after a heal
TXN_THREAD_END_BOUND_S = 120    # its longest calls: InitProducerId (60 s), a commit and an abort (30 s each)
PARTITION_MOVED_BOUND_S = 30   # a fault's effect (leadership moved, the ISR shrunk) seen within this


@dataclass(frozen=True)
class BrokerSessions:
    """The brokers' sessions at the controllers, and the soonest a cut can move a leadership:
    its fencing waits out the isolated broker's session, counted from its last heartbeat."""
    session_ms: int
    heartbeat_ms: int
    moved_by_a_cut_floor_s: float

    def properties(self) -> dict:
        return {"broker.session.timeout.ms": str(self.session_ms), "broker.heartbeat.interval.ms": str(self.heartbeat_ms)}


# CI's short run: an isolated leader fenced within seconds. Under a load of 30-50 on the shared
# 2-core machine a heartbeat waits for a core longer than 1.5 s, and brokers are fenced again and
# again without a fault (benchmarks/README.md, "Stopped runs"), so the by-hand runs default to
# Kafka's own settings, whose fencing has the same code path, 9 s after the last heartbeat.
SHORT_SESSIONS = BrokerSessions(1500, 300, moved_by_a_cut_floor_s=1.0)
KAFKA_SESSIONS = BrokerSessions(9000, 2000, moved_by_a_cut_floor_s=5.0)   # 9 s less a late heartbeat or two
SESSIONS = {"short": SHORT_SESSIONS, "kafka": KAFKA_SESSIONS}
KINDS = ["kill leader", "kill follower", "kill controller", "kill leader after an ack", "torn tail", "pause",
         "isolate leader", "cut follower from leader"]
NETWORK_KINDS = ("isolate leader", "cut follower from leader")
MOOT_RETRIES = 3                # a network kind only moot so far is done again, up to this many times


@dataclass
class ReplicationReport:
    duration_s: float
    faults: dict
    acked: int
    failed: int
    acked_before_leader_kill: int
    committed: int
    aborted: int
    txn_errors: dict
    verdict: ReplicationVerdict
    fatal: list
    commits: tuple          # (last acknowledged, last attempted, committed at the end)
    commit_errors: dict
    network_effects: dict   # kind -> seconds from each cut to the leadership moved / the ISR shrunk

    @property
    def commit_kept(self) -> bool:
        acked, attempted, committed = self.commits
        return committed is not None and acked <= committed <= attempted

    def lines(self) -> str:
        v = self.verdict
        return "\n".join([
            f"replication nemesis: {self.duration_s:.0f} s, {sum(self.faults.values())} faults "
            f"({', '.join(f'{k} {n}' for k, n in sorted(self.faults.items()))})",
            f"replication nemesis: {self.acked} records acknowledged (acks=all), {self.failed} failed, "
            f"{self.acked_before_leader_kill} acknowledged within 100 ms before their leader's kill -9; "
            f"transactions: {self.committed} values committed, {self.aborted} aborted, errors {self.txn_errors}",
            f"replication nemesis: lost {len(v.lost)}, misplaced {len(v.misplaced)}, duplicated {len(v.duplicated)}; "
            f"replicas agree: {v.replicas_agree} ({v.records_below_hw} records below the high watermarks)",
            f"replication nemesis: consumer: not read {len(v.not_read)}, read twice {len(v.read_twice)}, "
            f"read elsewhere {len(v.read_misplaced)}, aborted read {len(v.aborted_read)}; fatal producer errors {self.fatal}",
            f"replication nemesis: offset commits: last acknowledged {self.commits[0]}, last sent {self.commits[1]}, "
            f"committed at the end {self.commits[2]} (kept: {self.commit_kept}); errors {self.commit_errors}",
            f"replication nemesis: network partitions, seconds to their effect: {self.network_effects}",
        ] + [f"replication nemesis:   {p}" for p in (v.lost + v.misplaced + v.duplicated + v.not_read
                                                      + v.read_twice + v.aborted_read)[:12]])


def create_topic(cluster: BrokerCluster) -> None:
    request = CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=TOPIC, num_partitions=PARTITIONS, replication_factor=3, assignments=[],
        configs=[CreatableTopicConfig(name="min.insync.replicas", value="2")])])

    def created():
        for i in NODES:
            reply = ask(cluster.broker(i), request, timeout_ms=10_000)
            if reply is not None and reply.topics[0].error_code in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
                return True
        return False
    cluster.wait_until(created, IN_SYNC_BOUND_S, "the topic to be created")
    cluster.wait_until(lambda: cluster.all_in_sync(TOPIC, PARTITIONS), IN_SYNC_BOUND_S, "a full ISR")


def settled_pick(cluster: BrokerCluster, kind: str, index: int) -> tuple[tuple, int]:
    """The partition's (leader, leader epoch, ISR) and the node to cut (its leader to isolate, or a
    follower of its ISR to cut from it), chosen from a settled view (every node says the same,
    ``BrokerCluster.settled``) and read again the same right before the cut: a view asked of one
    node could name a leader being fenced (a node just killed), whose partition moves on by itself
    while the nemesis waits for its cut to move it."""
    def pick():
        state = cluster.settled(TOPIC, PARTITIONS)
        if state is None:
            return None
        leader, _, isr = state[index]
        followers = [i for i in isr if i != leader]
        if kind == "isolate leader":
            target = leader
        elif followers:
            target = cluster.rng.choice(followers)
        else:
            return None
        return (state[index], target) if cluster.settled(TOPIC, PARTITIONS) == state else None
    return cluster.wait_until(pick, IN_SYNC_BOUND_S, f"a settled view of partition {index} to cut by")


def network_fault(cluster: BrokerCluster, kind: str, index: int, floor_s: float) -> str:
    """Isolate the partition's leader until another node sees the leadership move (the controller
    fenced it after its session timeout), or cut one follower's inter-broker links to it until the
    leader's ISR no longer holds the follower (replica.lag.time.max.ms); then a little longer (the old leader still asked to write, by
    clients that reach it); then heal. The caller waits for the full ISR again. A leadership that
    moved sooner after the cut than any cut can move it (``floor_s``, BrokerSessions) was moving
    already: that cut counts as moot."""
    (leader, epoch, _), target = settled_pick(cluster, kind, index)
    if kind == "isolate leader":
        cluster.isolate(leader, kind)
        started = time.monotonic()
        witness = cluster.rng.choice([i for i in NODES if i != leader])
        wanted = f"node {witness} sees partition {index}'s leader move from {leader}"

        def effect(p) -> str:
            if p.leader_epoch != epoch and time.monotonic() - started < floor_s:
                return f"partition {index}'s leadership moved to {p.leader_id} before the cut could move it"
            return wanted if p.leader_id not in (-1, leader) else ""
    else:
        witness, follower = leader, target
        cluster.cut_replication(follower, leader, kind)
        started = time.monotonic()
        wanted = f"the ISR of partition {index} drops node {follower}"

        def effect(p) -> str:
            if p.leader_id != leader:      # moved on (a new controller fenced it): the cut is moot
                return f"partition {index}'s leadership moved to {p.leader_id} before its ISR dropped node {follower}"
            if follower in p.isr_nodes:
                cluster.nudge(leader, TOPIC, index)
                return ""
            return wanted

    def seen() -> str:
        p = cluster.partition_seen_by(witness, TOPIC, index)
        return "" if p is None else effect(p)
    try:
        outcome = cluster.wait_until(seen, PARTITION_MOVED_BOUND_S, wanted)
        took = time.monotonic() - started
        cluster.network_effects[kind if outcome == wanted else f"{kind}, moot"].append(round(took, 1))
        time.sleep(cluster.rng.uniform(0.5, 2.0))
    finally:
        cluster.heal()
    return f"{kind}: partition {index}'s leader {leader} (epoch {epoch}); {outcome} after {took:.1f} s; healed"


def one_fault(cluster: BrokerCluster, kind: str, producers, sessions: BrokerSessions) -> str:
    index = cluster.rng.randrange(PARTITIONS)
    if kind in NETWORK_KINDS:
        return network_fault(cluster, kind, index, sessions.moved_by_a_cut_floor_s)
    leader = cluster.leader(TOPIC, index)
    if leader is None:
        return f"{kind}: no leader of partition {index}"
    hold = cluster.rng.uniform(1.0, 3.0)
    if kind == "pause":
        target = cluster.rng.choice(NODES)
        cluster.pause(target, hold)
        return f"SIGSTOP node {target} for {hold:.1f} s"
    if kind == "kill follower":
        target = cluster.rng.choice([i for i in NODES if i != leader])
    elif kind == "kill controller":
        target = cluster.active_controller() or leader
    else:
        target = leader
    if kind == "kill leader after an ack":       # acks=all across a failover: the record just
        since = time.monotonic()                  # acknowledged must be on the next leader
        waited = since + 10
        while time.monotonic() < waited and not any(p.acked_at.get(index, 0) > since for p in producers):
            time.sleep(0.001)
        cluster.kill_times.append((time.monotonic(), target, index))
    cluster.kill(target, kind)
    if kind == "torn tail":
        cluster.tear_tail(target, TOPIC, index)
    time.sleep(hold)
    cluster.restart(target)
    return f"{kind}: node {target} (partition {index}'s leader {leader}) down {hold:.1f} s"


def _acked_before_a_kill(cluster: BrokerCluster, acked: dict, window_s: float = 0.1) -> int:
    """Acknowledged values of a partition whose leader was killed within ``window_s`` after."""
    return sum(1 for partition, _, at in acked.values() for killed_at, _, index in cluster.kill_times
               if partition == index and 0 <= killed_at - at <= window_s)


def settle(cluster: BrokerCluster, consumer: Consumer) -> dict[int, int]:
    """Every replica in the ISR, every replica's files up to the high watermark, the consumer at
    the end; the high watermarks."""
    cluster.wait_until(lambda: cluster.all_in_sync(TOPIC, PARTITIONS), IN_SYNC_BOUND_S, "every replica in the ISR")
    hws = {i: cluster.wait_until(lambda i=i: cluster.high_watermark(TOPIC, i), IN_SYNC_BOUND_S, "a high watermark")
           for i in range(PARTITIONS)}
    cluster.wait_until(lambda: all(cluster.high_watermark(TOPIC, i, 1) == hw for i, hw in hws.items()),
                       IN_SYNC_BOUND_S, f"the last stable offsets to reach the high watermarks {hws} "
                       f"(the transactions to end)")
    cluster.wait_until(lambda: all(consumer.positions.get(i, -1) >= hw for i, hw in hws.items()),
                       IN_SYNC_BOUND_S, f"the consumer to read up to {hws} (it is at {consumer.positions})")
    return hws


def wait_for_both_outcomes(cluster: BrokerCluster, txn: TransactionalProducer) -> None:
    """Liveness once the faults are healed: a short run's faults can keep every transaction from
    committing (or aborting) while they last, so the run goes on until one of each has."""
    try:
        cluster.wait_until(lambda: txn.committed and txn.aborted, IN_SYNC_BOUND_S,
                           "a committed and an aborted transaction after the faults")
    except Exception as exc:
        raise AssertionError(f"{exc}; the transactional producer's errors: {dict(txn.errors)}") from exc


def run(base_dir: str, duration_s: float, seed: int, log=print, transactions: bool = True,
        kinds=KINDS, sessions: BrokerSessions = SHORT_SESSIONS) -> ReplicationReport:
    """Every one of ``kinds`` once in a random order, then random ones until ``duration_s``."""
    rng = random.Random(seed)
    cluster = BrokerCluster(base_dir, rng=rng, properties=sessions.properties())
    cluster.start()
    stop, stop_reading = threading.Event(), threading.Event()
    txn = None
    try:
        cluster.wait_until(lambda: cluster.partitions("__none__") is not None or cluster.active_controller(),
                           IN_SYNC_BOUND_S, "a controller")
        create_topic(cluster)
        producers = [IdempotentProducer(f"p{i}", cluster.bootstrap, TOPIC, PARTITIONS, stop) for i in range(2)]
        txn = TransactionalProducer(cluster.bootstrap, TOPIC, PARTITIONS, stop, rng) if transactions else None
        consumer = Consumer(cluster.bootstrap, TOPIC, PARTITIONS, stop_reading)
        committer = OffsetCommitter(cluster.bootstrap, TOPIC, stop)
        for thread in producers + [consumer, committer] + ([txn] if txn else []):
            thread.start()
        started = time.monotonic()
        order = rng.sample(list(kinds), len(kinds))
        while time.monotonic() - started < duration_s or order:
            kind = order.pop(0) if order else rng.choice(list(kinds))
            log(f"nemesis: {one_fault(cluster, kind, producers, sessions)}")
            if kind in NETWORK_KINDS and not cluster.network_effects[kind] \
                    and len(cluster.network_effects[f"{kind}, moot"]) <= MOOT_RETRIES:
                order.append(kind)      # only moot so far (its partition moved by itself): every kind once for real
            cluster.wait_until(lambda: cluster.all_in_sync(TOPIC, PARTITIONS), IN_SYNC_BOUND_S,
                               "every replica back in the ISR")
        elapsed = time.monotonic() - started
        if txn:
            wait_for_both_outcomes(cluster, txn)
        stop.set()
        for thread in producers + [committer] + ([txn] if txn else []):
            thread.join(120)
        hws = settle(cluster, consumer)
        stop_reading.set()
        consumer.join(30)
        committed = committer.committed(cluster.bootstrap)
        acked = {v: a for p in producers for v, a in p.acked.items()}
        verdict = ReplicationVerdict()
        dirs = {i: {n: cluster.partition_dir(n, TOPIC, i) for n in NODES} for i in range(PARTITIONS)}
        check_replicas(dirs, hws, acked, verdict)
        check_reads(consumer.read, acked, txn.committed if txn else set(), txn.aborted if txn else set(), verdict)
        return ReplicationReport(
            duration_s=elapsed, faults=dict(cluster.faults), acked=len(acked),
            failed=sum(len(p.failed) for p in producers), acked_before_leader_kill=_acked_before_a_kill(cluster, acked),
            committed=len(txn.committed) if txn else 0, aborted=len(txn.aborted) if txn else 0,
            txn_errors=dict(txn.errors) if txn else {}, verdict=verdict,
            fatal=[p.fatal for p in producers if p.fatal],
            commits=(committer.acked, committer.attempted, committed),
            commit_errors=dict(committer.errors), network_effects=dict(cluster.network_effects))
    finally:
        if txn is not None:
            txn.abandon.set()    # a failed run: its thread (and librdkafka's) ends, not retrying for 60 s
        stop.set()
        stop_reading.set()
        if txn is not None:      # it closes its producer as it ends: while the brokers still run
            txn.join(TXN_THREAD_END_BOUND_S)
        cluster.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=600)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="the fault kinds, comma-separated (default: every one)")
    parser.add_argument("--sessions", choices=sorted(SESSIONS), default="kafka",
                        help="the brokers' sessions: kafka (broker.session.timeout.ms 9000, heartbeats every 2000 ms, "
                             "Kafka's defaults; the default) or short (1500 and 300, CI's)")
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        parser.error(f"--kinds: unknown {unknown or 'none given'}; the kinds: {', '.join(KINDS)}")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"replication nemesis: seed {seed}")
    base = args.dir or tempfile.mkdtemp(prefix="kafkawire-replication-nemesis-")
    print(f"replication nemesis: broker sessions {args.sessions}: {SESSIONS[args.sessions].properties()}")
    report = run(base, args.duration, seed, kinds=kinds, sessions=SESSIONS[args.sessions])
    print(report.lines())
    return 0 if report.verdict.ok and not report.fatal and report.commit_kept else 1


if __name__ == "__main__":
    sys.exit(main())
