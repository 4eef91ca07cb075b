"""A broker's life on the controller as Kafka 4.3.1 handles it: killed (session expiry) while
leading, its partitions led by another ISR member; back as a new incarnation after an
unclean shutdown (out of every ISR and ELR, in the registration's batch) or a clean one; its
leader taking it back into the ISR (AlterPartition); controlled shutdown moving leaders away."""
from kafkawire.metadata.registrations import NO_LEADER

from .harness import Ctx, FakeClock, broker_request, heartbeat, run, until
from .test_alter_partition import alter
from .test_brokers import call, create, new_records, register_unfenced, start


async def beat_all_but(leader, quorum, clock, silent, rounds=10):
    """Advance the clock past the session timeout while every broker but ``silent`` heartbeats."""
    for _ in range(rounds):
        clock.now += 1000
        for b in sorted(leader.image.brokers):
            if b != silent and not leader.image.brokers[b].fenced:
                await call(leader, 63, heartbeat(b, leader.image.brokers[b].epoch, quorum.end_offset))
    leader.poke()


def test_a_killed_leader_is_fenced_its_partitions_move_within_the_isr_and_it_rejoins_after_restart():
    clock = FakeClock()

    async def go():
        quorum, leader, running = await start(30, clock)
        async with running:
            for b in (1, 2, 3):
                await register_unfenced(quorum, leader, b)
            topic_id = await create(leader, "orders", partitions=3, rf=3)
            parts = dict(leader.image.topics_by_id[topic_id].partitions)
            victim = parts[0].leader
            led = sorted(pid for pid, p in parts.items() if p.leader == victim)
            old_epoch = leader.image.brokers[victim].epoch
            mark = quorum.end_offset
            await beat_all_but(leader, quorum, clock, victim)
            await until(lambda: leader.image.brokers[victim].fenced, "the killed broker fenced")
            records = new_records(quorum, mark)
            changes = [r.message for _, r in records if r.type_name == "PartitionChangeRecord"]
            # Every partition loses it from its ISR; the ones it led get the next ISR member in replica order.
            assert sorted(m.partition_id for m in changes) == [0, 1, 2]
            for m in changes:
                before = parts[m.partition_id]
                assert m.isr == [r for r in before.isr if r != victim]
                expected_leader = next(r for r in before.replicas if r in m.isr) if m.partition_id in led else -2
                assert m.leader == expected_leader and m.eligible_leader_replicas is None
            assert records[-1][1].type_name == "BrokerRegistrationChangeRecord"
            now = leader.image.topics_by_id[topic_id].partitions
            assert all(p.leader != victim and p.leader != NO_LEADER and victim not in p.isr for p in now.values())

            # kill -9 leaves no clean-shutdown mark: PreviousBrokerEpoch -1 in a v4 registration.
            mark = quorum.end_offset
            dirs = list(leader.image.brokers[victim].directories)
            reply = await leader.handlers()[62].handle(Ctx(4), broker_request(victim, log_dirs=dirs))
            assert reply.error_code == 0 and reply.broker_epoch == mark and reply.broker_epoch != old_epoch
            assert [r.type_name for _, r in new_records(quorum, mark)] == ["RegisterBrokerRecord"]
            beat = await call(leader, 63, heartbeat(victim, reply.broker_epoch, quorum.end_offset))
            assert beat.error_code == 0 and not beat.is_fenced
            # Its followers' leaders take it back once it has caught up.
            for pid in sorted(now):
                p = leader.image.topics_by_id[topic_id].partitions[pid]
                response = await alter(leader, p.leader, topic_id, pid, list(p.isr) + [victim])
                assert response.topics[0].partitions[0].error_code == 0
            assert all(victim in p.isr for p in leader.image.topics_by_id[topic_id].partitions.values())
    run(go())


def _single_replica_killed_and_restarted(clean: bool):
    clock = FakeClock()

    async def go():
        quorum, leader, running = await start(30, clock)
        async with running:
            epoch = await register_unfenced(quorum, leader, 1)
            topic_id = await create(leader, "solo", partitions=1)
            await beat_all_but(leader, quorum, clock, 1)
            await until(lambda: leader.image.brokers[1].fenced, "the broker fenced")
            p = leader.image.topics_by_id[topic_id].partitions[0]
            assert (p.isr, p.elr, p.last_known_elr, p.leader) == ((), (1,), (1,), NO_LEADER)
            mark = quorum.end_offset
            request = broker_request(1, log_dirs=list(leader.image.brokers[1].directories))
            if clean:
                request.previous_broker_epoch = epoch
            reply = await leader.handlers()[62].handle(Ctx(4), request)
            registered = new_records(quorum, mark)
            mark2 = quorum.end_offset
            await call(leader, 63, heartbeat(1, reply.broker_epoch, quorum.end_offset))
            unfenced = new_records(quorum, mark2)
            return reply, mark, registered, unfenced, leader.image.topics_by_id[topic_id].partitions[0]
    return run(go())


