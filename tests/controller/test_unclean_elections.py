"""The active controller's unclean elections of leaderless partitions (unclean_elections.py), as
Kafka 4.3.1's QuorumController makes them: its electUnclean task every
unclean.leader.election.interval.ms, the first one interval after the activation, at most
MAX_ELECTIONS_PER_IMBALANCE elections a run; and a new active controller finishing the unclean
elections of an unfencing sweep cut short by the change of leader (as it finishes the clean ones)."""
import pytest

from kafkawire.controller.frames import frame
from kafkawire.controller.activation import BROKER_RESOURCE
from kafkawire.metadata.image import TOPIC_RESOURCE
from kafkawire.metadata.registrations import NO_LEADER
from kafkawire.net.config import ConfigError, parse_server_config

from .harness import FakeClock, FakeQuorum, Running, add_controller, run, until
from .test_brokers import create, new_records, register_unfenced
from .test_unfencing_in_steps import _beat, _seeded

RECOVERING = 1
# Below broker.session.timeout.ms (9 s), so that broker 2 stays unfenced across an interval
# without heartbeats; the default is UNCLEAN_ELECTION_INTERVAL_MS.
INTERVAL_MS = 5000


async def _start(clock, **settings):
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, clock=clock, unclean_election_interval_ms=INTERVAL_MS, **settings)
    running = Running(leader)
    await running.__aenter__()
    quorum.elect(1)
    await until(lambda: leader.is_active() and leader.registration.registered(), "activation and registration")
    return quorum, leader, running


async def _allow_unclean(leader, topic_name):
    await leader.write(lambda: ([frame("ConfigRecord", resource_type=TOPIC_RESOURCE, resource_name=topic_name,
                                       name="unclean.leader.election.enable", value="true")], None))


async def _every_partition_leaderless(monkeypatch, clock=None):
    """Brokers 1-3; "orders" (3 partitions) and "kept" (1), replication factor 3; 2 and 3 fenced,
    then 1: no partition has a leader, 1 in every ELR. Then 2 comes back: outside every ISR and
    ELR, it can lead only uncleanly, which no topic allows yet."""
    _seeded(monkeypatch)
    quorum, leader, running = await _start(clock or FakeClock())
    for b in (1, 2, 3):
        await register_unfenced(quorum, leader, b)
    orders = await create(leader, "orders", partitions=3, rf=3)
    kept = await create(leader, "kept", partitions=1, rf=3)
    for b in (2, 3, 1):
        await _beat(leader, quorum, b, want_fence=True)
        await until(lambda: not leader.moves and not leader.pipeline.in_flight, "fenced")
    assert not (await _beat(leader, quorum, 2)).is_fenced
    await until(lambda: not leader.moves and not leader.pipeline.in_flight, "unfenced")
    for topic_id in (orders, kept):
        assert all(p.leader == NO_LEADER and list(p.elr) == [1] for p in leader.image.topics_by_id[topic_id].partitions.values())
    return quorum, leader, running, orders, kept


async def _periodic_duties_ran(leader, clock, ms):
    """Move the clock ``ms`` on and wait for the periodic duties to have looked at the task at
    that time (and for its run to have completed, if one was due)."""
    task, runs = leader.unclean_elections, leader.unclean_elections.runs
    due = task.due_ms
    clock.now += ms
    leader.poke()
    await until(lambda: task.checked_ms == clock.now and (clock.now < due or task.runs > runs), "the periodic duties")


def test_the_interval_defaults_to_kafkas_5_minutes_and_refuses_0():
    base = ("process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
            "listeners=CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n")
    assert parse_server_config(base).unclean_leader_election_interval_ms == 300_000
    assert add_controller(FakeQuorum(), 1).unclean_elections.interval_ms == 300_000
    assert parse_server_config(base + "unclean.leader.election.interval.ms=1\n").unclean_leader_election_interval_ms == 1
    with pytest.raises(ConfigError, match="unclean.leader.election.interval.ms"):
        parse_server_config(base + "unclean.leader.election.interval.ms=0\n")


def test_the_active_controller_elects_uncleanly_every_interval_where_the_topic_allows_it(monkeypatch):
    clock = FakeClock()

    async def go():
        quorum, leader, running, orders, kept = await _every_partition_leaderless(monkeypatch, clock)
        async with running:
            await _allow_unclean(leader, "orders")
            # Setting the config elects nothing by itself; the task's first run is one interval
            # after the activation (the fake clock has not moved since).
            mark = quorum.end_offset
            await _periodic_duties_ran(leader, clock, INTERVAL_MS - 1)
            assert not [r for _, r in new_records(quorum, mark) if r.type_name == "PartitionChangeRecord"]
            mark = quorum.end_offset
            await _periodic_duties_ran(leader, clock, 1)
            changes = [r.message for _, r in new_records(quorum, mark) if r.type_name == "PartitionChangeRecord"]
            assert sorted((m.topic_id, m.partition_id) for m in changes) == [(orders, 0), (orders, 1), (orders, 2)]
            assert all((m.leader, list(m.isr), list(m.eligible_leader_replicas), m.leader_recovery_state)
                       == (2, [2], [], RECOVERING) for m in changes)
            assert all(p.leader == 2 for p in leader.image.topics_by_id[orders].partitions.values())
            assert leader.image.topics_by_id[kept].partitions[0].leader == NO_LEADER    # not allowed there
    run(go())


