"""Automatic leader balancing by the active controller (leader_balance.py), as Kafka 4.3.1's
QuorumController does it: its electPreferred task, registered when auto.leader.rebalance.enable
and run every leader.imbalance.check.interval.seconds, the first run one interval after the
activation, at most MAX_ELECTIONS_PER_IMBALANCE elections a run (the next at once when a run hit
it), none while the controller is not active. The partitions it looks at are kept in the
partition index as records are applied (tests/controller/test_heartbeat_scale.py checks the
index against a walk of the image)."""
import pytest

from kafkawire.net.config import ConfigError, parse_server_config

from .harness import FakeClock, FakeQuorum, Running, add_controller, run, until
from .test_alter_partition import alter
from .test_brokers import create, partition_changes, register_unfenced
from .test_unfencing_in_steps import _beat, _seeded

INTERVAL_MS = 5000
COMEBACK = 1          # the broker that is fenced, comes back and rejoins its partitions' ISRs
# No broker's session expires while the fake clock moves on: the brokers here heartbeat only
# when a test says so.
SESSION_TIMEOUT_MS = 10 ** 9


async def _controllers(clock, count=1, **settings):
    quorum = FakeQuorum()
    controllers = [add_controller(quorum, node_id, clock=clock, leader_imbalance_check_interval_ms=INTERVAL_MS,
                                  session_timeout_ms=SESSION_TIMEOUT_MS, **settings)
                   for node_id in range(1, count + 1)]
    running = Running(*controllers)
    await running.__aenter__()
    quorum.elect(1)
    leader = controllers[0]
    await until(lambda: leader.is_active() and leader.registration.registered(), "activation and registration")
    return quorum, controllers, running


async def _settled(leader):
    await until(lambda: not leader.moves and not leader.pipeline.in_flight, "the partition moves")


async def _leadership_moved_away(monkeypatch, clock, count=1, **settings):
    """Brokers 1-3, "orders" with 6 partitions of 3 replicas, each led by its first replica.
    COMEBACK is fenced (its partitions' leadership moves to another replica), comes back,
    and the leader of each of its partitions adds it back to the ISR (AlterPartition), as a
    real leader does once the follower caught up: its partitions are then led by another
    replica while their first replica, COMEBACK, is in the ISR and unfenced."""
    _seeded(monkeypatch)
    quorum, controllers, running = await _controllers(clock, count, **settings)
    leader = controllers[0]
    for b in (1, 2, 3):
        await register_unfenced(quorum, leader, b)
    topic_id = await create(leader, "orders", partitions=6, rf=3)
    partitions = leader.image.topics_by_id[topic_id].partitions
    assert all(p.leader == p.replicas[0] for p in partitions.values())
    assert not leader.state.partition_index.has_imbalanced()
    await _beat(leader, quorum, COMEBACK, want_fence=True)
    await _settled(leader)
    assert not (await _beat(leader, quorum, COMEBACK)).is_fenced
    await _settled(leader)
    partitions = leader.image.topics_by_id[topic_id].partitions       # the image is replaced, not changed
    preferred = sorted(pid for pid, p in partitions.items() if p.replicas[0] == COMEBACK)
    assert preferred and all(partitions[pid].leader != COMEBACK for pid in preferred)
    for pid in range(6):
        p = leader.image.topics_by_id[topic_id].partitions[pid]
        if COMEBACK not in p.isr:
            response = await alter(leader, p.leader, topic_id, pid, list(p.isr) + [COMEBACK])
            assert response.topics[0].partitions[0].error_code == 0
    assert all(COMEBACK in p.isr for p in leader.image.topics_by_id[topic_id].partitions.values())
    assert leader.state.partition_index.imbalanced_count() == len(preferred)
    return quorum, controllers, running, topic_id, preferred


async def _duties_ran(controller, clock, ms):
    """Move the clock ``ms`` on and wait for the controller's periodic duties to have looked at
    the balance task at that time (and for its run to have completed, if one was due)."""
    task, runs = controller.leader_balance, controller.leader_balance.runs
    due = task.due_ms
    clock.now += ms
    controller.poke()
    await until(lambda: task.checked_ms == clock.now and (clock.now < due or not task.enabled or task.runs > runs),
                "the periodic duties")


def _leaders(controller, topic_id) -> dict[int, int]:
    return {pid: p.leader for pid, p in controller.image.topics_by_id[topic_id].partitions.items()}


