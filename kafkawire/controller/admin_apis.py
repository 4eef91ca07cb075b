"""The controller's handlers for the admin APIs brokers forward (in an Envelope) or clients send
to a controller directly: DeleteTopics (20), AlterConfigs (33), CreatePartitions (37),
ElectLeaders (43), IncrementalAlterConfigs (44), AlterPartitionReassignments (45),
ListPartitionReassignments (46), and DescribeConfigs (32), which any controller answers from its
own image. IncrementalAlterConfigs' BROKER_LOGGER resources change this node's log levels, answered
after the controller's results, as ControllerApis applies them (RuntimeLoggerManager).

Each computes its records from the committed state through the controller's serialized write
path. A refusal of the whole request (not the active controller, a deadline passed before its turn)
goes to every topic or resource of the answer, as Kafka's getErrorResponse does.
"""
from __future__ import annotations

import copy

from kafkawire.messages.alter_configs_response import AlterConfigsResourceResponse as LegacyResult
from kafkawire.messages.alter_configs_response import AlterConfigsResponse
from kafkawire.messages.create_partitions_response import CreatePartitionsResponse, CreatePartitionsTopicResult
from kafkawire.messages.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,
                                                                    IncrementalAlterConfigsResponse)
from kafkawire.messages.alter_partition_reassignments_response import (AlterPartitionReassignmentsResponse,
                                                                       ReassignablePartitionResponse,
                                                                       ReassignableTopicResponse)
from kafkawire.messages.elect_leaders_response import ElectLeadersResponse, PartitionResult, ReplicaElectionResult
from kafkawire.messages.list_partition_reassignments_response import ListPartitionReassignmentsResponse
from kafkawire.net import runtime_loggers
from kafkawire.net.server import ApiHandler

from .configs import alter_configs, incremental_alter_configs
from .describe_configs import describe_configs
from .errors import ApiError
from .elect_in_steps import elect_every_partition_in_steps, needs_steps
from .leader_election import elect_leaders
from .partition_creation import create_partitions
from .reassignment import alter_partition_reassignments, list_partition_reassignments
from .topic_deletion import NAMES_IN_TOPICS_VERSION, ZERO_UUID, delete_topics

DELETE_TOPICS, ALTER_CONFIGS, CREATE_PARTITIONS, INCREMENTAL_ALTER_CONFIGS = 20, 33, 37, 44
ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS, ELECT_LEADERS = 45, 46, 43
DESCRIBE_CONFIGS = 32
BROKER_LOGGER = 8                        # ConfigResource.Type
DESCRIBE_CONFIGS_MIN_VERSION = 1         # Kafka 4.x serves DescribeConfigs v1-v4
DELETE_TOPICS_MIN_VERSION = 1            # Kafka 4.x serves DeleteTopics v1-v6
NO_DEADLINE = None                       # Kafka's OptionalLong.empty(): the operation waits its turn


async def _write(controller, generate, timeout_ms: int | None):
    """The controller's write with the deadline Kafka's ControllerApis gives the operation: the
    request's timeoutMs for DeleteTopics, CreatePartitions, ElectLeaders and
    AlterPartitionReassignments, none for the config APIs and ListPartitionReassignments (even
    though ListPartitionReassignments carries a timeoutMs). No timeout of its own around it: a
    write is answered when its records commit, and a deadline only refuses one that has not
    generated yet (REQUEST_TIMED_OUT, from the controller)."""
    result, _ = await controller.write(generate, timeout_ms=timeout_ms)
    return result


def _delete_topics_error(request, api_version: int, exc: ApiError) -> DeleteTopicsResponse:
    if api_version < NAMES_IN_TOPICS_VERSION:
        entries = [(name, ZERO_UUID) for name in request.topic_names]
    else:
        entries = [(t.name, t.topic_id or ZERO_UUID) for t in request.topics]
    return DeleteTopicsResponse(responses=[DeletableTopicResult(name=n, topic_id=i, error_code=exc.code,
                                                                error_message=exc.message) for n, i in entries])


def _configs_error(request, result_cls, response_cls, exc: ApiError):
    return response_cls(responses=[result_cls(error_code=exc.code, error_message=exc.message,
                                              resource_type=r.resource_type, resource_name=r.resource_name)
                                   for r in request.resources])


def _reassignments_error(request, exc: ApiError) -> AlterPartitionReassignmentsResponse:
    return AlterPartitionReassignmentsResponse(error_code=exc.code, error_message=exc.message, responses=[
        ReassignableTopicResponse(name=t.name, partitions=[ReassignablePartitionResponse(
            partition_index=p.partition_index, error_code=exc.code, error_message=exc.message) for p in t.partitions])
        for t in request.topics])


def _elect_leaders_error(request, exc: ApiError, api_version: int) -> ElectLeadersResponse:
    """ElectLeadersRequest.getErrorResponse: the error for every partition named, and at the top
    from v1 (v0 has no top-level ErrorCode; ElectLeadersResponse sets it for version >= 1 only)."""
    return ElectLeadersResponse(error_code=exc.code if api_version >= 1 else 0, replica_election_results=[
        ReplicaElectionResult(topic=t.topic, partition_result=[PartitionResult(
            partition_id=p, error_code=exc.code, error_message=exc.message) for p in t.partitions])
        for t in request.topic_partitions or []])


