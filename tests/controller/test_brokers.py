"""Brokers register, heartbeat, get unfenced, fenced and shut down as Kafka's controller
handles them; partition leadership follows (the record shapes match Kafka's, see the
reference logs of ../shared/reference/kraft-data: Yashasvi960 (ELR) and ArthurArutunyan04)."""
import uuid

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.metadata import decode_metadata_record
from kafkawire.protocol.error_codes import Errors

from .harness import (Ctx, FakeClock, FakeQuorum, Running, add_controller, broker_request, heartbeat,
                      run, until)


async def start(mv=29, clock=None):
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, mv=mv, clock=clock)
    running = Running(leader)
    await running.__aenter__()
    quorum.elect(1)
    await until(lambda: leader.is_active() and leader.registration.registered(), "activation and registration")
    return quorum, leader, running


async def call(controller, api_key, request):
    return await controller.handlers()[api_key].handle(Ctx(0), request)


async def register_unfenced(quorum, leader, broker_id, **kwargs):
    reply = await call(leader, 62, broker_request(broker_id, **kwargs))
    assert reply.error_code == 0, Errors.for_code(reply.error_code)
    beat = await call(leader, 63, heartbeat(broker_id, reply.broker_epoch, quorum.end_offset))
    assert beat.error_code == 0 and not beat.is_fenced
    return reply.broker_epoch


def new_records(quorum, since):
    """The records from offset ``since`` on, NoOpRecords left out (the fake clock moving makes some)."""
    records = [(offset, decode_metadata_record(v)) for offset, _, v in quorum.entries if offset >= since]
    return [(offset, r) for offset, r in records if r.type_name != "NoOpRecord"]


def test_a_broker_registers_fenced_with_its_record_offset_as_epoch_then_a_heartbeat_unfences_it():
    async def go():
        quorum, leader, running = await start()
        async with running:
            log_dir = uuid.uuid4()
            request = broker_request(5, log_dirs=[log_dir], listeners=(("PLAINTEXT", "b5", 9092),
                                                                      ("PLAINTEXT_HOST", "localhost", 29092)))
            reply = await call(leader, 62, request)
            (offset, record), = [(o, r) for o, r in new_records(quorum, 0) if r.type_name == "RegisterBrokerRecord"]
            assert reply.error_code == 0 and reply.broker_epoch == offset
            assert record.version == 3
            m = record.message
            assert (m.broker_id, m.broker_epoch, m.incarnation_id, m.fenced, m.log_dirs, m.rack) == (
                5, offset, request.incarnation_id, True, [log_dir], None)
            assert [e.name for e in m.end_points] == ["PLAINTEXT", "PLAINTEXT_HOST"]     # request order
            assert leader.image.brokers[5].fenced

            behind = await call(leader, 63, heartbeat(5, offset, offset - 1))
            assert (behind.is_fenced, behind.is_caught_up, behind.should_shut_down) == (True, False, False)
            assert quorum.end_offset == offset + 1                  # nothing written
            beat = await call(leader, 63, heartbeat(5, offset, offset))
            assert (beat.error_code, beat.is_fenced, beat.is_caught_up) == (0, False, True)
            (_, change), = new_records(quorum, offset + 1)
            assert (change.type_name, change.version) == ("BrokerRegistrationChangeRecord", 0)
            assert (change.message.broker_id, change.message.broker_epoch, change.message.fenced) == (5, offset, -1)
            assert not leader.image.brokers[5].fenced
            again = await call(leader, 63, heartbeat(5, offset, quorum.end_offset))
            assert not again.is_fenced and new_records(quorum, offset + 2) == []
    run(go())


def test_registration_and_heartbeat_refusals():
    async def go():
        quorum, leader, running = await start()
        async with running:
            assert (await call(leader, 62, broker_request(1, cluster_id="another"))).error_code == \
                Errors.INCONSISTENT_CLUSTER_ID
            assert (await call(leader, 62, broker_request(1, log_dirs=[]))).error_code == Errors.INVALID_REGISTRATION
            reserved = uuid.UUID(int=1)
            assert (await call(leader, 62, broker_request(1, log_dirs=[reserved]))).error_code == \
                Errors.INVALID_REGISTRATION
            too_old = {"metadata.version": (7, 28)}
            assert (await call(leader, 62, broker_request(1, features=too_old))).error_code == \
                Errors.UNSUPPORTED_VERSION
            assert (await call(leader, 63, heartbeat(9, 3, 0))).error_code == Errors.STALE_BROKER_EPOCH
            epoch = await register_unfenced(quorum, leader, 1)
            stale = await call(leader, 63, heartbeat(1, epoch - 1, quorum.end_offset))
            assert (stale.error_code, stale.is_fenced) == (Errors.STALE_BROKER_EPOCH, True)
            # Another process claiming a broker id whose session is alive is refused; the same
            # incarnation registering again amends its registration: Kafka 4.3.1 keeps its epoch
            # and its fencing ("Amending registration of broker ...").
            assert (await call(leader, 62, broker_request(1))).error_code == Errors.DUPLICATE_BROKER_REGISTRATION
            incarnation = leader.image.brokers[1].incarnation_id
            log_dirs = list(leader.image.brokers[1].directories)
            again = await call(leader, 62, broker_request(1, incarnation=incarnation, log_dirs=log_dirs))
            assert again.error_code == 0 and again.broker_epoch == epoch
            assert not leader.image.brokers[1].fenced and leader.image.brokers[1].epoch == epoch
    run(go())