def test_the_settings_default_to_kafkas_and_the_interval_refuses_0():
    base = ("process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
            "listeners=CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n")
    config = parse_server_config(base)
    assert (config.auto_leader_rebalance_enable, config.leader_imbalance_check_interval_seconds) == (True, 300)
    task = add_controller(FakeQuorum(), 1).leader_balance
    assert (task.enabled, task.interval_ms) == (True, 300_000)
    config = parse_server_config(base + "auto.leader.rebalance.enable=false\nleader.imbalance.check.interval.seconds=1\n")
    assert (config.auto_leader_rebalance_enable, config.leader_imbalance_check_interval_seconds) == (False, 1)
    with pytest.raises(ConfigError, match="leader.imbalance.check.interval.seconds"):
        parse_server_config(base + "leader.imbalance.check.interval.seconds=0\n")


def test_the_next_run_gives_a_broker_that_came_back_the_leadership_of_its_partitions(monkeypatch):
    clock = FakeClock()

    async def go():
        quorum, (leader,), running, topic_id, preferred = await _leadership_moved_away(monkeypatch, clock)
        async with running:
            # The comeback and the ISR changes elect nothing by themselves; the first run is one
            # interval after the activation (the fake clock has not moved since).
            mark = quorum.end_offset
            await _duties_ran(leader, clock, INTERVAL_MS - 1)
            assert partition_changes(quorum, mark) == [] and leader.leader_balance.runs == 0
            before = {pid: p for pid, p in leader.image.topics_by_id[topic_id].partitions.items()}
            await _duties_ran(leader, clock, 1)
            changes = partition_changes(quorum, mark)
            assert sorted(m.partition_id for m in changes) == preferred
            # Only the leader changes (the ISR, replicas and ELR are not in the record), as the
            # PartitionChangeRecord of an ElectLeaders(PREFERRED) in Kafka.
            assert all((m.leader, m.isr, m.replicas, m.eligible_leader_replicas) == (COMEBACK, None, None, None)
                       for m in changes)
            after = leader.image.topics_by_id[topic_id].partitions
            assert all(after[pid].leader_epoch == before[pid].leader_epoch + 1 for pid in preferred)
            assert all(p.leader == p.replicas[0] for p in after.values())
            assert not leader.state.partition_index.has_imbalanced()
            # Nothing left to balance: the next runs write nothing.
            mark = quorum.end_offset
            await _duties_ran(leader, clock, INTERVAL_MS)
            assert partition_changes(quorum, mark) == [] and leader.leader_balance.runs == 2
    run(go())


def test_with_auto_leader_rebalance_off_the_leaders_stay(monkeypatch):
    clock = FakeClock()

    async def go():
        quorum, (leader,), running, topic_id, preferred = await _leadership_moved_away(
            monkeypatch, clock, auto_leader_rebalance=False)
        async with running:
            leaders = _leaders(leader, topic_id)
            mark = quorum.end_offset
            for _ in range(3):
                await _duties_ran(leader, clock, INTERVAL_MS)
            assert partition_changes(quorum, mark) == [] and leader.leader_balance.runs == 0
            assert _leaders(leader, topic_id) == leaders and all(leaders[pid] != COMEBACK for pid in preferred)
            assert leader.leader_balance.next_due_ms(leader.state) is None      # no wake for it either
    run(go())


def test_a_run_that_hits_its_limit_is_followed_at_once_by_another(monkeypatch):
    clock = FakeClock()

    async def go():
        quorum, (leader,), running, topic_id, preferred = await _leadership_moved_away(monkeypatch, clock)
        async with running:
            assert len(preferred) >= 2
            leader.leader_balance.max_elections = 1
            for done in range(1, len(preferred) + 1):
                mark = quorum.end_offset
                await _duties_ran(leader, clock, INTERVAL_MS if done == 1 else 10)
                assert len(partition_changes(quorum, mark)) == 1
                assert leader.leader_balance.due_ms == clock.now + 10       # PeriodicTask's immediate period
                assert leader.state.partition_index.imbalanced_count() == len(preferred) - done
            # The run after the last election finds nothing: the period is back to the interval.
            mark = quorum.end_offset
            await _duties_ran(leader, clock, 10)
            assert partition_changes(quorum, mark) == []
            assert leader.leader_balance.due_ms == clock.now + INTERVAL_MS
            assert all(p.leader == p.replicas[0] for p in leader.image.topics_by_id[topic_id].partitions.values())
    run(go())


