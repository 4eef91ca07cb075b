"""The authorizer in front of DeleteTopics, CreatePartitions, AlterConfigs and
IncrementalAlterConfigs, as ControllerApis checks them: per topic or resource, refused entries
answered without reaching the controller."""
from __future__ import annotations

import asyncio
import uuid

from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.create_partitions_response import CreatePartitionsResponse, CreatePartitionsTopicResult
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kafkawire.messages.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from kafkawire.messages.incremental_alter_configs_request import AlterConfigsResource, IncrementalAlterConfigsRequest
from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,
                                                                    IncrementalAlterConfigsResponse)
from kafkawire.net.admin_authorization import (authorizing_alter_configs, authorizing_create_partitions,
                                               authorizing_delete_topics)
from kafkawire.net.authorizer import RESOURCE_CLUSTER, RESOURCE_TOPIC, Op
from kafkawire.net.server import ApiHandler, RequestContext

ALICE = RequestContext(44, 1, 1, "c", ("10.0.0.1", 0), "CONTROLLER", "conn", principal="User:alice")


class Grants:
    """An authorizer that allows exactly the (operation, resource type, name) it was given."""
    def __init__(self, *grants):
        self.grants = set(grants)

    def authorize(self, principal, host, operation, resource_type, name):
        return (operation, resource_type, name) in self.grants


def run(coro):
    return asyncio.run(coro)


def alter_configs_request(*resources) -> IncrementalAlterConfigsRequest:
    """IncrementalAlterConfigs of the (resource type, name) given, in that order, no config in them."""
    return IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(resource_type=resource_type,
                                                                          resource_name=name)
                                                     for resource_type, name in resources])


class AlterConfigsController:
    """A controller that accepts every resource of an IncrementalAlterConfigs and records, in
    ``seen``, the (type, name) of the resources of each request that reached it."""
    def __init__(self):
        self.seen = []

    async def handle(self, ctx, request):
        self.seen.append([(r.resource_type, r.resource_name) for r in request.resources])
        return IncrementalAlterConfigsResponse(responses=[AlterConfigsResourceResponse(
            resource_type=r.resource_type, resource_name=r.resource_name, error_message=None)
            for r in request.resources])

    def behind(self, grants: Grants) -> ApiHandler:
        """authorizing_alter_configs in front of this controller, allowing ``grants``."""
        return authorizing_alter_configs(ApiHandler(self.handle), grants, AlterConfigsResourceResponse)


def test_alter_configs_needs_alter_configs_on_the_topic_or_the_cluster_for_brokers():
    controller = AlterConfigsController()
    request = alter_configs_request((2, "mine"), (2, "theirs"), (4, "1"))
    response = run(controller.behind(Grants((Op.ALTER_CONFIGS, RESOURCE_TOPIC, "mine"))).handle(ALICE, request))
    assert controller.seen == [[(2, "mine")]]
    assert [(r.resource_type, r.resource_name, r.error_code, r.error_message) for r in response.responses] == [
        (2, "theirs", 29, "Topic authorization failed."),
        (4, "1", 31, "Cluster authorization failed."),
        (2, "mine", 0, None)]
    everything = Grants((Op.ALTER_CONFIGS, RESOURCE_TOPIC, "mine"), (Op.ALTER_CONFIGS, RESOURCE_TOPIC, "theirs"),
                        (Op.ALTER_CONFIGS, RESOURCE_CLUSTER, "kafka-cluster"))
    controller.seen.clear()
    run(controller.behind(everything).handle(ALICE, request))
    assert controller.seen == [[(2, "mine"), (2, "theirs"), (4, "1")]]


def test_a_broker_logger_change_needs_cluster_action_and_is_answered_last():
    """ControllerApis.handleIncrementalAlterConfigs checks CLUSTER_ACTION on the cluster for each
    BROKER_LOGGER resource (ALTER_CONFIGS is not enough) and adds those answers after the rest."""
    controller = AlterConfigsController()
    request = alter_configs_request((8, "1"), (8, "1"), (4, "1"))
    alter_only = Grants((Op.ALTER_CONFIGS, RESOURCE_CLUSTER, "kafka-cluster"))
    response = run(controller.behind(alter_only).handle(ALICE, request))
    assert controller.seen == [[(4, "1")]]
    assert [(r.resource_type, r.error_code, r.error_message) for r in response.responses] == [
        (4, 0, None), (8, 31, "Cluster authorization failed."), (8, 31, "Cluster authorization failed.")]
    controller.seen.clear()
    acting = Grants((Op.CLUSTER_ACTION, RESOURCE_CLUSTER, "kafka-cluster"))
    run(controller.behind(acting).handle(ALICE, request))
    assert controller.seen == [[(8, "1"), (8, "1")]]


