"""AlterPartition (API 56) as Kafka 4.3.1's ReplicationControlManager.alterPartition answers a
partition leader: ISR shrink and expand through the PartitionChangeBuilder (with the ELR at
4.3-IV0), the epoch checks in Kafka's order and their error codes."""
from kafkawire.messages.alter_partition_request import AlterPartitionRequest, BrokerState, PartitionData, TopicData
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, FakeClock, run
from .test_brokers import call, create, new_records, register_unfenced, start


async def alter(leader, broker_id, topic_id, pid, isr, *, leader_epoch=None, partition_epoch=None, version=3,
                broker_epoch=None, recovery=0, isr_epochs=None):
    partition = leader.image.topics_by_id[topic_id].partitions[pid]
    epochs = isr_epochs or {}
    data = PartitionData(partition_index=pid,
                         leader_epoch=partition.leader_epoch if leader_epoch is None else leader_epoch,
                         partition_epoch=partition.partition_epoch if partition_epoch is None else partition_epoch,
                         leader_recovery_state=recovery)
    if version >= 3:
        data.new_isr_with_epochs = [BrokerState(broker_id=b, broker_epoch=epochs.get(b, leader.image.brokers[b].epoch
                                                                                     if b in leader.image.brokers else -1))
                                    for b in isr]
    else:
        data.new_isr = list(isr)
    request = AlterPartitionRequest(
        broker_id=broker_id, broker_epoch=leader.image.brokers[broker_id].epoch if broker_epoch is None else broker_epoch,
        topics=[TopicData(topic_id=topic_id, partitions=[data])])
    return await leader.handlers()[56].handle(Ctx(version), request)


async def three_brokers_one_partition(mv=30, clock=None):
    quorum, leader, running = await start(mv, clock)
    for b in (1, 2, 3):
        await register_unfenced(quorum, leader, b)
    topic_id = await create(leader, "events", partitions=1, rf=3)
    return quorum, leader, running, topic_id


def test_the_leader_shrinks_then_expands_the_isr():
    async def go():
        quorum, leader, running, topic_id = await three_brokers_one_partition()
        async with running:
            p = leader.image.topics_by_id[topic_id].partitions[0]
            follower = next(r for r in p.replicas if r != p.leader)
            kept = [r for r in p.isr if r != follower]
            mark = quorum.end_offset
            shrunk = await alter(leader, p.leader, topic_id, 0, kept)
            (part,) = shrunk.topics[0].partitions
            assert (shrunk.error_code, part.error_code, part.leader_id, part.isr) == (0, 0, p.leader, kept)
            assert (part.leader_epoch, part.partition_epoch) == (p.leader_epoch, p.partition_epoch + 1)
            (_, record), = new_records(quorum, mark)
            m = record.message
            # Kafka at 4.3-IV0: PartitionChangeRecord v2 with only the ISR (min.insync.replicas 1: no ELR).
            assert (record.type_name, record.version, m.isr, m.leader, m.eligible_leader_replicas,
                    m.last_known_elr, m.leader_recovery_state) == ("PartitionChangeRecord", 2, kept, -2, None, None, -1)
            mark = quorum.end_offset
            grown = await alter(leader, p.leader, topic_id, 0, kept + [follower])
            assert grown.topics[0].partitions[0].isr == kept + [follower]
            assert leader.image.topics_by_id[topic_id].partitions[0].partition_epoch == p.partition_epoch + 2
            same = await alter(leader, p.leader, topic_id, 0, kept + [follower])
            assert same.topics[0].partitions[0].error_code == 0
            assert len(new_records(quorum, mark)) == 1          # an unchanged ISR writes nothing
    run(go())


def test_refusals_in_kafkas_order():
    async def go():
        quorum, leader, running, topic_id = await three_brokers_one_partition()
        async with running:
            p = leader.image.topics_by_id[topic_id].partitions[0]
            other = next(r for r in p.replicas if r != p.leader)
            mark = quorum.end_offset

            async def code(*args, **kwargs):
                response = await alter(leader, *args, **kwargs)
                return response.error_code or response.topics[0].partitions[0].error_code

            assert await code(p.leader, topic_id, 0, list(p.isr), leader_epoch=p.leader_epoch + 1) == \
                Errors.NOT_CONTROLLER
            assert await code(p.leader, topic_id, 0, list(p.isr), partition_epoch=p.partition_epoch + 1) == \
                Errors.NOT_CONTROLLER
            assert await code(p.leader, topic_id, 0, list(p.isr), leader_epoch=p.leader_epoch - 1) == \
                Errors.FENCED_LEADER_EPOCH
            assert await code(other, topic_id, 0, list(p.isr)) == Errors.INVALID_REQUEST
            assert await code(p.leader, topic_id, 0, list(p.isr), partition_epoch=p.partition_epoch - 1) == \
                Errors.INVALID_UPDATE_VERSION
            assert await code(p.leader, topic_id, 0, [p.leader, 9]) == Errors.INVALID_REQUEST     # not a replica
            assert await code(p.leader, topic_id, 0, [other]) == Errors.INVALID_REQUEST           # leader left out
            assert await code(p.leader, topic_id, 0, [p.leader, other], recovery=1) == Errors.INVALID_REQUEST
            assert await code(p.leader, topic_id, 0, [p.leader, other],
                              isr_epochs={other: leader.image.brokers[other].epoch + 1}) == Errors.INELIGIBLE_REPLICA
            assert await code(p.leader, topic_id, 0, list(p.isr), broker_epoch=0) == Errors.STALE_BROKER_EPOCH
            missing = await alter(leader, p.leader, topic_id, 0, list(p.isr))
            missing_request_topic = missing.topics[0]
            assert missing_request_topic.partitions[0].error_code == 0
            assert new_records(quorum, mark) == []
    run(go())


