"""Named scenarios from the seeds (KIP-595, KIP-853), and the random settings of a seed.

Each scenario drives a simulation with the faults it is about (the random fault injection is
off), checks every invariant after every event as the random runs do, and then checks the
outcome the KIP describes. ``python -m kafkawire.raft.simulate --scenario NAME --first-seed S``.
"""
from __future__ import annotations

import random
from typing import Any

from kafkawire.protocol.error_codes import Errors
from kafkawire.records import ControlRecordType, iter_batches
from kafkawire.raft.io import Shutdown
from kafkawire.raft.states import Follower, Leader, Resigned, Unattached
from kafkawire.raft.types import ReplicaKey

from .kafka_scenarios import KAFKA_SCENARIOS
from .scenario_kit import _commit_one, _leader, _quiet, _run_until, _voter_ids, expect
from .world import LISTENER, SimSettings, Simulation, address_of, kraft_version_upgrade_request
from kafkawire.messages import add_raft_voter_request as add_req


def settings_for_seed(seed: int) -> SimSettings:
    """Vary the cluster and the network per seed, reproducibly."""
    rng = random.Random(seed * 7919)
    settings = SimSettings(
        voters=rng.choice([1, 3, 3, 3, 5, 5]),
        observers=rng.choice([0, 0, 1, 2]),
        kraft_version=rng.choice([0, 1, 1]),
        drop_rate=rng.choice([0.0, 0.01, 0.05, 0.1]),
        duplicate_rate=rng.choice([0.0, 0.01, 0.05]),
        max_delay_ms=rng.choice([5, 40, 150]),
        fault_every_ms=rng.choice([1000, 3000, 8000]),
        snapshot_every=rng.choice([20, 60, 200]),
        pre_vote=rng.random() < 0.9,
        old_vote_version_nodes=rng.choice([0, 0, 0, 1]),
        auto_join_observers=rng.random() < 0.5,
        admin_every_ms=rng.choice([0, 0, 3000, 8000]),
    )
    # Drawn last, so that the fields above stay what they were for every seed.
    settings.broker_observers = min(settings.observers, rng.choice([0, 0, 1]))
    settings.corrupt_rate = rng.choice([0.0, 0.0, 0.01, 0.05])
    settings.clock_drift = rng.choice([0.0, 0.0, 0.01, 0.1])
    # Background fsyncs (the node's driver) in three seeds of four, finishing within 1, 10 or
    # 60 ms of virtual time; the rest flush before anything leaves, as a synchronous driver.
    settings.async_flush = rng.random() < 0.75
    settings.max_flush_ms = rng.choice([1, 10, 60])
    return settings


def standalone_then_two_auto_joins(seed: int) -> Simulation:
    """`kafka-storage format --standalone` on node 1, empty disks on nodes 2 and 3 with
    controller.quorum.auto.join.enable: node 1 leads alone, then 2 and 3 join as voters."""
    sim = _quiet(seed, voters=1, observers=2, auto_join_observers=True, format_observers=False)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "node 1 leads alone")
    _commit_one(sim, "a standalone leader commits")
    _run_until(sim, 30_000, lambda: all(_voter_ids(n) == {1, 2, 3} for n in sim.nodes.values()),
               "nodes 2 and 3 auto-join and every node sees voters {1, 2, 3}")
    leader = _leader(sim)
    for node in sim.nodes.values():
        expect(node.running.quorum.is_voter(), f"node {node.node_id} is a voter with its own directory id", sim)
    _commit_one(sim, "the three-voter quorum commits")
    expect(leader is not None, "a leader", sim)
    return sim


def disk_failure_recovery(seed: int) -> Simulation:
    """A voter's disk is replaced (same node id, new directory id): with auto-join it removes
    its stale entry and adds itself back (KIP-853's disk failure recovery)."""
    sim = _quiet(seed, voters=3)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    _commit_one(sim, "a commit before the failure")
    victim = next(n for n in sim.nodes.values() if not isinstance(n.running.state, Leader))
    old_directory = victim.config.directory_id
    sim.replace_disk(victim)
    new_directory = victim.config.directory_id

    def recovered():
        leader = _leader(sim)
        if leader is None or not victim.alive:
            return False
        node = leader.core.voters().node(victim.node_id)
        return node is not None and node.key.directory_id == new_directory and \
            (leader.core.high_watermark() or 0) > (leader.core.control.last_voter_set_offset() or 0)
    _run_until(sim, 30_000, recovered, f"node {victim.node_id} back in the voter set with its new directory")
    expect(old_directory != new_directory, "the directory id changed", sim)
    _commit_one(sim, "commits after the recovery")
    return sim