def test_create_partitions_needs_alter_on_each_topic():
    async def controller(ctx, request):
        return CreatePartitionsResponse(results=[CreatePartitionsTopicResult(name=t.name) for t in request.topics])

    request = CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="a", count=2),
                                              CreatePartitionsTopic(name="b", count=2)])
    response = run(authorizing_create_partitions(ApiHandler(controller), Grants((Op.ALTER, RESOURCE_TOPIC, "b")))
                   .handle(ALICE, request))
    assert [(r.name, r.error_code) for r in response.results] == [("a", 29), ("b", 0)]


def test_a_create_partitions_refusal_has_no_message():
    """ControllerApis.createPartitions sets only the error code of a topic the principal may not
    ALTER: its error message is null, not the error's default text."""
    async def controller(ctx, request):
        return CreatePartitionsResponse(results=[])

    request = CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="a", count=2**31 - 1)])
    response = run(authorizing_create_partitions(ApiHandler(controller), Grants()).handle(ALICE, request))
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [("a", 29, None)]


def test_delete_topics_needs_delete_on_the_cluster_or_describe_and_delete_on_each_topic():
    hidden, visible = uuid.UUID(int=5), uuid.UUID(int=6)
    names = {hidden: "hidden", visible: "visible"}
    seen = []

    async def controller(ctx, request):
        seen.append([(t.name, t.topic_id) for t in request.topics])
        return DeleteTopicsResponse(responses=[DeletableTopicResult(name=t.name, topic_id=t.topic_id)
                                               for t in request.topics])

    request = DeleteTopicsRequest(topics=[DeleteTopicState(name="ok"), DeleteTopicState(name="nope"),
                                          DeleteTopicState(topic_id=hidden), DeleteTopicState(topic_id=visible)])
    grants = Grants((Op.DESCRIBE, RESOURCE_TOPIC, "ok"), (Op.DELETE, RESOURCE_TOPIC, "ok"),
                    (Op.DESCRIBE, RESOURCE_TOPIC, "visible"))
    ctx = RequestContext(20, 6, 1, "c", ("10.0.0.1", 0), "CONTROLLER", "conn", principal="User:alice")
    response = run(authorizing_delete_topics(ApiHandler(controller), grants, names.get).handle(ctx, request))
    assert seen == [[("ok", uuid.UUID(int=0))]]
    assert [(r.name, r.topic_id, r.error_code) for r in response.responses] == [
        ("nope", uuid.UUID(int=0), 29), (None, hidden, 29), ("visible", visible, 29), ("ok", uuid.UUID(int=0), 0)]
    seen.clear()
    run(authorizing_delete_topics(ApiHandler(controller), Grants((Op.DELETE, RESOURCE_CLUSTER, "kafka-cluster")),
                                  names.get).handle(ctx, request))
    assert len(seen[0]) == 4


def test_created_topics_show_their_configs_only_to_whom_may_describe_them():
    from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    from kafkawire.messages.create_topics_response import (CreatableTopicConfigs, CreatableTopicResult,
                                                           CreateTopicsResponse)
    from kafkawire.net.admin_authorization import authorizing_create_topics_configs

    async def controller(ctx, request):
        return CreateTopicsResponse(topics=[CreatableTopicResult(
            name=t.name, error_code=0, num_partitions=1, replication_factor=1, topic_config_error_code=0,
            configs=[CreatableTopicConfigs(name="retention.ms", value="1")]) for t in request.topics])

    request = CreateTopicsRequest(topics=[CreatableTopic(name="seen"), CreatableTopic(name="hidden")])
    handler = authorizing_create_topics_configs(ApiHandler(controller),
                                                Grants((Op.DESCRIBE_CONFIGS, RESOURCE_TOPIC, "seen")))
    response = run(handler.handle(ALICE, request))
    assert [(t.name, t.num_partitions, t.replication_factor, t.topic_config_error_code, len(t.configs))
            for t in response.topics] == [("seen", 1, 1, 0, 1), ("hidden", -1, -1, 29, 0)]