def test_unknown_topic_and_partition_and_a_fenced_isr_member():
    import uuid
    clock = FakeClock()

    async def go():
        quorum, leader, running, topic_id = await three_brokers_one_partition(clock=clock)
        async with running:
            p = leader.image.topics_by_id[topic_id].partitions[0]
            unknown = await alter_raw(leader, p.leader, uuid.uuid4(), 0)
            assert unknown.topics[0].partitions[0].error_code == Errors.UNKNOWN_TOPIC_ID
            no_partition = await alter_raw(leader, p.leader, topic_id, 5)
            assert no_partition.topics[0].partitions[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
            # A follower stops heartbeating and is fenced; the leader may not take it back into the ISR.
            follower = next(r for r in p.replicas if r != p.leader)
            for _ in range(10):
                clock.now += 1000
                for b in (1, 2, 3):
                    if b != follower:
                        await call(leader, 63, heartbeat_of(leader, b, quorum))
            leader.poke()
            from .harness import until
            await until(lambda: leader.image.brokers[follower].fenced, "the silent follower fenced")
            p = leader.image.topics_by_id[topic_id].partitions[0]
            assert follower not in p.isr
            back = await alter(leader, p.leader, topic_id, 0, list(p.isr) + [follower])
            assert back.topics[0].partitions[0].error_code == Errors.INELIGIBLE_REPLICA
    run(go())


def heartbeat_of(leader, broker_id, quorum):
    from .harness import heartbeat
    return heartbeat(broker_id, leader.image.brokers[broker_id].epoch, quorum.end_offset)


async def alter_raw(leader, broker_id, topic_id, pid):
    request = AlterPartitionRequest(broker_id=broker_id, broker_epoch=leader.image.brokers[broker_id].epoch,
                                    topics=[TopicData(topic_id=topic_id, partitions=[PartitionData(
                                        partition_index=pid, new_isr_with_epochs=[BrokerState(broker_id=broker_id)])])])
    return await leader.handlers()[56].handle(Ctx(3), request)


def test_version_2_names_bare_broker_ids_and_a_shrink_below_min_isr_fills_the_elr():
    async def go():
        quorum, leader, running = await start(30)
        async with running:
            for b in (1, 2, 3):
                await register_unfenced(quorum, leader, b)
            from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
            reply = await call(leader, 19, CreateTopicsRequest(topics=[CreatableTopic(
                name="strict", num_partitions=1, replication_factor=3,
                configs=[CreatableTopicConfig(name="min.insync.replicas", value="2")])], timeout_ms=5000))
            topic_id = reply.topics[0].topic_id
            p = leader.image.topics_by_id[topic_id].partitions[0]
            mark = quorum.end_offset
            response = await alter(leader, p.leader, topic_id, 0, [p.leader], version=2)
            assert response.topics[0].partitions[0].isr == [p.leader]
            (_, record), = new_records(quorum, mark)
            m = record.message
            dropped = sorted(r for r in p.isr if r != p.leader)
            # ISR 1 < min.insync.replicas 2: the dropped members become eligible leader replicas.
            assert (m.isr, m.leader, m.eligible_leader_replicas, m.last_known_elr) == ([p.leader], -2, dropped, None)
            assert leader.image.topics_by_id[topic_id].partitions[0].elr == tuple(dropped)
            mark = quorum.end_offset
            await alter(leader, p.leader, topic_id, 0, list(p.isr), version=2)
            (_, record), = new_records(quorum, mark)
            assert (record.message.isr, record.message.eligible_leader_replicas) == (list(p.isr), [])
    run(go())



def test_a_leader_elected_uncleanly_reports_its_recovery_and_cannot_go_back():
    from .test_broker_lifecycle import beat_all_but
    from .harness import broker_request, heartbeat, until
    clock = FakeClock()

    async def go():
        quorum, leader, running = await start(30, clock)
        async with running:
            await register_unfenced(quorum, leader, 1)
            topic_id = await create(leader, "solo", partitions=1)
            await beat_all_but(leader, quorum, clock, 1)
            await until(lambda: leader.image.brokers[1].fenced, "the broker fenced")
            dirs = list(leader.image.brokers[1].directories)
            reply = await leader.handlers()[62].handle(Ctx(4), broker_request(1, log_dirs=dirs))   # unclean
            await call(leader, 63, heartbeat(1, reply.broker_epoch, quorum.end_offset))
            p = leader.image.topics_by_id[topic_id].partitions[0]
            assert (p.leader, p.leader_recovery_state) == (1, 1)          # RECOVERING
            still = await alter(leader, 1, topic_id, 0, [1], recovery=1)
            assert still.topics[0].partitions[0].error_code == 0        # still recovering: nothing changes
            mark = quorum.end_offset
            done = await alter(leader, 1, topic_id, 0, [1], recovery=0)
            (part,) = done.topics[0].partitions
            assert (part.error_code, part.leader_recovery_state) == (0, 0)
            (_, record), = new_records(quorum, mark)
            assert (record.message.leader_recovery_state, record.message.isr, record.message.leader) == (0, None, -2)
            back = await alter(leader, 1, topic_id, 0, [1], recovery=1)
            assert back.topics[0].partitions[0].error_code == Errors.INVALID_REQUEST      # RECOVERED -> RECOVERING
    run(go())