def _logger_answer(node_id: int, resource, validate_only: bool) -> AlterConfigsResourceResponse:
    """A BROKER_LOGGER resource of IncrementalAlterConfigs (kafkawire.net.runtime_loggers): its
    CLUSTER_ACTION check is made in front of the handler (kafkawire.net.admin_authorization)."""
    code, message = runtime_loggers.change_for_resource(resource, node_id, authorized=True, validate_only=validate_only)
    return AlterConfigsResourceResponse(error_code=code, error_message=message, resource_type=resource.resource_type,
                                        resource_name=resource.resource_name)


def handlers(controller) -> dict:
    """ApiHandlers bound to ``controller`` (a MetadataController)."""

    async def delete(ctx, request):
        quota = controller.mutation_quotas.quota_for(ctx)
        try:
            response = await _write(controller, lambda: delete_topics(controller.state, request, ctx.api_version,
                                                                      quota=quota.record), request.timeout_ms)
        except ApiError as exc:
            response = _delete_topics_error(request, ctx.api_version, exc)
        return quota.answer(ctx, response)

    async def partitions(ctx, request):
        quota = controller.mutation_quotas.quota_for(ctx)
        try:
            response = await _write(controller, lambda: create_partitions(controller.state, request, controller.rng,
                                                                          quota=quota.record), request.timeout_ms)
        except ApiError as exc:
            response = CreatePartitionsResponse(results=[CreatePartitionsTopicResult(
                name=t.name, error_code=exc.code, error_message=exc.message) for t in request.topics])
        return quota.answer(ctx, response)

    async def incremental(ctx, request):
        """BROKER_LOGGER resources change this node's log levels first; the rest go to the
        controller (none left: no write, so a controller that is not active answers too). A
        failed write answers every resource with its error, as Kafka's handleError does."""
        others = [r for r in request.resources if r.resource_type != BROKER_LOGGER]
        logger_answers = [_logger_answer(controller.node_id, r, request.validate_only)
                          for r in request.resources if r.resource_type == BROKER_LOGGER]
        if not others and logger_answers:
            return IncrementalAlterConfigsResponse(responses=logger_answers)
        to_controller = copy.copy(request)
        to_controller.resources = others
        try:
            response = await _write(controller, lambda: incremental_alter_configs(
                controller.state, to_controller, controller.group_bounds, forwarded=getattr(ctx, "forwarded", False)),
                NO_DEADLINE)
        except ApiError as exc:
            return _configs_error(request, AlterConfigsResourceResponse, IncrementalAlterConfigsResponse, exc)
        response.responses = list(response.responses) + logger_answers
        return response

    async def legacy(ctx, request):
        try:
            return await _write(controller, lambda: alter_configs(controller.state, request, controller.group_bounds,
                                                                 forwarded=getattr(ctx, "forwarded", False)), NO_DEADLINE)
        except ApiError as exc:
            return _configs_error(request, LegacyResult, AlterConfigsResponse, exc)

    async def reassign(ctx, request):
        try:
            return await _write(controller, lambda: alter_partition_reassignments(
                controller.state, request), request.timeout_ms)
        except ApiError as exc:
            return _reassignments_error(request, exc)

    async def reassignments(ctx, request):
        try:                # a read, but of the active controller's committed state
            return await _write(controller, lambda: ([], list_partition_reassignments(controller.state, request)),
                                NO_DEADLINE)
        except ApiError as exc:
            return ListPartitionReassignmentsResponse(error_code=exc.code, error_message=exc.message)

    async def elect(ctx, request):
        try:
            if needs_steps(controller.state, request):       # every partition of a large cluster
                return await elect_every_partition_in_steps(controller, request, ctx.api_version, request.timeout_ms)
            return await _write(controller, lambda: elect_leaders(
                controller.state, request, ctx.api_version), request.timeout_ms)
        except ApiError as exc:
            return _elect_leaders_error(request, exc, ctx.api_version)

    async def describe(ctx, request):     # any controller answers from its own image, as Kafka's
        return describe_configs(controller.node_id, controller.state.image, request)

    return {
        DESCRIBE_CONFIGS: ApiHandler(describe, min_version=DESCRIBE_CONFIGS_MIN_VERSION),
        DELETE_TOPICS: ApiHandler(delete, min_version=DELETE_TOPICS_MIN_VERSION),
        ELECT_LEADERS: ApiHandler(elect),
        ALTER_PARTITION_REASSIGNMENTS: ApiHandler(reassign),
        LIST_PARTITION_REASSIGNMENTS: ApiHandler(reassignments),
        ALTER_CONFIGS: ApiHandler(legacy),
        CREATE_PARTITIONS: ApiHandler(partitions),
        INCREMENTAL_ALTER_CONFIGS: ApiHandler(incremental),
    }