def test_an_unclean_restart_leaves_the_elr_in_the_registration_batch_then_the_last_leader_is_elected_uncleanly():
    reply, mark, registered, unfenced, partition = _single_replica_killed_and_restarted(clean=False)
    assert [r.type_name for _, r in registered] == ["PartitionChangeRecord", "RegisterBrokerRecord"]
    change = registered[0][1].message
    assert (change.isr, change.leader, change.eligible_leader_replicas, change.last_known_elr) == (None, -2, [], None)
    assert reply.broker_epoch == mark          # the batch's first offset (nextWriteOffset), as in Kafka
    assert registered[1][1].message.broker_epoch == mark
    back = unfenced[1][1].message
    # handleBrokerUnfenced: the last known leader is the only candidate left; electing it is unclean.
    assert (back.leader, back.isr, back.leader_recovery_state, back.last_known_elr) == (1, [1], 1, [])
    assert (partition.leader, partition.isr, partition.leader_recovery_state) == (1, (1,), 1)


def test_a_clean_restart_keeps_the_elr_and_the_replica_leads_again_cleanly():
    reply, mark, registered, unfenced, partition = _single_replica_killed_and_restarted(clean=True)
    assert [r.type_name for _, r in registered] == ["RegisterBrokerRecord"]
    back = unfenced[1][1].message
    assert (back.leader, back.isr, back.eligible_leader_replicas, back.leader_recovery_state) == (1, [1], [], -1)
    assert (partition.leader, partition.isr, partition.leader_recovery_state) == (1, (1,), 0)


def test_controlled_shutdown_moves_every_leadership_to_another_isr_member_before_shutting_down():
    async def go():
        quorum, leader, running = await start(30)
        async with running:
            for b in (1, 2, 3):
                await register_unfenced(quorum, leader, b)
            topic_id = await create(leader, "orders", partitions=3, rf=3)
            parts = dict(leader.image.topics_by_id[topic_id].partitions)
            leaving = parts[1].leader
            epoch = leader.image.brokers[leaving].epoch
            first = await call(leader, 63, heartbeat(leaving, epoch, quorum.end_offset, want_shut_down=True))
            assert (first.is_fenced, first.should_shut_down) == (False, False)
            now = leader.image.topics_by_id[topic_id].partitions
            assert all(p.leader != leaving and leaving not in p.isr for p in now.values())
            assert leader.image.brokers[leaving].in_controlled_shutdown
            for b in (1, 2, 3):
                if b != leaving:
                    await call(leader, 63, heartbeat(b, leader.image.brokers[b].epoch, quorum.end_offset))
            second = await call(leader, 63, heartbeat(leaving, epoch, quorum.end_offset, want_shut_down=True))
            assert (second.is_fenced, second.should_shut_down) == (True, True)
    run(go())


def test_a_registration_must_name_metadata_version_and_every_finalized_feature_it_omits_must_be_off():
    from kafkawire.protocol.error_codes import Errors
    from kafkawire.controller.versions import SUPPORTED_FEATURES

    async def go():
        quorum, leader, running = await start(30)
        async with running:
            without_mv = {n: r for n, r in SUPPORTED_FEATURES.items() if n != "metadata.version"}
            refused = await call(leader, 62, broker_request(1, features=without_mv))
            assert refused.error_code == Errors.INVALID_REGISTRATION
            finalized = {n for n, level in leader.state.finalized_features().items() if level > 0}
            omitted = sorted(finalized - {"metadata.version"})
            assert omitted, "the 4.3-IV0 bootstrap finalizes features besides metadata.version"
            partial = {n: r for n, r in SUPPORTED_FEATURES.items() if n != omitted[0]}
            assert (await call(leader, 62, broker_request(1, features=partial))).error_code == \
                Errors.UNSUPPORTED_VERSION
            assert (await call(leader, 62, broker_request(1))).error_code == 0
    run(go())
