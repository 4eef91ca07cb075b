"""A BrokerRegistration as Kafka 4.3.1's QuorumController.registerBroker and
ClusterControlManager.registerBroker judge it: the quorum's kraft.version is one of the
finalized features a broker must support; the feature an error names follows Kafka's order;
and a same-incarnation re-registration amends the broker's heartbeat session instead of
starting it afresh."""
from kafkawire.controller import cluster
from kafkawire.controller.errors import ApiError
from kafkawire.controller.versions import SUPPORTED_FEATURES
from kafkawire.messages.feature_level_record import FeatureLevelRecord
from kafkawire.metadata.frame import encode_metadata_record
from kafkawire.protocol.error_codes import Errors

from .harness import FakeClock, broker_request, heartbeat, run, until
from .test_brokers import call, create, register_unfenced, start


def features(**changes):
    """SUPPORTED_FEATURES with some ranges replaced (None leaves the feature out)."""
    result = {name.replace("_", "."): r for name, r in changes.items() if r is not None}
    for name, r in SUPPORTED_FEATURES.items():
        if name.replace(".", "_") not in changes:
            result[name] = r
    return result


def refusal(leader, request) -> ApiError:
    """What registerBroker throws for ``request`` (the response carries only the code)."""
    try:
        cluster.broker_registration_records(leader.state, request, cluster_id=leader.cluster_id, broker_epoch=100,
                                            sessions=leader.sessions, now_ms=leader.clock(),
                                            kraft_version=leader.raft.kraft_version())
    except ApiError as exc:
        return exc
    raise AssertionError("the registration was accepted")


def test_the_quorum_kraft_version_must_be_in_the_broker_range():
    async def go():
        quorum, leader, running = await start()
        async with running:
            quorum.kraft_version = 1
            only_0 = await call(leader, 62, broker_request(1, features=features(kraft_version=(0, 0))))
            assert only_0.error_code == Errors.UNSUPPORTED_VERSION
            # A broker that does not name kraft.version supports only level 0 of it.
            unnamed = await call(leader, 62, broker_request(1, features=features(kraft_version=None)))
            assert unnamed.error_code == Errors.UNSUPPORTED_VERSION
            assert refusal(leader, broker_request(1, features=features(kraft_version=None))).message == (
                "Unable to register because the broker does not support finalized version 1 of kraft.version. "
                "The broker wants a version between 0 and 0, inclusive.")
            assert (await call(leader, 62, broker_request(1))).error_code == 0

            quorum.kraft_version = 0
            only_1 = await call(leader, 62, broker_request(2, features=features(kraft_version=(1, 1))))
            assert only_1.error_code == Errors.UNSUPPORTED_VERSION
            assert (await call(leader, 62, broker_request(2, features=features(kraft_version=None)))).error_code == 0
    run(go())


def test_a_named_feature_the_controller_has_not_finalized_is_checked_at_level_0():
    async def go():
        quorum, leader, running = await start()
        async with running:
            unknown = broker_request(1, features={**SUPPORTED_FEATURES, "future.version": (1, 3)})
            assert (await call(leader, 62, unknown)).error_code == Errors.UNSUPPORTED_VERSION
            assert refusal(leader, unknown).message == (
                "Unable to register because the broker does not support finalized version 0 of future.version. "
                "The broker wants a version between 1 and 3, inclusive.")
            fine = broker_request(1, features={**SUPPORTED_FEATURES, "future.version": (0, 3)})
            assert (await call(leader, 62, fine)).error_code == 0
    run(go())