def leader_known_without_endpoints(seed: int) -> Simulation:
    """Seed 1050488: a replica that knows no voter set of its own (a broker, formatted without
    one) learns the leader, persists it in quorum-state and crashes before what it fetched
    (the voter set with it) is on disk: brokers do not fsync what they fetch. It restarts
    Unattached knowing the leader's id but not its endpoints (Kafka's QuorumState.initialize)
    and must follow the leader again once a bootstrap fetch's answer says where it is, rather
    than stay Unattached and fetch from non-leaders forever. (In the seed the replicas were
    voters with replaced disks, which did not fsync as observers either; now, as Kafka's
    controllers, they do.)"""
    sim = _quiet(seed, voters=3, observers=1, broker_observers=1, format_observers=False)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    _commit_one(sim, "a commit before the broker's crash")
    leader = _leader(sim)
    broker = sim.nodes[4]
    _run_until(sim, 5000, lambda: isinstance(broker.running.state, Follower) and broker.running.voters().endpoints(
        leader.node_id), f"broker {broker.node_id} follows the leader and fetched the voter set")
    sim._crash(broker, 500)   # what it fetched is lost, its quorum-state is not
    _run_until(sim, 2000, lambda: broker.alive, f"broker {broker.node_id} restarts")
    expect(isinstance(broker.running.state, Unattached) and broker.running.state.leader_id == leader.node_id
           and not broker.running.voters().endpoints(leader.node_id),
           f"broker {broker.node_id} restarts Unattached knowing leader {leader.node_id} but not its endpoints", sim)

    def caught_up():
        state = broker.core.state
        return isinstance(state, Follower) and state.leader_id == leader.node_id \
            and broker.core.log.end_offset >= (leader.core.high_watermark() or 0) > 0
    _run_until(sim, 5000, caught_up, f"broker {broker.node_id} follows leader {leader.node_id} again and catches up")
    _commit_one(sim, "commits after the restart")
    return sim


def disk_replaced_while_voter_change_uncommitted(seed: int) -> Simulation:
    """Seed 1018021: the operator must not replace a voter's disk when the voter set in force
    at the high watermark would lose its intact majority, even if the newer, uncommitted set
    would keep one. Voters {1, 2, 3} lose one voter; adding a node back stays uncommitted (the
    remaining follower is cut off); replacing the leader's disk now would leave the committed
    two-voter set with one intact voter, a quorum lost for good (in Kafka as well)."""
    sim = _quiet(seed, voters=3, observers=1)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    _commit_one(sim, "a commit before the voter changes")
    leader = _leader(sim)
    removed = next(n for n in sim.nodes.values() if n is not leader and n.node_id in _voter_ids(leader))
    sim.admin_change("remove", removed.node_id)
    _run_until(sim, 10_000, lambda: removed.node_id not in _voter_ids(leader) and (leader.core.high_watermark() or 0)
               > (leader.core.control.last_voter_set_offset() or 0), f"node {removed.node_id} removed, committed")
    follower = next(sim.nodes[i] for i in _voter_ids(leader) if i != leader.node_id)
    sim.blocked = {(leader.node_id, follower.node_id), (follower.node_id, leader.node_id)}
    observer = sim.nodes[4]
    retry = {"at": 0}

    def add_appended():
        # The operator retries while the leader answers that the observer has not caught up.
        if observer.node_id in _voter_ids(leader):
            return True
        if leader.core.reconfig.pending is None and sim.now >= retry["at"]:
            retry["at"] = sim.now + 500
            sim.admin_change("add", observer.node_id)
        return False
    _run_until(sim, 5000, add_appended, f"the AddRaftVoter of node {observer.node_id} appended (uncommitted)")
    expect(leader.core.control.has_uncommitted_voter_change(leader.core.high_watermark()),
           "the added voter is not committed while the only other voter is cut off", sim)
    directory = leader.config.directory_id
    sim.admin_change("replace_disk", leader.node_id)
    expect(leader.config.directory_id == directory and leader.alive,
           f"the disk of leader {leader.node_id} is not replaced: the committed voter set "
           f"{sorted(_voter_ids(follower))} would keep one intact voter", sim)
    sim.blocked.clear()
    _run_until(sim, 10_000, lambda: _leader(sim) is not None and not _leader(sim).core.control.has_uncommitted_voter_change(
        _leader(sim).core.high_watermark()), "the voter change commits once the network heals")
    _commit_one(sim, "commits after the heal")
    return sim