def test_only_the_active_controller_runs_it_and_a_new_one_waits_an_interval_from_its_activation(monkeypatch):
    clock = FakeClock()

    async def go():
        quorum, (first, second), running, topic_id, preferred = await _leadership_moved_away(monkeypatch, clock, 2)
        async with running:
            leaders = _leaders(first, topic_id)
            clock.now += INTERVAL_MS - 1
            quorum.elect(2)              # the first controller resigns just before its run was due
            await until(lambda: second.is_active() and not second.pipeline.in_flight, "the second's activation")
            activated = clock.now
            assert second.leader_balance.due_ms == activated + INTERVAL_MS
            mark = quorum.end_offset
            # Past the first controller's due time: it is not active, and runs nothing.
            await _duties_ran(second, clock, 1)
            assert first.leader_balance.runs == 0 and not first.is_active()
            assert partition_changes(quorum, mark) == [] and _leaders(second, topic_id) == leaders
            await _duties_ran(second, clock, INTERVAL_MS - 1)
            assert sorted(m.partition_id for m in partition_changes(quorum, mark)) == preferred
            assert (first.leader_balance.runs, second.leader_balance.runs) == (0, 1)
            assert all(p.leader == p.replicas[0] for p in second.image.topics_by_id[topic_id].partitions.values())
    run(go())


async def _out_of_isr(leader, topic_id: str, pid: int) -> None:
    """The returning broker (the partition's first replica) taken out of the partition's ISR."""
    p = leader.image.topics_by_id[topic_id].partitions[pid]
    response = await alter(leader, p.leader, topic_id, pid, [r for r in p.isr if r != COMEBACK])
    assert response.topics[0].partitions[0].error_code == 0


def test_a_preferred_replica_out_of_the_isr_is_not_elected_and_the_partition_stays_for_the_next_run(monkeypatch):
    """Kafka's builder keeps the leader when the first replica may not lead: no record, and the
    partition stays imbalanced; once it is back in the ISR, the next run elects it."""
    clock = FakeClock()

    async def go():
        quorum, (leader,), running, topic_id, preferred = await _leadership_moved_away(monkeypatch, clock)
        async with running:
            pid = preferred[0]
            await _out_of_isr(leader, topic_id, pid)
            mark = quorum.end_offset
            await _duties_ran(leader, clock, INTERVAL_MS)
            assert sorted(m.partition_id for m in partition_changes(quorum, mark)) == preferred[1:]
            assert leader.state.partition_index.imbalanced_count() == 1
            p = leader.image.topics_by_id[topic_id].partitions[pid]
            response = await alter(leader, p.leader, topic_id, pid, list(p.isr) + [COMEBACK])
            assert response.topics[0].partitions[0].error_code == 0
            mark = quorum.end_offset
            await _duties_ran(leader, clock, INTERVAL_MS)
            assert [(m.partition_id, m.leader) for m in partition_changes(quorum, mark)] == [(pid, COMEBACK)]
            assert not leader.state.partition_index.has_imbalanced()
    run(go())


def test_a_run_looks_at_a_bounded_number_of_partitions_and_the_walk_goes_on_at_once(monkeypatch):
    """kafkawire's own bound (MAX_LOOKS_PER_RUN; Kafka's run looks at every imbalanced partition):
    here one partition a run, the first of the two with the first replica out of its ISR. The
    walk goes on 10 ms after each run until it has looked at every partition it started with,
    then waits the interval; the elections are those of one whole run."""
    clock = FakeClock()

    async def go():
        quorum, (leader,), running, topic_id, preferred = await _leadership_moved_away(monkeypatch, clock)
        async with running:
            stuck = preferred[0]
            await _out_of_isr(leader, topic_id, stuck)
            task = leader.leader_balance
            task.max_looks = 1
            mark = quorum.end_offset
            await _duties_ran(leader, clock, INTERVAL_MS)
            for _ in range(len(preferred) - 1):
                assert len(partition_changes(quorum, mark)) <= 1 and task.due_ms == clock.now + 10
                await _duties_ran(leader, clock, 10)
            assert task.due_ms == clock.now + INTERVAL_MS            # the walk is over
            assert sorted(m.partition_id for m in partition_changes(quorum, mark)) == preferred[1:]
            assert task.runs == len(preferred)
            mark = quorum.end_offset
            await _duties_ran(leader, clock, INTERVAL_MS)             # a new walk: only the stuck one
            assert partition_changes(quorum, mark) == [] and task.due_ms == clock.now + INTERVAL_MS
    run(go())