def test_the_unsupported_feature_named_is_the_first_in_request_order_then_in_kafka_hashmap_order():
    async def go():
        quorum, leader, running = await start()
        async with running:
            # Request order first: whichever bad feature the broker names first.
            bad_two = {"metadata.version": (7, 30), "transaction.version": (0, 1), "group.version": (0, 0)}
            assert "of transaction.version." in refusal(leader, broker_request(1, features=bad_two)).message
            reordered = {"metadata.version": (7, 30), "group.version": (0, 0), "transaction.version": (0, 1)}
            assert "of group.version." in refusal(leader, broker_request(1, features=reordered)).message
            # Then the finalized features the broker leaves out, in the order of Kafka's
            # unverifiedFeatures. With group.version and streams.version at 0 it holds five
            # (metadata.version, eligible.leader.replicas, share, transaction and kraft.version),
            # so 8 buckets (on Java 17 and 21 alike): transaction.version (bucket 2) comes before
            # share.version (7), where a 16-bucket table puts share.version (7) before
            # transaction.version (10).
            quorum.commit([encode_metadata_record(FeatureLevelRecord(name=name, feature_level=0), 0)
                           for name in ("group.version", "streams.version")])
            assert set(leader.state.finalized_features()) == {
                "metadata.version", "eligible.leader.replicas.version", "share.version", "transaction.version"}
            omits_two = {"metadata.version": (7, 30), "kraft.version": (0, 1),
                         "eligible.leader.replicas.version": (0, 1)}
            assert refusal(leader, broker_request(1, features=omits_two)).message == (
                "Unable to register because the broker does not support finalized version 2 of "
                "transaction.version. The broker wants a version between 0 and 0, inclusive.")
    run(go())


def test_a_same_incarnation_re_registration_keeps_the_last_contact_of_the_session():
    clock = FakeClock()

    async def go():
        quorum, leader, running = await start(clock=clock)
        async with running:
            await register_unfenced(quorum, leader, 1)
            registration = leader.image.brokers[1]
            clock.now += 5000
            again = await call(leader, 62, broker_request(1, incarnation=registration.incarnation_id,
                                                          log_dirs=list(registration.directories)))
            assert again.error_code == 0 and not leader.image.brokers[1].fenced
            # 9 s after the last heartbeat (not after the re-registration) the session expires.
            clock.now += 4001
            leader.poke()
            await until(lambda: leader.image.brokers[1].fenced, "broker 1 fenced 9 s after its last heartbeat")
    run(go())


def test_a_same_incarnation_re_registration_keeps_a_controlled_shutdown_waiting_for_the_other_brokers():
    async def go():
        quorum, leader, running = await start(25)
        async with running:
            for b in (1, 2):
                await register_unfenced(quorum, leader, b)
            await create(leader, "payments", partitions=2, rf=2)
            epoch1 = leader.image.brokers[1].epoch
            first = await call(leader, 63, heartbeat(1, epoch1, quorum.end_offset, want_shut_down=True))
            assert (first.is_fenced, first.should_shut_down) == (False, False)
            assert leader.image.brokers[1].in_controlled_shutdown
            registration = leader.image.brokers[1]
            again = await call(leader, 62, broker_request(1, incarnation=registration.incarnation_id,
                                                          log_dirs=list(registration.directories)))
            assert again.error_code == 0 and again.broker_epoch == epoch1
            # Broker 2 has not caught up with the batch that began broker 1's shutdown, so
            # broker 1 may not shut down yet: the amended session still knows that offset.
            waiting = await call(leader, 63, heartbeat(1, epoch1, quorum.end_offset, want_shut_down=True))
            assert (waiting.error_code, waiting.is_fenced, waiting.should_shut_down) == (0, False, False)
            await call(leader, 63, heartbeat(2, leader.image.brokers[2].epoch, quorum.end_offset))
            done = await call(leader, 63, heartbeat(1, epoch1, quorum.end_offset, want_shut_down=True))
            assert (done.is_fenced, done.should_shut_down) == (True, True)
    run(go())


def test_a_new_incarnation_starts_a_fresh_fenced_session():
    clock = FakeClock()

    async def go():
        quorum, leader, running = await start(clock=clock)
        async with running:
            await register_unfenced(quorum, leader, 1)
            clock.now += 9001
            leader.poke()
            await until(lambda: leader.image.brokers[1].fenced, "broker 1 fenced")
            comeback = await call(leader, 62, broker_request(1, log_dirs=list(leader.image.brokers[1].directories)))
            assert comeback.error_code == 0 and leader.image.brokers[1].fenced
            beat = await call(leader, 63, heartbeat(1, comeback.broker_epoch, quorum.end_offset))
            assert (beat.error_code, beat.is_fenced) == (0, False)
    run(go())
