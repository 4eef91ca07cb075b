"""A new active controller appends the bootstrap records as Kafka's ActivationRecordsGenerator
does, once, and then NoOpRecords every metadata.max.idle.interval.ms."""
import pytest

from kafkawire.controller.activation import BootstrapError, activation_records
from kafkawire.metadata import decode_metadata_record
from kafkawire.metadata.frame import encode_metadata_record
from kafkawire import messages

from .harness import FakeClock, FakeQuorum, Running, add_controller, bootstrap, heartbeat, run, until
from .test_brokers import call, register_unfenced, start


def decoded(records):
    return [decode_metadata_record(v) for v in records]


def test_an_empty_log_gets_the_bootstrap_records_in_one_transaction_batch():
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1)

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(leader.is_active, "activation")
    run(go())
    first = decoded(quorum.batches[0])
    assert [(type(r.message).NAME, r.version) for r in first] == (
        [("BeginTransactionRecord", 0)] + [("FeatureLevelRecord", 0)] * 6 + [("ConfigRecord", 0),
                                                                             ("EndTransactionRecord", 0)])
    assert first[0].message.name == "Bootstrap records"
    # The bootstrap records go out byte for byte as bootstrap.checkpoint holds them.
    assert quorum.batches[0][1:7] == bootstrap(29)
    config = first[7].message
    assert (config.resource_type, config.resource_name, config.name, config.value) == (4, "", "min.insync.replicas", "1")
    assert leader.image.metadata_version == 29
    assert leader.image.configs[(4, "")] == {"min.insync.replicas": "1"}


def test_before_metadata_transactions_the_bootstrap_is_a_plain_atomic_batch():
    batch = activation_records(metadata_version=None, transaction_start_offset=-1, bootstrap_records=bootstrap(12),
                               bootstrap_source="test").records
    assert [type(r.message).NAME for r in decoded(batch)] == ["FeatureLevelRecord"]
    assert batch == bootstrap(12)


def test_without_eligible_leader_replicas_no_min_insync_config_is_written():
    batch = activation_records(metadata_version=None, transaction_start_offset=-1, bootstrap_records=bootstrap(25),
                               bootstrap_source="test").records
    assert [type(r.message).NAME for r in decoded(batch)] == (
        ["BeginTransactionRecord"] + ["FeatureLevelRecord"] * 3 + ["EndTransactionRecord"])


def test_a_log_with_a_metadata_version_gets_nothing_unless_a_transaction_was_left_open():
    assert activation_records(metadata_version=29, transaction_start_offset=-1, bootstrap_records=bootstrap(29),
                              bootstrap_source="test").records == []
    aborted = decoded(activation_records(metadata_version=29, transaction_start_offset=17,
                                         bootstrap_records=bootstrap(29), bootstrap_source="test").records)
    assert [(type(r.message).NAME, r.message.reason) for r in aborted] == [("AbortTransactionRecord",
                                                                             "Controller failover")]


def test_a_partial_bootstrap_transaction_is_aborted_and_the_bootstrap_written_again():
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1)
    begin = encode_metadata_record(messages.by_name("BeginTransactionRecord")(name="Bootstrap records"), 0)
    quorum.elect(2)                            # a previous leader wrote half a bootstrap and died
    quorum.commit([begin] + bootstrap(29)[:2])
    assert leader.state.transaction_start_offset == 1 and leader.image.metadata_version is None

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(leader.is_active, "activation")
    run(go())
    names = [type(r.message).NAME for r in decoded(quorum.batches[1])]      # the batch after the partial one
    assert names[:2] == ["AbortTransactionRecord", "BeginTransactionRecord"] and names[-1] == "EndTransactionRecord"
    assert leader.image.metadata_version == 29 and not leader.in_transaction


def test_bootstrap_without_a_metadata_version_is_refused_naming_the_source():
    with pytest.raises(BootstrapError, match="No FeatureLevelRecord for metadata.version was found in the bootstrap "
                                             "metadata from /x/bootstrap.checkpoint"):
        activation_records(metadata_version=None, transaction_start_offset=-1, bootstrap_records=bootstrap(29)[1:],
                           bootstrap_source="/x/bootstrap.checkpoint")


def test_a_controller_that_cannot_activate_says_why_and_answers_not_controller():
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1)
    leader.bootstrap_records = bootstrap(29)[1:]

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(lambda: leader.activation_error is not None, "the activation error")
    run(go())
    assert "No FeatureLevelRecord for metadata.version" in leader.activation_error
    assert quorum.entries == [] and not leader.is_active()