def voter_being_added_keeps_what_it_acknowledged(seed: int) -> Simulation:
    """Seed 2001061: a leader counts a new voter's fetches toward the high watermark as soon as
    it appends the VotersRecord that adds it, before the new voter has fetched that record
    and knows it is one. What the new voter fetched as an observer must be on its disk by
    then, or a crash loses records that counted for a commit (in the seed, a voter restarted
    with an empty log and no voter set and refused every vote). Kafka's controllers fsync
    what they fetch even as observers (canBecomeVoter); so does every kafkawire node."""
    sim = _quiet(seed, voters=3, observers=1)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    _commit_one(sim, "a commit before the voter change")
    leader = _leader(sim)
    cut = next(sim.nodes[i] for i in sorted(_voter_ids(leader)) if i != leader.node_id)
    # With one of the three voters cut off, voters {1, 2, 3, 4} commit only with node 4.
    sim.blocked = {(leader.node_id, cut.node_id), (cut.node_id, leader.node_id)}
    new_voter = sim.nodes[4]
    retry = {"at": 0}

    def add_appended():
        if new_voter.node_id in _voter_ids(leader):
            return True
        if leader.core.reconfig.pending is None and sim.now >= retry["at"]:
            retry["at"] = sim.now + 500
            sim.admin_change("add", new_voter.node_id)
        return False
    _run_until(sim, 5000, add_appended, f"the AddRaftVoter of node {new_voter.node_id} appended")
    record = leader.core.control.last_voter_set_offset()
    _run_until(sim, 5000, lambda: (leader.core.high_watermark() or 0) > record,
               f"the VotersRecord at {record} commits, counting node {new_voter.node_id}'s fetch")
    acknowledged = leader.core.high_watermark()
    sim._crash(new_voter, 200)
    _run_until(sim, 1000, lambda: new_voter.alive, f"node {new_voter.node_id} restarts")
    expect(new_voter.running.log.end_offset >= acknowledged,
           f"node {new_voter.node_id} restarted with log end {new_voter.running.log.end_offset}: it lost records "
           f"below {acknowledged}, which its fetch counted for the commit", sim)
    sim.blocked.clear()
    _commit_one(sim, "commits after the heal")
    return sim


def lagging_voter_votes_for_a_voter_it_does_not_know(seed: int) -> Simulation:
    """Seeds 2002899 and 2002953: a voter that has not fetched the VotersRecord adding a new
    voter must still vote for it when its log is ahead (Kafka's Vote handler does not ask
    whether it knows the candidate). Voters {L, F} (one removed), F cut off while node 4 is
    added, then L goes down: only node 4 can lead {L, F, 4}, and only with F's vote."""
    sim = _quiet(seed, voters=3, observers=1)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    _commit_one(sim, "a commit before the voter changes")
    leader = _leader(sim)

    def committed_change():
        return (leader.core.high_watermark() or 0) > (leader.core.control.last_voter_set_offset() or 0)
    removed = next(sim.nodes[i] for i in sorted(_voter_ids(leader)) if i != leader.node_id)
    sim.admin_change("remove", removed.node_id)
    _run_until(sim, 10_000, lambda: removed.node_id not in _voter_ids(leader) and committed_change(),
               f"node {removed.node_id} removed, committed")
    lagging = next(sim.nodes[i] for i in sorted(_voter_ids(leader)) if i != leader.node_id)
    sim.blocked = {(leader.node_id, lagging.node_id), (lagging.node_id, leader.node_id)}
    new_voter = sim.nodes[4]
    retry = {"at": 0}

    def added():
        if new_voter.node_id in _voter_ids(leader):
            return committed_change()
        if leader.core.reconfig.pending is None and sim.now >= retry["at"]:
            retry["at"] = sim.now + 500
            sim.admin_change("add", new_voter.node_id)
        return False
    _run_until(sim, 10_000, added, f"node {new_voter.node_id} added while node {lagging.node_id} is cut off")
    expect(new_voter.node_id not in _voter_ids(lagging), f"node {lagging.node_id} has not seen node "
           f"{new_voter.node_id} added", sim)
    sim._crash(leader, 60_000)
    sim.blocked.clear()
    _run_until(sim, 10_000, lambda: any(n.alive and isinstance(n.running.state, Leader) and n is not leader
                                          for n in sim.nodes.values()),
               f"node {new_voter.node_id} or {lagging.node_id} leads while node {leader.node_id} is down")
    _commit_one(sim, "commits without the old leader")
    return sim


