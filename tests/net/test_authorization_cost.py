"""The per-name authorization in front of CreateTopics, CreatePartitions, AlterConfigs,
IncrementalAlterConfigs, DescribeConfigs and DeleteTopics does work linear in the request
(issue 24): names are counted and matched with dicts and sets, never ``list.count`` or a list
membership test per name, and each distinct question goes to the authorizer once per request.

The work is counted, not timed: names are tests.counting.CountedName (counting its ``==`` calls),
and the authorizer counts its calls.
"""
from __future__ import annotations

import asyncio
import uuid

from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.create_partitions_response import CreatePartitionsResponse, CreatePartitionsTopicResult
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kafkawire.messages.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kafkawire.messages.describe_configs_response import DescribeConfigsResponse, DescribeConfigsResult
from kafkawire.messages.incremental_alter_configs_request import AlterConfigsResource, IncrementalAlterConfigsRequest
from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,
                                                                    IncrementalAlterConfigsResponse)
from kafkawire.net.admin_authorization import (authorizing_alter_configs, authorizing_create_partitions,
                                               authorizing_delete_topics, authorizing_describe_configs)
from kafkawire.net.authorizer import RESOURCE_TOPIC, Op, authorizing_create_topics
from kafkawire.net.server import ApiHandler, RequestContext
from tests.counting import CountedName, counted_names

N = 2000           # quadratic work would be ~N*N/2 = 2,000,000 comparisons; linear work is O(N)


class CountingGrants:
    """Allows exactly the (operation, resource type, name) it was given; counts every question."""
    def __init__(self, *grants):
        self.grants = set(grants)
        self.questions: list[tuple] = []

    def authorize(self, principal, host, operation, resource_type, name):
        self.questions.append((operation, resource_type, name))
        return (operation, resource_type, name) in self.grants


def ctx(api_key: int, version: int) -> RequestContext:
    return RequestContext(api_key, version, 1, "c", ("10.0.0.1", 0), "CONTROLLER", "conn", principal="User:mallory")


def handle(handler, context, request):
    return asyncio.run(handler.handle(context, request))


def echo_resources(response_cls, field: str, result_cls) -> ApiHandler:
    """A controller answering each config resource it is given."""
    async def controller(context, request):
        return response_cls(**{field: [result_cls(resource_type=r.resource_type, resource_name=r.resource_name)
                                       for r in request.resources]})
    return ApiHandler(controller)


def topics_and_brokers(resource_cls, topics, brokers) -> list:
    return ([resource_cls(resource_type=2, resource_name=n) for n in topics]
            + [resource_cls(resource_type=4, resource_name=b) for b in brokers])


def assert_linear_and_asked_once(grants: CountingGrants):
    assert CountedName.comparisons <= 2 * N, f"{CountedName.comparisons} name comparisons for {N} names"
    assert len(grants.questions) == len(set(grants.questions)), "a question was asked twice"


def test_create_topics_authorization_is_linear_in_the_names():
    """CreateTopics (ControllerApis.createTopics): duplicates are found by counting in a dict and
    refused names removed through a set, not names.count / a list membership per name."""
    names = counted_names(N)
    grants = CountingGrants(*[(Op.CREATE, RESOURCE_TOPIC, n) for n in names[::2]])

    async def controller(context, request):
        return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name) for t in request.topics])

    request = CreateTopicsRequest(topics=[CreatableTopic(name=n) for n in names])
    response = handle(authorizing_create_topics(ApiHandler(controller), grants), ctx(19, 7), request)
    assert_linear_and_asked_once(grants)
    assert len(response.topics) == N and sum(t.error_code == 29 for t in response.topics) == N // 2


def test_create_partitions_authorization_is_linear_in_the_names():
    """CreatePartitions: ALTER per distinct name, duplicates counted in a dict, refused names a set."""
    names = counted_names(N)
    grants = CountingGrants(*[(Op.ALTER, RESOURCE_TOPIC, n) for n in names[::2]])

    async def controller(context, request):
        return CreatePartitionsResponse(results=[CreatePartitionsTopicResult(name=t.name) for t in request.topics])

    request = CreatePartitionsRequest(topics=[CreatePartitionsTopic(name=n, count=2) for n in names])
    response = handle(authorizing_create_partitions(ApiHandler(controller), grants), ctx(37, 3), request)
    assert_linear_and_asked_once(grants)
    assert sum(r.error_code == 29 for r in response.results) == N // 2


def test_alter_configs_authorization_is_linear_in_the_resources():
    """IncrementalAlterConfigs / AlterConfigs: duplicate resources counted in a dict (not
    keys.count per resource); the cluster check for many broker resources is asked once."""
    names = counted_names(N)
    grants = CountingGrants(*[(Op.ALTER_CONFIGS, RESOURCE_TOPIC, n) for n in names[::2]])

    controller = echo_resources(IncrementalAlterConfigsResponse, "responses", AlterConfigsResourceResponse)
    resources = topics_and_brokers(AlterConfigsResource, names, [str(i) for i in range(100)])
    handler = authorizing_alter_configs(controller, grants, AlterConfigsResourceResponse)
    response = handle(handler, ctx(44, 1), IncrementalAlterConfigsRequest(resources=resources))
    assert_linear_and_asked_once(grants)
    assert sum(r.error_code == 29 for r in response.responses) == N // 2
    assert sum(r.error_code == 31 for r in response.responses) == 100


def test_describe_configs_authorization_is_linear_in_the_resources():
    """DescribeConfigs: the refused resources are split off in one pass (not a membership test
    of each resource in the list of kept ones), and the cluster check is asked once."""
    names = counted_names(N)
    grants = CountingGrants(*[(Op.DESCRIBE_CONFIGS, RESOURCE_TOPIC, n) for n in names[::2]])

    controller = echo_resources(DescribeConfigsResponse, "results", DescribeConfigsResult)
    resources = topics_and_brokers(DescribeConfigsResource, names, ["1"] * 100)
    response = handle(authorizing_describe_configs(controller, grants), ctx(32, 4),
                      DescribeConfigsRequest(resources=resources))
    assert_linear_and_asked_once(grants)
    assert [r.resource_name for r in response.results[:N // 2]] == names[::2]        # described ones first
    assert [r.resource_name for r in response.results[N // 2:N]] == names[1::2]      # then the refusals
    assert sum(r.error_code == 31 for r in response.results) == 100


def test_delete_topics_authorization_asks_each_question_once():
    """DeleteTopics: DESCRIBE (then DELETE) on each distinct topic asked once per request; a name
    or id given twice is not asked about at all: the controller answers it "Duplicate topic ..."
    first, as Kafka's ControllerApis.deleteTopics does."""
    grants = CountingGrants()

    async def controller(context, request):
        return DeleteTopicsResponse(responses=[DeletableTopicResult(name=t.name, topic_id=t.topic_id)
                                               for t in request.topics])

    request = DeleteTopicsRequest(topics=[DeleteTopicState(name=f"t{i}") for i in range(N)]
                                  + [DeleteTopicState(topic_id=uuid.UUID(int=7)) for _ in range(N)])
    response = handle(authorizing_delete_topics(ApiHandler(controller), grants, {uuid.UUID(int=7): "other"}.get),
                      ctx(20, 6), request)
    assert sum(r.error_code == 29 for r in response.responses) == N           # every distinct name refused
    assert sum(r.topic_id == uuid.UUID(int=7) and r.error_code == 0 for r in response.responses) == N
    assert len(grants.questions) == len(set(grants.questions)) == 1 + N       # cluster DELETE, DESCRIBE t0..