def test_a_new_leader_activates_only_once_it_has_caught_up():
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1)
    caught_up = [False]
    leader.raft.leader_caught_up = lambda: caught_up[0]

    async def go():
        async with Running(leader):
            quorum.elect(1)
            for _ in range(20):
                await until(lambda: True, "a turn of the loop")
            assert not leader.is_active() and quorum.entries == []
            caught_up[0] = True
            leader.poke()                       # the driver pokes when the high watermark moves
            await until(leader.is_active, "activation")
    run(go())
    assert quorum.names()[0] == "BeginTransactionRecord"


def test_the_active_controller_appends_a_noop_each_idle_interval_and_stops_when_deposed():
    quorum = FakeQuorum()
    clock = FakeClock()
    leader = add_controller(quorum, 1, clock=clock, max_idle_interval_ms=500)
    follower = add_controller(quorum, 2, clock=FakeClock())

    async def go():
        async with Running(leader, follower):
            quorum.elect(1)
            await until(leader.is_active, "activation")
            await until(lambda: len(quorum.batches) >= 3, "both registrations")
            before = quorum.names().count("NoOpRecord")
            for _ in range(3):
                clock.now += 500
                leader.poke()
                count = quorum.names().count("NoOpRecord")
                await until(lambda: quorum.names().count("NoOpRecord") == count + 1, "a NoOpRecord")
            assert quorum.names().count("NoOpRecord") == before + 3
            quorum.elect(2)
            await until(follower.is_active, "the follower's activation")
            clock.now += 5000
            leader.poke()
            await until(lambda: True, "a turn")
    run(go())
    noops = [offset for offset, m in quorum.records() if type(m).NAME == "NoOpRecord"]
    assert len(noops) == 3
    # The new leader found a metadata.version in the log: no second bootstrap.
    assert quorum.names().count("BeginTransactionRecord") == 1


def test_an_idle_interval_of_zero_writes_no_noop_records():
    """metadata.max.idle.interval.ms=0 turns NoOpRecords off, as in Kafka (the log then stays
    still, which the interop tests comparing offsets need)."""
    quorum = FakeQuorum()
    clock = FakeClock()
    leader = add_controller(quorum, 1, clock=clock, max_idle_interval_ms=0)

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(leader.is_active, "activation")
            assert leader._seconds_to_next_duty() is None
            for _ in range(3):
                clock.now += 10_000
                leader.poke()
                for _ in range(5):
                    await until(lambda: True, "a turn of the loop")
    run(go())
    assert quorum.names().count("NoOpRecord") == 0
    assert quorum.names()[0] == "BeginTransactionRecord"        # it did activate


def test_a_new_active_controller_gives_every_unfenced_broker_a_whole_session_from_its_activation(caplog):
    """ClusterControlManager.activate: every unfenced broker's contact time is the activation's,
    however long ago (by the new leader's clock) it heartbeat the old leader; a failover fences
    nobody that heartbeats the new leader within broker.session.timeout.ms of its activation."""
    async def go():
        quorum, leader, running = await start()
        clock = FakeClock()
        other = add_controller(quorum, 2, clock=clock)
        for base, epoch, records in quorum.committed_batches:       # what it missed, joining late
            other.on_committed(base, epoch, 0, list(records))
        async with running, Running(other):
            epochs = {b: await register_unfenced(quorum, leader, b) for b in (1, 2)}
            clock.now += 60_000          # the heartbeats to the old leader are long past on this clock
            with caplog.at_level("INFO", logger="kafkawire.controller.controller"):
                quorum.elect(2)
                await until(other.is_active, "the new leader's activation")
            clock.now += other.sessions.session_timeout_ms           # a whole session: not expired yet
            other.poke()
            for _ in range(20):
                await until(lambda: True, "a turn of the loop")
            assert not other.image.brokers[1].fenced and not other.image.brokers[2].fenced
            reply = await call(other, 63, heartbeat(1, epochs[1], quorum.end_offset))
            assert reply.error_code == 0 and not reply.is_fenced
            clock.now += 1                                           # broker 2 never heartbeat the new leader
            other.poke()
            await until(lambda: other.image.brokers[2].fenced, "broker 2 fenced when its session ran out")
            assert not other.image.brokers[1].fenced
    run(go())
    active = [r.getMessage() for r in caplog.records if "is the active controller in epoch" in r.getMessage()
              and r.getMessage().startswith("controller 2 ")]
    assert len(active) == 1 and "the sessions of 2 brokers start now" in active[0], active