async def create(leader, name, partitions=1, rf=1):
    response = await call(leader, 19, CreateTopicsRequest(topics=[CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf)], timeout_ms=5000))
    assert response.topics[0].error_code == 0, response.topics[0].error_message
    return response.topics[0].topic_id


def partition_changes(quorum, since):
    return [r.message for _, r in new_records(quorum, since) if r.type_name == "PartitionChangeRecord"]


def _fence_by_session_expiry(mv):
    clock = FakeClock()

    async def go():
        quorum, leader, running = await start(mv, clock)
        async with running:
            epoch = await register_unfenced(quorum, leader, 1)
            topic_id = await create(leader, "orders", partitions=2)
            mark = quorum.end_offset
            clock.now += 9001                      # broker.session.timeout.ms passes without a heartbeat
            leader.poke()
            await until(lambda: leader.image.brokers[1].fenced, "the broker fenced")
            fenced = new_records(quorum, mark)
            # The broker comes back: a new process, after a clean shutdown (BrokerRegistration
            # v3+ names the epoch it had; an unclean one is in test_broker_lifecycle.py).
            # It keeps its log directory (meta.properties): a replica in another one would be offline.
            comeback = broker_request(1, log_dirs=list(leader.image.brokers[1].directories))
            comeback.previous_broker_epoch = epoch
            beat = await leader.handlers()[62].handle(Ctx(4), comeback)
            epoch2 = beat.broker_epoch
            mark2 = quorum.end_offset
            await call(leader, 63, heartbeat(1, epoch2, quorum.end_offset))
            unfenced = new_records(quorum, mark2)
            return epoch, topic_id, fenced, unfenced, leader
    return run(go())


def test_an_expired_session_fences_the_broker_and_its_partitions_keep_it_in_the_isr_without_elr():
    epoch, topic_id, fenced, unfenced, leader = _fence_by_session_expiry(25)
    names = [r.type_name for _, r in fenced]
    assert names == ["PartitionChangeRecord", "PartitionChangeRecord", "BrokerRegistrationChangeRecord"]
    for pid, (_, r) in enumerate(fenced[:2]):
        m = r.message
        # KIP-841: the last ISR member stays; only the leader goes (ArthurArutunyan04 offsets 243-252).
        assert (r.version, m.topic_id, m.partition_id, m.leader, m.isr, m.eligible_leader_replicas) == (
            2, topic_id, pid, -1, None, None)
    assert (fenced[2][1].message.fenced, fenced[2][1].message.broker_epoch) == (1, epoch)
    assert [r.type_name for _, r in unfenced] == ["BrokerRegistrationChangeRecord", "PartitionChangeRecord",
                                                  "PartitionChangeRecord"]
    assert [(r.message.leader, r.message.isr) for _, r in unfenced[1:]] == [(1, None), (1, None)]
    assert all(p.leader == 1 and p.isr == (1,) for p in leader.image.topics_by_name["orders"].partitions.values())


def test_with_eligible_leader_replicas_a_fenced_last_replica_moves_to_the_elr_and_back():
    epoch, topic_id, fenced, unfenced, leader = _fence_by_session_expiry(29)
    m = fenced[0][1].message
    # As Kafka 4.1 writes it (Yashasvi960 offsets 3568-3585, 3629-3632).
    assert (m.isr, m.leader, m.eligible_leader_replicas, m.last_known_elr) == ([], -1, [1], [1])
    back = unfenced[1][1].message
    assert (back.isr, back.leader, back.eligible_leader_replicas, back.last_known_elr) == ([1], 1, [], [])
    partition = leader.image.topics_by_name["orders"].partitions[0]
    assert (partition.isr, partition.leader, partition.elr, partition.last_known_elr) == ((1,), 1, (), ())


def test_a_broker_leading_partitions_goes_through_controlled_shutdown():
    async def go():
        quorum, leader, running = await start(25)
        async with running:
            for b in (1, 2):
                await register_unfenced(quorum, leader, b)
            topic_id = await create(leader, "payments", partitions=2, rf=2)
            parts = leader.image.topics_by_name["payments"].partitions
            led_by_1 = [pid for pid, p in parts.items() if p.leader == 1]
            assert led_by_1, "the placer gives each broker a leader"
            mark = quorum.end_offset
            epoch1 = leader.image.brokers[1].epoch
            first = await call(leader, 63, heartbeat(1, epoch1, quorum.end_offset, want_shut_down=True))
            assert (first.is_fenced, first.should_shut_down) == (False, False)
            records = new_records(quorum, mark)
            assert (records[0][1].type_name, records[0][1].version) == ("BrokerRegistrationChangeRecord", 1)
            assert records[0][1].message.in_controlled_shutdown == 1
            # Broker 1 leaves every ISR; broker 2 leads everything.
            moved = leader.image.topics_by_name["payments"].partitions
            assert all(p.leader == 2 and p.isr == (2,) for p in moved.values())
            assert [(m.partition_id, m.isr, m.leader) for m in partition_changes(quorum, mark)] == [
                (pid, [2], 2 if pid in led_by_1 else -2) for pid in sorted(parts)]
            await call(leader, 63, heartbeat(2, leader.image.brokers[2].epoch, quorum.end_offset))
            second = await call(leader, 63, heartbeat(1, epoch1, quorum.end_offset, want_shut_down=True))
            assert (second.is_fenced, second.should_shut_down) == (True, True)
            last = new_records(quorum, mark)[-1][1]
            assert (last.type_name, last.message.fenced) == ("BrokerRegistrationChangeRecord", 1)
            assert leader.image.brokers[1].fenced
            return topic_id
    run(go())