def test_describe_configs_needs_describe_configs_and_lists_refusals_last():
    from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
    from kafkawire.messages.describe_configs_response import DescribeConfigsResponse, DescribeConfigsResult
    from kafkawire.net.admin_authorization import authorizing_describe_configs
    seen = []

    async def controller(ctx, request):
        seen.append([(r.resource_type, r.resource_name) for r in request.resources])
        return DescribeConfigsResponse(results=[DescribeConfigsResult(
            resource_type=r.resource_type, resource_name=r.resource_name) for r in request.resources])

    def request(*resources):
        return DescribeConfigsRequest(resources=[DescribeConfigsResource(resource_type=t, resource_name=n)
                                                 for t, n in resources])

    handler = authorizing_describe_configs(ApiHandler(controller), Grants((Op.DESCRIBE_CONFIGS, RESOURCE_TOPIC, "mine")))
    response = run(handler.handle(ALICE, request((2, "theirs"), (4, "1"), (2, "mine"))))
    assert seen == [[(2, "mine")]]
    assert [(r.resource_type, r.resource_name, r.error_code, r.error_message) for r in response.results] == [
        (2, "mine", 0, ""), (2, "theirs", 29, "Topic authorization failed."),
        (4, "1", 31, "Cluster authorization failed.")]
    seen.clear()                   # an unknown type: the controller fails the whole request itself
    run(handler.handle(ALICE, request((2, "theirs"), (99, "x"))))
    assert seen == [[(2, "theirs"), (99, "x")]]


def test_create_topics_failed_as_a_whole_answers_the_refused_topics_with_its_error_too():
    """ControllerApis.handleCreateTopics: when the controller's future fails (NOT_CONTROLLER, a
    timeout), getErrorResponse of the request as sent answers every topic, those the authorizer
    refused included; throttled or not. A request that succeeds still lists the refusals last."""
    from kafkawire.controller.controller import _create_topics_error
    from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse
    from kafkawire.net.authorizer import authorizing_create_topics
    from kafkawire.protocol.error_codes import Errors
    from kafkawire.protocol.handler import Throttled
    answers = []

    async def controller(ctx, request):
        return answers.pop(0)(request)

    request = CreateTopicsRequest(topics=[CreatableTopic(name="theirs"), CreatableTopic(name="mine")])
    handler = authorizing_create_topics(ApiHandler(controller), Grants((Op.CREATE, RESOURCE_TOPIC, "mine")))
    answers.append(lambda r: _create_topics_error(r, Errors.NOT_CONTROLLER, None))
    response = run(handler.handle(ALICE, request))
    assert [(t.name, t.error_code, t.error_message) for t in response.topics] == [
        ("theirs", Errors.NOT_CONTROLLER, None), ("mine", Errors.NOT_CONTROLLER, None)]
    answers.append(lambda r: Throttled(_create_topics_error(r, Errors.REQUEST_TIMED_OUT, "late"), 20))
    throttled = run(handler.handle(ALICE, request))
    assert throttled.throttle_ms == 20
    assert [(t.name, t.error_code) for t in throttled.response.topics] == [
        ("theirs", Errors.REQUEST_TIMED_OUT), ("mine", Errors.REQUEST_TIMED_OUT)]
    answers.append(lambda r: CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name) for t in r.topics]))
    served = run(handler.handle(ALICE, request))
    assert [(t.name, t.error_code) for t in served.topics] == [("mine", 0), ("theirs", Errors.TOPIC_AUTHORIZATION_FAILED)]


