"""The broker's forwarding to the active controller (kafkawire.broker.forwarding), sans I/O:
the Envelope carries the client's request, principal and address and the controller's
Envelope handler (kafkawire.net.envelope) runs it as that client; NOT_CONTROLLER and an
unreachable controller are retried until the retry timeout, then REQUEST_TIMED_OUT; the
envelope's errors are answered as Kafka's ForwardingManager answers them; and the config APIs'
checks on the broker (ConfigAdminManager.preprocess) with the answers put back in order.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkawire.broker.config_apis import ConfigApis, preprocess
from kafkawire.broker.forwarding import Forwarder, envelope_for
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from kafkawire.messages.envelope_response import EnvelopeResponse
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                   IncrementalAlterConfigsRequest)
from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,
                                                                    IncrementalAlterConfigsResponse)
from kafkawire.messages.request_header import RequestHeader
from kafkawire.net.envelope import deserialize_principal, envelope_handler
from kafkawire.net.server import ApiHandler, CloseConnection, RequestContext
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import decode_request, encode_response
from kafkawire.raft.contract import NoLeader

CREATE_TOPICS = 19


def client_ctx(peer=("10.1.2.3", 50000), principal="User:alice", version=7, correlation_id=42):
    header = RequestHeader(request_api_key=CREATE_TOPICS, request_api_version=version, correlation_id=correlation_id,
                           client_id="admin-1")
    return RequestContext(CREATE_TOPICS, version, correlation_id, "admin-1", peer, "PLAINTEXT", "conn-1", header,
                          principal, "SASL_PLAINTEXT")


def create_request(*names):
    return CreateTopicsRequest(timeout_ms=5000, topics=[
        CreatableTopic(name=n, num_partitions=1, replication_factor=1, assignments=[], configs=[]) for n in names])


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = 0

    def __call__(self):
        return self.now

    async def sleep(self, seconds):
        self.sleeps += 1
        self.now += seconds


def answered(response, version=7, correlation_id=42):
    return EnvelopeResponse(response_data=encode_response(response, version, correlation_id)[4:])


@pytest.mark.parametrize("peer, packed", [(("10.1.2.3", 1), bytes([10, 1, 2, 3])),
                                          (("::1", 1), bytes(15) + b"\x01")])
def test_the_envelope_carries_the_clients_request_header_principal_and_address(peer, packed):
    envelope = envelope_for(client_ctx(peer=peer), create_request("orders"))
    inner = decode_request(envelope.request_data)
    assert (inner.api_key, inner.api_version, inner.correlation_id, inner.header.client_id) == (19, 7, 42, "admin-1")
    assert [t.name for t in inner.body.topics] == ["orders"]
    assert deserialize_principal(envelope.request_principal) == "User:alice"
    assert envelope.client_host_address == packed


def test_the_controllers_envelope_handler_runs_the_request_as_the_forwarding_client():
    """Both sides together: what the controller's handler sees is the client's principal,
    address, version and request, and its answer reaches the client unwrapped."""
    seen = {}

    async def create_topics(ctx, request):
        seen.update(principal=ctx.principal, host=ctx.peer[0], version=ctx.api_version,
                    names=[t.name for t in request.topics])
        return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name, num_partitions=1) for t in request.topics])

    registered = type("Registered", (), {"handler": ApiHandler(create_topics), "low": 2, "high": 7})
    controller = envelope_handler({CREATE_TOPICS: registered}.get)
    controller_ctx = RequestContext(58, 0, 1, "broker-1", ("127.0.0.1", 9), "CONTROLLER", "c", None, "User:broker")

    async def send(envelope, timeout_ms):
        return await controller(controller_ctx, envelope)

    response = asyncio.run(Forwarder(send).forward(client_ctx(), create_request("orders")))
    assert seen == {"principal": "User:alice", "host": "10.1.2.3", "version": 7, "names": ["orders"]}
    assert [(t.name, t.error_code, t.num_partitions) for t in response.topics] == [("orders", 0, 1)]


def test_not_controller_and_an_unreachable_controller_are_tried_again_until_the_answer():
    clock = FakeClock()
    answers = [NoLeader("no leader yet"), EnvelopeResponse(error_code=int(Errors.NOT_CONTROLLER)),
               answered(CreateTopicsResponse(topics=[CreatableTopicResult(name="orders")]))]

    async def send(envelope, timeout_ms):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    forwarder = Forwarder(send, clock=clock, sleep=clock.sleep)
    response = asyncio.run(forwarder.forward(client_ctx(), create_request("orders")))
    assert [(t.name, t.error_code) for t in response.topics] == [("orders", Errors.NONE)]
    assert answers == [] and clock.sleeps == 2          # a backoff after each failed try


def test_a_controller_unreachable_for_the_retry_timeout_is_request_timed_out_on_every_topic():
    clock = FakeClock()
    tries = []

    async def send(envelope, timeout_ms):
        tries.append(timeout_ms)
        raise NoLeader("no leader")

    forwarder = Forwarder(send, retry_timeout_ms=60_000, clock=clock, sleep=clock.sleep)
    response = asyncio.run(forwarder.forward(client_ctx(), create_request("a", "b")))
    assert [(t.name, t.error_code, t.error_message) for t in response.topics] == [
        ("a", Errors.REQUEST_TIMED_OUT, None), ("b", Errors.REQUEST_TIMED_OUT, None)]
    assert 500 <= len(tries) <= 601 and clock.now == pytest.approx(60, abs=0.2)


def test_envelope_unsupported_version_closes_the_connection_and_other_envelope_errors_are_unknown_server_error():
    async def answer_with(code):
        async def send(envelope, timeout_ms):
            return EnvelopeResponse(error_code=int(code))
        return await Forwarder(send).forward(client_ctx(), create_request("orders"))

    with pytest.raises(CloseConnection):
        asyncio.run(answer_with(Errors.UNSUPPORTED_VERSION))
    response = asyncio.run(answer_with(Errors.PRINCIPAL_DESERIALIZATION_FAILURE))
    assert [(t.name, t.error_code) for t in response.topics] == [("orders", Errors.UNKNOWN_SERVER_ERROR)]


def test_an_inner_response_that_does_not_decode_is_unknown_server_error():
    async def send(envelope, timeout_ms):
        return EnvelopeResponse(response_data=b"\x00\x00")
    response = asyncio.run(Forwarder(send).forward(client_ctx(), create_request("orders")))
    assert [t.error_code for t in response.topics] == [Errors.UNKNOWN_SERVER_ERROR]


def test_a_request_made_on_a_clients_behalf_fails_with_kafkas_messages_not_an_error_response():
    """KRaftTopicCreator.createTopicWithPrincipal (a streams group's internal topics): the same
    Envelope and retries, but an Envelope error fails the creation with that error's message and
    no answer within the retry timeout with "CreateTopicsRequest to controller timed out"."""
    from kafkawire.broker.forwarding import ForwardingFailed
    sent = []

    def forwarder_answering(answer, clock=None):
        async def send(envelope, timeout_ms):
            sent.append(envelope)
            if isinstance(answer, Exception):
                raise answer
            return answer
        return Forwarder(send, **({"clock": clock, "sleep": clock.sleep} if clock else {}))

    created = asyncio.run(forwarder_answering(answered(CreateTopicsResponse(topics=[
        CreatableTopicResult(name="orders")]))).on_behalf(client_ctx(), create_request("orders")))
    assert [(t.name, t.error_code) for t in created.topics] == [("orders", Errors.NONE)]
    assert deserialize_principal(sent[0].request_principal) == "User:alice"
    for code, message in [(Errors.UNSUPPORTED_VERSION, "The version of API is not supported."),
                          (Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")]:
        with pytest.raises(ForwardingFailed, match=f"^{message}$"):
            asyncio.run(forwarder_answering(EnvelopeResponse(error_code=int(code))).on_behalf(
                client_ctx(), create_request("orders")))
    clock = FakeClock()
    with pytest.raises(ForwardingFailed, match="^CreateTopicsRequest to controller timed out$"):
        asyncio.run(forwarder_answering(NoLeader("no leader"), clock).on_behalf(client_ctx(), create_request("a")))
    assert clock.now == pytest.approx(60, abs=0.2)


def resource(kind, name, *configs):
    return AlterConfigsResource(resource_type=kind, resource_name=name, configs=[
        AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in configs])


def test_config_changes_are_checked_on_the_broker_with_kafkas_messages():
    twice = resource(2, "t", ("retention.ms", 0, "1"))
    resources = [twice, resource(2, "t", ("segment.ms", 0, "1")),
                 resource(2, "u", ("retention.ms", 0, "1"), ("retention.ms", 0, "2")),
                 resource(2, "v", ("retention.ms", 0, None), ("segment.ms", 0, None), ("flush.ms", 1, None)),
                 resource(4, "x"), resource(4, "2"), resource(4, "1", ("log.retention.ms", 9, "1")),
                 resource(64, "w"), resource(4, "", ("log.retention.ms", 0, "1")), resource(8, "1")]
    refused = preprocess(resources, node_id=1, incremental=True)
    messages = [refused.get(id(r), (0, None))[1] for r in resources]
    assert messages == ["Each resource must appear at most once."] * 2 + [
        "Error due to duplicate config keys", "Null value not supported for : retention.ms, segment.ms",
        "Node id must be an integer, but it is: x", "Unexpected broker id, expected 1, but received 2",
        "Unknown operations type 9", "Unknown resource type 64", None, None]
    # the broker logger (no change asked) is answered here, the cluster default forwarded
    assert refused[id(resources[-1])] == (Errors.NONE, None) and id(resources[-2]) not in refused
    assert {code for code, _ in refused.values()} == {Errors.INVALID_REQUEST, Errors.NONE}
    legacy = preprocess([resource(8, "1")], node_id=1, incremental=False)
    assert list(legacy.values()) == [(Errors.INVALID_REQUEST, "Unknown resource type 8")]


def test_broker_logger_changes_are_applied_here_answered_in_order_and_need_alter_configs_on_the_cluster():
    import logging
    name = "kafkawire.tests.forwarding_logger"
    logger = logging.getLogger(name)

    class NeverForwarded:
        async def forward(self, ctx, request):
            raise AssertionError("a BROKER_LOGGER change is not forwarded")

    def alter(may, validate_only=False, *resources):
        request = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=list(resources))
        apis = ConfigApis(1, NeverForwarded(), may_alter_loggers=lambda ctx: may)
        return [(r.resource_name, r.error_code, r.error_message)
                for r in asyncio.run(apis.incremental_alter_configs(client_ctx(), request)).responses]
    try:
        assert alter(True, True, resource(8, "1", (name, 0, "DEBUG"))) == [("1", Errors.NONE, None)]
        assert logger.level == logging.NOTSET                           # validate_only changes nothing
        assert alter(True, False, resource(8, "1", (name, 0, "DEBUG")), resource(8, "2", (name, 0, "INFO"))) == [
            ("1", Errors.NONE, None), ("2", Errors.INVALID_REQUEST, "Unexpected node id. Expected 1, but received 2")]
        assert logger.level == logging.DEBUG
        assert alter(True, False, resource(8, "1", (name, 0, "LOUD"))) == [("1", Errors.INVALID_CONFIG, (
            f"Cannot set the log level of {name} to LOUD as it is not a supported log level. Valid log levels are "
            "DEBUG, ERROR, FATAL, INFO, TRACE, WARN"))]
        assert alter(False, False, resource(8, "1", (name, 1, None))) == [
            ("1", Errors.CLUSTER_AUTHORIZATION_FAILED, Errors.CLUSTER_AUTHORIZATION_FAILED.message)]
        assert logger.level == logging.DEBUG                            # refused: unchanged
    finally:
        logger.setLevel(logging.NOTSET)


def test_only_the_resources_that_pass_are_forwarded_and_the_answers_keep_the_requests_order():
    forwarded = []

    class StandInForwarder:
        async def forward(self, ctx, request):
            forwarded.append([(r.resource_type, r.resource_name) for r in request.resources])
            return IncrementalAlterConfigsResponse(responses=[AlterConfigsResourceResponse(
                resource_type=2, resource_name="b", error_code=int(Errors.INVALID_CONFIG), error_message="bad")])

    request = IncrementalAlterConfigsRequest(validate_only=False, resources=[
        resource(2, "a"), resource(4, "7"), resource(2, "b")])
    response = asyncio.run(ConfigApis(1, StandInForwarder()).incremental_alter_configs(client_ctx(), request))
    assert forwarded == [[(2, "a"), (2, "b")]]
    assert [(r.resource_name, r.error_code, r.error_message) for r in response.responses] == [
        ("a", Errors.UNKNOWN_SERVER_ERROR, None),           # left out of the controller's answer
        ("7", Errors.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 7"),
        ("b", Errors.INVALID_CONFIG, "bad")]
