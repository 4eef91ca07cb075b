"""AllocateProducerIds (API 67) as Kafka 4.3.1's ProducerIdControlManager answers it: blocks of
1000 ids, one ProducerIdsRecord v0 each, the asking broker's epoch checked."""
from kafkawire.messages.allocate_producer_ids_request import AllocateProducerIdsRequest
from kafkawire.metadata import decode_metadata_record
from kafkawire.protocol.error_codes import Errors

from .harness import FakeQuorum, add_controller, run
from .test_brokers import call, register_unfenced, start


def producer_id_records(quorum):
    return [(decode_metadata_record(v).version, decode_metadata_record(v).message)
            for _, _, v in quorum.entries if decode_metadata_record(v).type_name == "ProducerIdsRecord"]


def test_blocks_of_1000_follow_each_other_and_each_writes_a_producer_ids_record():
    async def go():
        quorum, leader, running = await start(30)
        async with running:
            epoch1 = await register_unfenced(quorum, leader, 1)
            epoch2 = await register_unfenced(quorum, leader, 2)
            first = await call(leader, 67, AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch1))
            second = await call(leader, 67, AllocateProducerIdsRequest(broker_id=2, broker_epoch=epoch2))
            assert (first.error_code, first.producer_id_start, first.producer_id_len) == (0, 0, 1000)
            assert (second.error_code, second.producer_id_start, second.producer_id_len) == (0, 1000, 1000)
            records = producer_id_records(quorum)
            assert [(v, m.broker_id, m.broker_epoch, m.next_producer_id) for v, m in records] == [
                (0, 1, epoch1, 1000), (0, 2, epoch2, 2000)]
            assert leader.image.next_producer_id == 2000
            return quorum
    run(go())


def test_a_new_active_controller_continues_after_the_last_block():
    async def go():
        quorum = FakeQuorum()
        one, two = add_controller(quorum, 1, mv=30), add_controller(quorum, 2, mv=30)
        from .harness import Running, until
        async with Running(one, two):
            quorum.elect(1)
            await until(lambda: one.is_active(), "controller 1 active")
            epoch = await register_unfenced(quorum, one, 1)
            assert (await call(one, 67, AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch))).producer_id_start == 0
            quorum.elect(2)
            await until(lambda: two.is_active(), "controller 2 active")
            moved = await call(one, 67, AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch))
            assert moved.error_code == Errors.NOT_CONTROLLER
            again = await call(two, 67, AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch))
            assert (again.error_code, again.producer_id_start) == (0, 1000)
    run(go())


def test_a_stale_or_unknown_broker_epoch_is_refused_and_writes_nothing():
    async def go():
        quorum, leader, running = await start(30)
        async with running:
            epoch = await register_unfenced(quorum, leader, 1)
            stale = await call(leader, 67, AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch - 1))
            unknown = await call(leader, 67, AllocateProducerIdsRequest(broker_id=7, broker_epoch=epoch))
            assert (stale.error_code, stale.producer_id_len) == (Errors.STALE_BROKER_EPOCH, 0)
            assert unknown.error_code == Errors.STALE_BROKER_EPOCH
            assert producer_id_records(quorum) == []
    run(go())


def test_the_last_block_below_the_int64_limit_is_refused():
    from kafkawire.controller.errors import ApiError
    from kafkawire.controller.producer_ids import allocate_producer_ids
    from kafkawire.controller.state import ControllerState

    state = ControllerState()
    state.image.brokers[1] = type("B", (), {"epoch": 5})()
    state.image.next_producer_id = (1 << 63) - 1001     # Long.MAX_VALUE - 1000
    records, (first, length) = allocate_producer_ids(state, 1, 5)
    assert (first, length) == ((1 << 63) - 1001, 1000) and len(records) == 1
    state.image.next_producer_id = (1 << 63) - 1000
    try:
        allocate_producer_ids(state, 1, 5)
    except ApiError as exc:
        assert exc.error == Errors.UNKNOWN_SERVER_ERROR and "Exhausted all producerIds" in exc.message
    else:
        raise AssertionError("a block past the int64 limit was allocated")
