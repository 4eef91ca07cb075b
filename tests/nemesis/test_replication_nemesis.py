"""The replication nemesis, short (CI): three combined kafkawire nodes, a topic with replication
factor 3 and min.insync.replicas=2, idempotent acks=all producers, a transactional producer and a
read_committed consumer (confluent-kafka), through every fault kind once (kill -9 of a leader, a
follower, the active controller, of a leader right after an acknowledgement, a torn segment
tail, SIGSTOP, a leader cut from every other node by a network partition until the controller
moves its leadership, then healed: it must not acknowledge what it cannot commit, and must
truncate and rejoin). Nothing acknowledged is lost, misplaced or duplicated on any replica, the
replicas agree byte for byte below the high watermark, the consumer reads every acknowledged
and committed value once and no aborted one. By hand, longer:
`python -m tests.nemesis.replication_run --duration 600` (or KAFKAWIRE_REPLICATION_NEMESIS_SECONDS),
every kind, with the follower cut from its leader too (an ISR shrink, then its expansion)."""
import os

import pytest

from tests.nemesis import replication_run as nemesis
from tests.nemesis.replication_checks import ReplicationVerdict, check_reads, check_replicas

confluent_kafka = pytest.importorskip("confluent_kafka")

SHORT_RUN_S = float(os.environ.get("KAFKAWIRE_REPLICATION_NEMESIS_SECONDS", "0"))
# CI's run: every kind but the follower cut from its leader (an ISR shrink and expansion, as the
# follower kill gives here; the by-hand run has it), to keep the test's cost
CI_KINDS = [kind for kind in nemesis.KINDS if kind != "cut follower from leader"]


def test_a_short_replication_nemesis_loses_nothing_acknowledged(tmp_path):
    report = nemesis.run(str(tmp_path), SHORT_RUN_S, seed=20261129, kinds=CI_KINDS)
    print(report.lines())
    v = report.verdict
    assert v.replicas_agree and v.records_below_hw > 0
    assert v.lost == [] and v.misplaced == [] and v.duplicated == [], report.lines()
    assert v.not_read == [] and v.read_twice == [] and v.read_misplaced == [] and v.aborted_read == [], report.lines()
    assert report.fatal == []
    assert report.commit_kept and report.commits[0] > 0, report.lines()
    assert set(report.faults) == set(CI_KINDS) - {"pause"} | {"SIGSTOP"}, report.faults
    isolations = report.network_effects.get("isolate leader", [])   # the moot ones (moving already) are done again
    moot = report.network_effects.get("isolate leader, moot", [])
    assert len(isolations) + len(moot) == report.faults["isolate leader"], \
        "the isolated leader's partition led by another node before the heal"
    assert len(isolations) == 1, f"one isolation moved its partition's leadership: {report.network_effects}"
    assert report.acked > 100 and report.committed > 0 and report.aborted > 0, report.lines()
    assert report.acked_before_leader_kill > 0, "acks=all across a failover: records acknowledged just before " \
                                                "their leader's kill -9 (each found on every replica above)"


def test_the_checks_catch_a_lost_misplaced_duplicated_or_aborted_record(tmp_path):
    """The checks on hand-made logs: a value acknowledged but absent (lost), at another offset
    (misplaced), written twice (duplicated); replicas that differ; an aborted value read."""
    from kafkawire.records import build_batch

    def segment(node, values):
        directory = tmp_path / f"n{node}"
        directory.mkdir()
        (directory / "00000000000000000000.log").write_bytes(
            build_batch([(None, v.encode(), [], 1_700_000_000_000) for v in values]))
        return str(directory)
    dirs = {0: {1: segment(1, ["a", "b", "b"]), 2: segment(2, ["a", "c", "b"])}}
    verdict = ReplicationVerdict()
    check_replicas(dirs, {0: 3}, {"a": (0, 1, 0.0), "d": (0, 3, 0.0), "c": (0, None, 0.0)}, verdict)
    assert not verdict.replicas_agree
    assert (1, 0, "d", 3) in verdict.lost and (1, 0, "c", None) in verdict.lost
    assert (1, 0, "a", 1, [0]) in verdict.misplaced
    assert verdict.duplicated == [(1, 0, "b", [1, 2])]
    check_reads({"a": [(0, 0), (0, 0)], "x": [(0, 5)]}, {"a": (0, 0, 0.0)}, {"y"}, {"x"}, verdict)
    assert verdict.read_twice == [("a", [(0, 0), (0, 0)])] and verdict.not_read == ["y"]
    assert verdict.aborted_read == ["x"] and not verdict.ok