def test_a_run_that_hits_its_limit_is_followed_at_once_by_another(monkeypatch):
    clock = FakeClock()

    async def go():
        quorum, leader, running, orders, _ = await _every_partition_leaderless(monkeypatch, clock)
        async with running:
            await _allow_unclean(leader, "orders")
            leader.unclean_elections.max_elections = 2
            mark = quorum.end_offset
            await _periodic_duties_ran(leader, clock, INTERVAL_MS)
            first = [r.message.partition_id for _, r in new_records(quorum, mark) if r.type_name == "PartitionChangeRecord"]
            assert first == [0, 1]
            assert leader.unclean_elections.due_ms == clock.now + 10        # PeriodicTask's immediate period
            mark = quorum.end_offset
            await _periodic_duties_ran(leader, clock, 10)
            assert leader.image.topics_by_id[orders].partitions[2].leader == 2
            assert [r.message.partition_id for _, r in new_records(quorum, mark)
                    if r.type_name == "PartitionChangeRecord"] == [2]
            assert leader.unclean_elections.due_ms == clock.now + INTERVAL_MS
    run(go())


def test_a_new_active_controller_finishes_the_unclean_elections_of_a_sweep_cut_short(monkeypatch):
    """Broker 3 unfenced while "orders" allows unclean elections: its sweep (one partition a
    step) elects it uncleanly; cut short, the next active controller starts it again at once
    (its clock, and so the periodic task, does not move here)."""
    async def go():
        quorum, leader, running, orders, _ = await _every_partition_leaderless(monkeypatch)
        await _beat(leader, quorum, 2, want_fence=True)
        await until(lambda: not leader.moves and not leader.pipeline.in_flight, "2 fenced again")
        await _allow_unclean(leader, "orders")
        leader.moves.max_moves_per_event = 1
        other = add_controller(quorum, 2)
        for base, epoch, records in quorum.committed_batches:
            other.on_committed(base, epoch, 0, list(records))
        async with running, Running(other):
            await _beat(leader, quorum, 3)
            assert leader.moves._sweep is not None
            quorum.elect(2)
            await until(lambda: other.is_active() and not other.moves and not other.pipeline.in_flight,
                        "the new controller's sweep")
            assert all(p.leader == 3 for p in other.image.topics_by_id[orders].partitions.values())
    run(go())


# (unclean.leader.election.enable in the controller's server.properties, dynamic BROKER configs
# as {resource name: value}, whether the topic, which sets none, gets an unclean leader)
CONTROLLER_LAYERS = [
    (True, {}, True),                           # the static setting alone
    (True, {"1": "false"}, False),              # the controller's own node config before it
    (True, {"": "false"}, False),               # the cluster default before it
    (False, {"1": "true", "": "false"}, True),  # the node config before the cluster default
    (False, {"2": "true"}, False),              # another node's config is not the controller's
]


@pytest.mark.parametrize("static, dynamic, elected", CONTROLLER_LAYERS)
def test_a_topic_without_the_setting_takes_the_active_controllers_own(monkeypatch, static, dynamic, elected):
    """ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic: the topic's config, then
    the active controller's node config, the cluster default, its static setting. Broker 2,
    unfenced while every partition is leaderless and outside every ISR and ELR, can lead only
    uncleanly: its unfencing (leader_and_isr_updates) elects it where the layers allow it."""
    async def go():
        _seeded(monkeypatch)
        quorum, leader, running = await _start(FakeClock(), static_unclean_election=static)
        async with running:
            await leader.write(lambda: ([frame("ConfigRecord", resource_type=BROKER_RESOURCE, resource_name=name,
                                               name="unclean.leader.election.enable", value=value)
                                         for name, value in dynamic.items()], None))
            for b in (1, 2, 3):
                await register_unfenced(quorum, leader, b)
            orders = await create(leader, "orders", partitions=2, rf=3)
            for b in (2, 3, 1):
                await _beat(leader, quorum, b, want_fence=True)
                await until(lambda: not leader.moves and not leader.pipeline.in_flight, "fenced")
            partitions = leader.image.topics_by_id[orders].partitions.values()
            assert all(p.leader == NO_LEADER and 2 not in p.isr and 2 not in p.elr for p in partitions)
            assert not (await _beat(leader, quorum, 2)).is_fenced
            await until(lambda: not leader.moves and not leader.pipeline.in_flight, "unfenced")
            partitions = leader.image.topics_by_id[orders].partitions.values()
            expected = (2, RECOVERING) if elected else (NO_LEADER, 0)
            assert [(p.leader, p.leader_recovery_state) for p in partitions] == [expected, expected]
    run(go())