def node_replacement(seed: int) -> Simulation:
    """A voter dies for good: the operator removes it and adds a new node (an observer that
    caught up) in its place, one change at a time."""
    sim = _quiet(seed, voters=3, observers=1)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    _commit_one(sim, "a commit before the failure")
    leader = _leader(sim)
    dead = next(n for n in sim.nodes.values() if n.node_id in _voter_ids(leader) and n is not leader)
    dead.crash()
    sim.admin_change("remove", dead.node_id)
    _run_until(sim, 20_000, lambda: _leader(sim) is not None and dead.node_id not in _voter_ids(_leader(sim))
               and (_leader(sim).core.high_watermark() or 0) > (_leader(sim).core.control.last_voter_set_offset() or 0),
               f"node {dead.node_id} removed and the removal committed")
    spare = sim.nodes[4]
    pace: dict[str, int] = {}
    _run_until(sim, 20_000, lambda: _try_add(sim, spare.node_id, pace), "node 4 added as a voter")
    _commit_one(sim, "commits with the new voter set")
    expect(_voter_ids(_leader(sim)) == ({1, 2, 3, 4} - {dead.node_id}), "the voter set is the old one with the spare "
           "in place of the dead node", sim)
    return sim


def _try_add(sim: Simulation, node_id: int, pace: dict[str, int]) -> bool:
    leader = _leader(sim)
    if leader is None:
        return False
    if node_id in _voter_ids(leader):
        return (leader.core.high_watermark() or 0) > (leader.core.control.last_voter_set_offset() or 0)
    if leader.core.reconfig.pending is None and sim.now >= pace.get("next_add_ms", 0):
        pace["next_add_ms"] = sim.now + 1000
        sim.admin_change("add", node_id)
    return False


def remove_leader(seed: int) -> Simulation:
    """RemoveRaftVoter of the leader itself: it keeps leading, not counting itself, until the
    new voter set commits, then resigns; the remaining voters elect a leader among them."""
    sim = _quiet(seed, voters=3)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    _commit_one(sim, "a commit before the removal")
    old = _leader(sim)
    sim.admin_change("remove", old.node_id)
    _run_until(sim, 20_000, lambda: isinstance(old.core.state, Resigned) or not isinstance(old.core.state, Leader),
               "the removed leader resigns once the removal commits")
    _run_until(sim, 20_000, lambda: _leader(sim) is not None and _leader(sim) is not old, "a new leader")
    expect(old.node_id not in _voter_ids(_leader(sim)), "the old leader is out of the voter set", sim)
    _commit_one(sim, "commits without the old leader")
    expect(not old.core.quorum.is_voter(), "the old leader knows it is an observer now", sim)
    return sim


