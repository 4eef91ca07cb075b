"""The write path refuses what replay refuses (issue: hostile peers, item 3): a registration
whose listener names a security protocol Kafka does not know is answered with Kafka's error and
text, and no record is written, so no node ever meets a committed record it cannot replay."""
import uuid

from kafkawire.messages.broker_registration_request import Listener as BrokerListener
from kafkawire.messages.controller_registration_request import ControllerRegistrationRequest, Listener
from kafkawire.metadata.image import MetadataImage
from kafkawire.protocol.error_codes import Errors

from .harness import broker_request, run
from .test_brokers import call, start


def _records(quorum, name):
    return [m for _, m in quorum.records() if type(m).NAME == name]


def test_a_controller_registration_with_an_unknown_security_protocol_writes_nothing():
    async def go():
        quorum, leader, running = await start()
        try:
            before = len(quorum.entries)
            request = ControllerRegistrationRequest(
                controller_id=7, incarnation_id=uuid.uuid4(),
                listeners=[Listener(name="CONTROLLER", host="h", port=9093, security_protocol=99)])
            reply = await call(leader, 70, request)
            return quorum, leader, before, reply
        finally:
            await running.__aexit__(None, None, None)
    quorum, leader, before, reply = run(go())
    assert reply.error_code == Errors.UNKNOWN_SERVER_ERROR
    assert reply.error_message == "java.lang.RuntimeException: Unknown security protocol 99 in listener CONTROLLER"
    assert len(quorum.entries) == before
    assert 7 not in leader.state.image.controllers
    assert leader.state.problems == []


def test_a_broker_registration_with_an_unknown_security_protocol_writes_nothing():
    async def go():
        quorum, leader, running = await start()
        try:
            bad = broker_request(5)
            bad.listeners = [BrokerListener(name="PLAINTEXT", host="h", port=9092, security_protocol=-3)]
            before = len(quorum.entries)
            reply = await call(leader, 62, bad)
            return quorum, leader, before, reply
        finally:
            await running.__aexit__(None, None, None)
    quorum, leader, before, reply = run(go())
    assert reply.error_code == Errors.UNKNOWN_SERVER_ERROR
    # BrokerRegistrationResponse has no error message field: the code is all a broker sees.
    assert len(quorum.entries) == before and 5 not in leader.state.image.brokers


def test_a_repeated_listener_name_keeps_its_place_and_takes_the_last_value_as_kafkas_linkedhashmap():
    async def go():
        quorum, leader, running = await start()
        try:
            request = ControllerRegistrationRequest(controller_id=8, incarnation_id=uuid.uuid4(), listeners=[
                Listener(name="A", host="first", port=1, security_protocol=0),
                Listener(name="B", host="b", port=2, security_protocol=1),
                Listener(name="A", host="last", port=3, security_protocol=2)])
            reply = await call(leader, 70, request)
            return quorum, reply
        finally:
            await running.__aexit__(None, None, None)
    quorum, reply = run(go())
    assert reply.error_code == 0
    record = [r for r in _records(quorum, "RegisterControllerRecord") if r.controller_id == 8][0]
    assert [(e.name, e.host, e.port, e.security_protocol) for e in record.end_points] == [
        ("A", "last", 3, 2), ("B", "b", 2, 1)]
    MetadataImage().apply(record)     # and replay takes it