def test_create_topics_every_topic_refused_at_a_standby_controller_gets_the_refusals():
    """QuorumController.createTopics answers a request left empty by the authorizer at once,
    active or not, so a standby controller answers TOPIC_AUTHORIZATION_FAILED, not NOT_CONTROLLER
    (the nemesis's hostile tenant found it once its partitions moved the leadership); a topic
    it may create still gets NOT_CONTROLLER there."""
    from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    from kafkawire.net.authorizer import authorizing_create_topics
    from kafkawire.protocol.error_codes import Errors
    from tests.controller.harness import FakeQuorum, Running, add_controller
    standby = add_controller(FakeQuorum(), 1)
    handler = authorizing_create_topics(standby.handlers()[19], Grants((Op.CREATE, RESOURCE_TOPIC, "mine")))

    async def go():
        async with Running(standby):
            refused = await handler.handle(ALICE, CreateTopicsRequest(topics=[CreatableTopic(name="theirs")]))
            kept = await handler.handle(ALICE, CreateTopicsRequest(topics=[CreatableTopic(name="theirs"),
                                                                           CreatableTopic(name="mine")]))
            return refused, kept
    refused, kept = run(go())
    assert [(t.name, t.error_code) for t in refused.topics] == [("theirs", Errors.TOPIC_AUTHORIZATION_FAILED)]
    assert [(t.name, t.error_code) for t in kept.topics] == [("theirs", Errors.NOT_CONTROLLER),
                                                             ("mine", Errors.NOT_CONTROLLER)]


def test_before_the_metadata_is_loaded_the_topic_and_config_apis_answer_every_entry_unknown_server_error(caplog):
    """ControllerApis lets StandardAuthorizer's AuthorizerNotReadyException (a principal that is
    not a super user, before the initial load) reach handleError, which answers the request's
    getErrorResponse with UNKNOWN_SERVER_ERROR (Errors.forException: the exception has no code of
    its own): every topic or resource, nothing reaching the controller. A super user is served."""
    import dataclasses
    import logging

    from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
    from kafkawire.net.admin_authorization import authorize_admin_apis
    from kafkawire.net.authorizer import AuthorizerSettings, StandardAuthorizer, authorizing_create_topics
    from kafkawire.net.server import KafkaServer
    from tests.responses import error_codes
    reached = []

    async def controller(ctx, request):
        reached.append(ctx.api_key)
        raise AssertionError("answered by the test only when it must not be reached")

    requests = {
        19: (CreateTopicsRequest(topics=[CreatableTopic(name="a"), CreatableTopic(name="b")]), 5, "topics"),
        20: (DeleteTopicsRequest(topics=[DeleteTopicState(name="a", topic_id=uuid.UUID(int=0))]), 6, "responses"),
        32: (DescribeConfigsRequest(resources=[DescribeConfigsResource(resource_type=2, resource_name="a"),
                                               DescribeConfigsResource(resource_type=4, resource_name="1")]), 4,
             "results"),
        37: (CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="a", count=3)]), 3, "results"),
        44: (alter_configs_request((2, "a"), (4, "1")), 1, "responses"),
    }
    authorizer = StandardAuthorizer(AuthorizerSettings(super_users=frozenset({"User:admin"})), lambda: [],
                                    lambda: False)
    server = KafkaServer({key: ApiHandler(controller) for key in requests})
    server.register(19, authorizing_create_topics(server._registry[19].handler, authorizer))
    authorize_admin_apis(server, authorizer, lambda: None)

    def ask(key, principal):
        request, version, entries = requests[key]
        ctx = dataclasses.replace(ALICE, api_key=key, api_version=version, principal=principal)
        try:
            response = run(server._registry[key].handler.handle(ctx, request))
        except AssertionError:
            return None
        return response, getattr(response, entries)

    with caplog.at_level(logging.INFO, logger="kafkawire.authorizer"):
        for key in requests:
            response, entries = ask(key, "User:alice")
            assert len(entries) == len(getattr(requests[key][0], {19: "topics", 20: "topics", 37: "topics"}.get(
                key, "resources"))), (key, response)
            assert error_codes(response) == {-1}, (key, response)
            assert f"refusing api key {key} from User:alice at 10.0.0.1: the authorizer has not loaded" in caplog.text
    described = ask(32, "User:alice")[1]
    assert {r.error_message for r in described} == {"The server experienced an unexpected error when processing "
                                                    "the request."}                # DescribeConfigs' own shape
    assert reached == []
    for key in requests:                           # a super user: no check, the controller asked
        assert ask(key, "User:admin") is None
    assert sorted(reached) == sorted(requests)