def graceful_shutdown(seed: int) -> Simulation:
    """A leader shutting down sends EndQuorumEpoch; its first preferred successor runs at
    once, so a new leader is elected well before a fetch timeout (2 s) would notice."""
    sim = _quiet(seed, voters=3)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    _commit_one(sim, "a commit before the shutdown")
    old = _leader(sim)
    start = sim.now
    sim._step(old, Shutdown(sim.now, 5000))
    _run_until(sim, 5000, lambda: _leader(sim) is not None and _leader(sim) is not old, "a new leader")
    elapsed = sim.now - start
    expect(elapsed < sim.settings.fetch_timeout_ms, f"a new leader {elapsed} ms after the shutdown, before a fetch "
           f"timeout ({sim.settings.fetch_timeout_ms} ms) would have started an election", sim)
    # As Kafka's (maybeCompleteShutdown), the old leader finishes once it knows another
    # leader; it may have voted for it first (testGrantVotesWhenShuttingDown).
    _run_until(sim, 5000, lambda: old.core.shutdown_done, "the old leader's shutdown completes")
    new_leader = _leader(sim)
    expect(new_leader is not None and old.core.quorum.leader_id() == new_leader.node_id,
           "the old leader finished knowing the new leader", sim)
    return sim


def observer_catches_up_through_snapshot(seed: int) -> Simulation:
    """An observer that was down while the voters snapshotted and deleted their logs catches
    up by FetchSnapshot and ends with the same state machine."""
    sim = _quiet(seed, voters=3, observers=1, snapshot_every=20)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    observer = sim.nodes[4]
    observer.crash()
    target = sim.now + 8000
    sim.run_until(target)
    leader = _leader(sim)
    expect(leader is not None and leader.core.log.start_offset > 0, "the leader deleted log behind a snapshot", sim)
    sim._boot(observer)
    _run_until(sim, 10_000, lambda: observer.running.counters["snapshot_installs"] >= 1
               and observer.machine.applied_offset >= leader.core.log.start_offset,
               "the observer installed a snapshot and applied it")
    return sim


def zombie_leader_after_partition(seed: int) -> Simulation:
    """A leader cut off from the majority takes client writes that never commit; the
    majority elects a new leader; the zombie resigns by check-quorum; when the partition
    heals it truncates its uncommitted records and follows."""
    sim = _quiet(seed, voters=3)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    _commit_one(sim, "a commit before the partition")
    zombie = _leader(sim)
    others = [n for n in sim.nodes if n != zombie.node_id]
    sim.blocked = {(zombie.node_id, o) for o in others} | {(o, zombie.node_id) for o in others}
    for _ in range(3):
        sim.propose()   # may land on the zombie: never committed
    _run_until(sim, 10_000, lambda: any(isinstance(sim.nodes[o].running.state, Leader) for o in others),
               "the majority elects a new leader")
    _run_until(sim, 10_000, lambda: not isinstance(zombie.core.state, Leader), "the zombie resigns by check-quorum")
    sim.blocked.clear()
    new = _leader(sim)
    _run_until(sim, 10_000, lambda: isinstance(zombie.core.state, Follower) and zombie.core.state.leader_id == new.node_id
               and zombie.core.log.end_offset == new.core.log.end_offset, "the zombie follows the new leader")
    _commit_one(sim, "commits after the heal")
    return sim


