"""The getErrorResponse of the topic and config admin requests: every topic or resource of the
request answered with one error code. Used where Kafka answers a request as a whole with an
error: a broker's forwarding that failed (kafkawire.broker.forwarding), and a controller's
authorizer that has not loaded the metadata yet (kafkawire.net.admin_authorization)."""
from __future__ import annotations

from kafkawire.messages.alter_configs_response import AlterConfigsResourceResponse as LegacyConfigsResult
from kafkawire.messages.alter_configs_response import AlterConfigsResponse
from kafkawire.messages.create_partitions_response import CreatePartitionsResponse, CreatePartitionsTopicResult
from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from kafkawire.messages.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from kafkawire.messages.describe_configs_response import DescribeConfigsResponse, DescribeConfigsResult
from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,
                                                                    IncrementalAlterConfigsResponse)
from kafkawire.protocol.error_codes import Errors

NAMES_IN_TOPICS_VERSION = 6    # DeleteTopics names its topics in Topics (with ids) from v6


def create_topics_error(request, version, code):
    return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name, error_code=code, error_message=None)
                                        for t in request.topics])


def delete_topics_error(request, version, code):
    if version < NAMES_IN_TOPICS_VERSION:
        return DeleteTopicsResponse(responses=[DeletableTopicResult(name=n, error_code=code)
                                               for n in request.topic_names])
    return DeleteTopicsResponse(responses=[DeletableTopicResult(name=t.name, topic_id=t.topic_id, error_code=code)
                                           for t in request.topics])


def create_partitions_error(request, version, code):
    return CreatePartitionsResponse(results=[CreatePartitionsTopicResult(name=t.name, error_code=code,
                                                                         error_message=None)
                                             for t in request.topics])


def configs_error(result_cls, response_cls):
    """AlterConfigs' or IncrementalAlterConfigs' (ApiError.fromThrowable: no message)."""
    def build(request, version, code):
        return response_cls(responses=[result_cls(error_code=code, error_message=None, resource_type=r.resource_type,
                                                  resource_name=r.resource_name) for r in request.resources])
    return build


def describe_configs_error(request, version, code):
    """DescribeConfigsRequest.getErrorResponse: every resource, with the error's default text."""
    return DescribeConfigsResponse(results=[DescribeConfigsResult(
        error_code=code, error_message=Errors.for_code(code).message, resource_type=r.resource_type,
        resource_name=r.resource_name, configs=[]) for r in request.resources])


ADMIN_ERROR_RESPONSES = {
    19: create_topics_error,
    20: delete_topics_error,
    32: describe_configs_error,
    33: configs_error(LegacyConfigsResult, AlterConfigsResponse),
    37: create_partitions_error,
    44: configs_error(AlterConfigsResourceResponse, IncrementalAlterConfigsResponse),
}