def test_the_transactional_workload_closes_every_producer_it_makes_whatever_ends_it():
    """No brokers: producers whose commit times out and whose abort then fails fatally (the path
    that once left one dialling the stopped brokers after the module), each replaced by a new one,
    then the fencing producer of the end: every one of them closed by the time the thread ends."""
    import random
    import threading

    from tests.nemesis.replication_workload import TransactionalProducer

    timed_out = confluent_kafka.KafkaError(confluent_kafka.KafkaError._TIMED_OUT, "2 message(s) timed out",
                                           txn_requires_abort=True)
    fenced = confluent_kafka.KafkaError(confluent_kafka.KafkaError.INVALID_TXN_STATE, "fatal", fatal=True)

    class FailingProducer:
        def __init__(self):
            self.closed = False

        def begin_transaction(self):
            pass

        def produce(self, *args, **kwargs):
            pass

        def commit_transaction(self, timeout):
            raise confluent_kafka.KafkaException(timed_out)

        def abort_transaction(self, timeout):
            raise confluent_kafka.KafkaException(fenced)

        def purge(self):
            pass

        def flush(self, timeout):
            raise confluent_kafka.KafkaException(fenced)

        def close(self):
            self.closed = True

    stop, made = threading.Event(), []

    def new_producer():
        made.append(FailingProducer())
        if len(made) == 3:
            stop.set()                      # the third one's transaction fails too: the loop ends
        return made[-1]
    txn = TransactionalProducer("unused:1", "t", 2, stop, random.Random(1))
    txn._new_producer = new_producer
    txn.run()
    assert len(made) == 4                   # three that failed, and the one that fenced the last
    assert [p.closed for p in made] == [True] * 4
    assert txn.producer is None and txn.committed == set() and sum(txn.errors.values()) == 3


def test_by_hand_runs_take_kafkas_broker_sessions_and_ci_keeps_its_short_ones(tmp_path, monkeypatch):
    """At a load of 30-50 heartbeats later than 1.5 s fenced brokers again and again: the by-hand
    run defaults to Kafka's 9 s sessions (heartbeats every 2 s), ``--sessions short`` and CI's
    test (run's default) keep 1.5 s, and the cluster's controllers are given what was chosen."""
    import inspect
    from types import SimpleNamespace

    from tests.nemesis.broker_cluster import BrokerCluster
    chosen = []

    def fake_run(base, duration, seed, kinds, sessions):
        chosen.append(sessions)
        return SimpleNamespace(lines=lambda: "", verdict=SimpleNamespace(ok=True), fatal=[], commit_kept=True)
    run = nemesis.run
    monkeypatch.setattr(nemesis, "run", fake_run)
    assert nemesis.main(["--dir", str(tmp_path), "--seed", "1", "--duration", "0"]) == 0
    assert nemesis.main(["--dir", str(tmp_path), "--seed", "1", "--duration", "0", "--sessions", "short"]) == 0
    assert chosen == [nemesis.KAFKA_SESSIONS, nemesis.SHORT_SESSIONS]
    assert (nemesis.KAFKA_SESSIONS.session_ms, nemesis.KAFKA_SESSIONS.heartbeat_ms) == (9000, 2000)
    monkeypatch.setattr(nemesis, "run", run)
    assert inspect.signature(nemesis.run).parameters["sessions"].default is nemesis.SHORT_SESSIONS
    given = []

    class Stopped(Exception):
        pass

    class Recorded(BrokerCluster):              # the cluster run builds, stopped before any process starts
        def __init__(self, base, *, rng, properties=None):
            super().__init__(base, rng=rng, properties=properties)
            given.append(dict(self.quorum.properties))

        def start(self):
            raise Stopped
    monkeypatch.setattr(nemesis, "BrokerCluster", Recorded)
    for sessions in (nemesis.KAFKA_SESSIONS, nemesis.SHORT_SESSIONS):
        with pytest.raises(Stopped):
            nemesis.run(str(tmp_path / "c"), 0, seed=1, sessions=sessions)
    assert [(p["broker.session.timeout.ms"], p["broker.heartbeat.interval.ms"]) for p in given] == [
        ("9000", "2000"), ("1500", "300")]