def upgrade_kraft_version(seed: int) -> Simulation:
    """A static quorum (controller.quorum.voters, kraft.version 0) is upgraded with
    `kafka-features upgrade --feature kraft.version=1`: the leader writes kraft.version 1 and
    the voter set, with the directory ids its voters reported by UpdateRaftVoter, in one
    control batch; every node then counts the voters from the log, and a voter change (the
    observer added as a voter), refused with UNSUPPORTED_VERSION before, succeeds."""
    sim = _quiet(seed, voters=3, observers=1, kraft_version=0)
    _run_until(sim, 5000, lambda: _leader(sim) is not None, "a first leader")
    # At once, before any voter told the new leader its kraft.version range: refused.
    early = sim.admin_request(_leader(sim), kraft_version_upgrade_request(), "kraft.version=1")
    _expect_answer(sim, early, Errors.INVALID_UPDATE_VERSION, "UpdateFeatures before the voters reported")
    _commit_one(sim, "a commit at kraft.version 0")
    refused = sim.admin_request(_leader(sim), _add_voter_request(sim.nodes[4]), "4")
    _expect_answer(sim, refused, Errors.UNSUPPORTED_VERSION, "AddRaftVoter at kraft.version 0")
    expect(all(n.running.voters().node(i).key.directory_id is None for n in sim.nodes.values() for i in (1, 2, 3)),
           "before the upgrade, the voter set (controller.quorum.voters) has no directory ids", sim)

    answered: dict[str, Any] = {}

    def upgraded():
        # The operator runs the tool until it succeeds (a voter that has not told this leader
        # its kraft.version range yet makes the leader refuse with INVALID_UPDATE_VERSION).
        last = answered.get("request")
        if last is not None and last in sim.admin_answers:
            if sim.admin_answers[last].error_code == Errors.NONE:
                return True
            answered.setdefault("refusals", []).append(_error_name(sim.admin_answers[last]))
            answered.pop("request")
        if "request" not in answered and sim.now >= answered.get("next_ms", 0) and _leader(sim) is not None:
            answered["request"] = sim.admin_request(_leader(sim), kraft_version_upgrade_request(), "kraft.version=1")
            answered["next_ms"] = sim.now + 500
        return False
    _run_until(sim, 20_000, upgraded, "UpdateFeatures kraft.version=1 answered NONE")
    expect(set(answered.get("refusals", [])) <= {"INVALID_UPDATE_VERSION"},
           f"the upgrade was refused only while voters had not reported: {answered.get('refusals')}", sim)
    leader = _leader(sim)
    _expect_one_upgrade_batch(sim, leader)

    def everyone_upgraded():
        return all(n.core.kraft_version() == 1 and (n.core.high_watermark() or 0) > _upgrade_offset(n)
                   and all(n.core.voters().node(i).key == ReplicaKey(i, sim.nodes[i].config.directory_id)
                           for i in (1, 2, 3))
                   for n in sim.nodes.values())
    _run_until(sim, 10_000, everyone_upgraded, "every node (the observer too) at kraft.version 1, committed, "
               "with the voters' directory ids")
    pace: dict[str, int] = {}
    _run_until(sim, 20_000, lambda: _try_add(sim, 4, pace), "node 4 added as a voter after the upgrade")
    _commit_one(sim, "commits with voters {1, 2, 3, 4}")
    expect(all(_voter_ids(n) == {1, 2, 3, 4} for n in sim.nodes.values()), "every node sees voters {1, 2, 3, 4}",
           sim)
    return sim


def _add_voter_request(node):
    host, port = address_of(node.node_id)
    return add_req.AddRaftVoterRequest(cluster_id="simcluster", timeout_ms=10_000, voter_id=node.node_id,
                                       voter_directory_id=node.config.directory_id,
                                       listeners=[add_req.Listener(name=LISTENER, host=host, port=port)])


def _expect_answer(sim: Simulation, request: int, error: Errors, what: str) -> None:
    _run_until(sim, 5000, lambda: request in sim.admin_answers, f"an answer to {what}")
    got = sim.admin_answers[request]
    expect(got.error_code == error, f"{what} answered {_error_name(got)}, not {error.name}", sim)


def _error_name(body) -> str:
    return Errors.for_code(body.error_code).name


def _upgrade_offset(node) -> int:
    """Where kraft.version 1 was written in this node's log (-1: not there)."""
    history = node.core.control.kraft_versions
    return next((o for o, v in zip(history.offsets, history.values) if v >= 1), -1)


def _expect_one_upgrade_batch(sim: Simulation, leader) -> None:
    """KIP-853: the upgrade is one control batch holding KRaftVersion then VotersRecord."""
    offset = _upgrade_offset(leader)
    for stored in leader.store.batches:
        if stored.base <= offset <= stored.last:
            kinds = [r.control_type for b in iter_batches(stored.data) for r in b]
            expect(kinds == [ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS],
                   f"the upgrade batch at {stored.base} holds {kinds}, not KRaftVersion then VotersRecord", sim)
            return
    expect(False, f"no batch holds the kraft.version 1 record at {offset}", sim)


SCENARIOS = {f.__name__: f for f in (standalone_then_two_auto_joins, disk_failure_recovery, node_replacement,
                                      remove_leader, graceful_shutdown, observer_catches_up_through_snapshot,
                                      zombie_leader_after_partition, upgrade_kraft_version,
                                      leader_known_without_endpoints, disk_replaced_while_voter_change_uncommitted,
                                      voter_being_added_keeps_what_it_acknowledged,
                                      lagging_voter_votes_for_a_voter_it_does_not_know)} | KAFKA_SCENARIOS
