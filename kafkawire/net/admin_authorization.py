"""The authorizer's checks in front of the controller's topic and config admin APIs, as
ControllerApis makes them (used when authorizer.class.name is set):

- DeleteTopics: DELETE on the cluster allows every topic; otherwise a topic needs DESCRIBE and
  DELETE on itself, and is answered TOPIC_AUTHORIZATION_FAILED (a topic named by its id keeps
  its name in the answer only when the principal may describe it);
- CreatePartitions: ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED with no message;
- IncrementalAlterConfigs and AlterConfigs: ALTER_CONFIGS on the cluster for a broker or
  client-metrics resource (else CLUSTER_AUTHORIZATION_FAILED), on the topic or group for those
  (TOPIC_ / GROUP_AUTHORIZATION_FAILED); CLUSTER_ACTION on the cluster for IncrementalAlterConfigs'
  broker-logger resources (RuntimeLoggerManager's check), whose refusals come last;
- DescribeConfigs: DESCRIBE_CONFIGS on the cluster for a broker, broker-logger or client-metrics
  resource (else CLUSTER_AUTHORIZATION_FAILED), on the topic or group for those; refused
  resources come after the described ones, with the error's default message (ConfigHelper);
- CreateTopics' answer (after authorizer.authorizing_create_topics' CREATE check): a created
  topic's effective configs, partition count and replication factor only for a principal with
  DESCRIBE_CONFIGS on it; otherwise TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED.

Refused entries leave the request before the controller sees it, and their answers come first in
the response (Kafka puts them after the unknown-type and duplicate answers and before the
controller's; a request with both kinds of early answer lists them in another order).
"""
from __future__ import annotations

import copy
import dataclasses
import uuid
from collections import Counter

from kafkawire.protocol.error_codes import Errors

from .admin_error_responses import ADMIN_ERROR_RESPONSES
from .authorizer import CLUSTER_NAME, RESOURCE_CLUSTER, RESOURCE_TOPIC, AuthorizerNotReady, Op, refused_until_loaded
from kafkawire.messages.alter_configs_response import AlterConfigsResourceResponse as LegacyResult
from kafkawire.messages.create_partitions_response import CreatePartitionsTopicResult
from kafkawire.messages.delete_topics_response import DeletableTopicResult
from kafkawire.messages.describe_configs_response import DescribeConfigsResult
from kafkawire.messages.incremental_alter_configs_response import AlterConfigsResourceResponse

RESOURCE_GROUP = 3
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS, CONFIG_GROUP = 2, 4, 8, 16, 32
ZERO_UUID = uuid.UUID(int=0)


def allowed(authorizer, ctx, operation: int, resource_type: int, name: str) -> bool:
    """Whether the request's principal may do ``operation`` on the resource (False while the
    authorizer has not loaded the ACLs yet)."""
    try:
        return authorizer.authorize(ctx.principal, ctx.peer[0], operation, resource_type, name)
    except AuthorizerNotReady:
        return False


def _decisions(authorizer, ctx):
    """``may(operation, resource_type, name)`` for one request: each distinct question goes to
    the authorizer once (a request naming one resource 40,000 times asks once)."""
    answers: dict[tuple[int, int, str], bool] = {}

    def may(operation: int, resource_type: int, name: str) -> bool:
        key = (operation, resource_type, name)
        answer = answers.get(key)
        if answer is None:       # AuthorizerNotReady goes on up, to authorizer.refused_until_loaded
            answer = answers[key] = authorizer.authorize(ctx.principal, ctx.peer[0], operation, resource_type, name)
        return answer

    return may


def _error(error: Errors) -> tuple[int, str]:
    return int(error), error.message           # ApiError(Errors): the default message


def authorizing_alter_configs(handler, authorizer, result_cls):
    """IncrementalAlterConfigs (44) or AlterConfigs (33): ``result_cls`` is its per-resource result."""
    incremental = result_cls is AlterConfigsResourceResponse

    def refusal(may, resource):
        kind, name = resource.resource_type, resource.resource_name
        if kind in (CONFIG_BROKER, CONFIG_CLIENT_METRICS):
            return None if may(Op.ALTER_CONFIGS, RESOURCE_CLUSTER, CLUSTER_NAME) else \
                _error(Errors.CLUSTER_AUTHORIZATION_FAILED)
        if kind == CONFIG_TOPIC:
            return None if may(Op.ALTER_CONFIGS, RESOURCE_TOPIC, name) else _error(Errors.TOPIC_AUTHORIZATION_FAILED)
        if kind == CONFIG_GROUP:
            return None if may(Op.ALTER_CONFIGS, RESOURCE_GROUP, name) else _error(Errors.GROUP_AUTHORIZATION_FAILED)
        return None                                # the controller answers the other types

    def logger_refusal(may):
        """RuntimeLoggerManager's check on a controller: CLUSTER_ACTION on the cluster."""
        return None if may(Op.CLUSTER_ACTION, RESOURCE_CLUSTER, CLUSTER_NAME) else \
            _error(Errors.CLUSTER_AUTHORIZATION_FAILED)

    async def handle(ctx, request):
        may = _decisions(authorizer, ctx)
        keys = [(r.resource_type, r.resource_name) for r in request.resources]
        counts = Counter(keys)                     # duplicates go to the controller unchecked
        refused, kept, loggers_refused = [], [], []
        for resource, key in zip(request.resources, keys):
            logger = incremental and resource.resource_type == CONFIG_BROKER_LOGGER
            if logger:                             # each one checked: ControllerApis has no duplicates for them
                answer = logger_refusal(may)
            else:
                answer = refusal(may, resource) if counts[key] == 1 else None
            if answer is None:
                kept.append(resource)
            else:
                (loggers_refused if logger else refused).append(result_cls(
                    error_code=answer[0], error_message=answer[1], resource_type=resource.resource_type,
                    resource_name=resource.resource_name))
        if not refused and not loggers_refused:
            return await handler.handle(ctx, request)
        effective = copy.copy(request)
        effective.resources = kept
        response = await handler.handle(ctx, effective)
        # the loggers' answers come last, as ControllerApis adds them after the controller's results
        response.responses = refused + list(response.responses) + loggers_refused
        return response

    return dataclasses.replace(handler, handle=handle)


def authorizing_describe_configs(handler, authorizer):
    """DescribeConfigs (32); a request naming an unknown resource type goes to the controller
    whole (ConfigHelper fails all of it before any check)."""
    checks = {CONFIG_BROKER: (RESOURCE_CLUSTER, Errors.CLUSTER_AUTHORIZATION_FAILED),
              CONFIG_BROKER_LOGGER: (RESOURCE_CLUSTER, Errors.CLUSTER_AUTHORIZATION_FAILED),
              CONFIG_CLIENT_METRICS: (RESOURCE_CLUSTER, Errors.CLUSTER_AUTHORIZATION_FAILED),
              CONFIG_TOPIC: (RESOURCE_TOPIC, Errors.TOPIC_AUTHORIZATION_FAILED),
              CONFIG_GROUP: (RESOURCE_GROUP, Errors.GROUP_AUTHORIZATION_FAILED)}

    def allowed(may, resource) -> bool:
        acl_resource, _ = checks[resource.resource_type]
        name = CLUSTER_NAME if acl_resource == RESOURCE_CLUSTER else resource.resource_name
        return may(Op.DESCRIBE_CONFIGS, acl_resource, name)

    async def handle(ctx, request):
        if any(r.resource_type not in checks for r in request.resources):
            return await handler.handle(ctx, request)
        may = _decisions(authorizer, ctx)
        kept, refused = [], []
        for resource in request.resources:
            (kept if allowed(may, resource) else refused).append(resource)
        if not refused:
            return await handler.handle(ctx, request)
        effective = copy.copy(request)
        effective.resources = kept
        response = await handler.handle(ctx, effective)
        response.results = list(response.results) + [DescribeConfigsResult(
            error_code=_error(checks[r.resource_type][1])[0], error_message=_error(checks[r.resource_type][1])[1],
            resource_type=r.resource_type, resource_name=r.resource_name) for r in refused]
        return response

    return dataclasses.replace(handler, handle=handle)


def authorizing_create_partitions(handler, authorizer):

    async def handle(ctx, request):
        may = _decisions(authorizer, ctx)
        counts = Counter(t.name for t in request.topics)      # duplicates go to the controller unchecked
        refused = [n for n, count in counts.items() if count == 1 and not may(Op.ALTER, RESOURCE_TOPIC, n)]
        if not refused:
            return await handler.handle(ctx, request)
        effective = copy.copy(request)
        refused_names = set(refused)
        effective.topics = [t for t in request.topics if t.name not in refused_names]
        response = await handler.handle(ctx, effective)
        # Kafka sets only the code here: the message stays null
        response.results = [CreatePartitionsTopicResult(name=n, error_code=int(Errors.TOPIC_AUTHORIZATION_FAILED),
                                                        error_message=None)
                            for n in refused] + list(response.results)
        return response

    return dataclasses.replace(handler, handle=handle)


def authorizing_delete_topics(handler, authorizer, topic_name_of):
    """``topic_name_of(topic_id)``: the name of a topic in the committed image, or None."""

    async def handle(ctx, request):
        may = _decisions(authorizer, ctx)
        if may(Op.DELETE, RESOURCE_CLUSTER, CLUSTER_NAME):
            return await handler.handle(ctx, request)
        refused = []

        def allowed(name, topic_id, by_id: bool):
            if name is None or (may(Op.DESCRIBE, RESOURCE_TOPIC, name) and may(Op.DELETE, RESOURCE_TOPIC, name)):
                return True
            # a topic named by its id is named in the refusal only to whom may describe it
            shown = name if not by_id or may(Op.DESCRIBE, RESOURCE_TOPIC, name) else None
            refused.append(DeletableTopicResult(name=shown, topic_id=topic_id,
                                                error_code=int(Errors.TOPIC_AUTHORIZATION_FAILED),
                                                error_message=Errors.TOPIC_AUTHORIZATION_FAILED.message))
            return False

        effective = copy.copy(request)
        # A name or id given twice is answered "Duplicate topic ..." by the controller before
        # Kafka asks the authorizer anything about it.
        if ctx.api_version < 6:
            repeated = Counter(request.topic_names)
            effective.topic_names = [n for n in request.topic_names
                                     if repeated[n] > 1 or allowed(n, ZERO_UUID, False)]
        else:
            repeated = Counter(topic.name if topic.name is not None else topic.topic_id for topic in request.topics)
            kept = []
            for topic in request.topics:
                topic_id = topic.topic_id or ZERO_UUID
                if repeated[topic.name if topic.name is not None else topic.topic_id] > 1:
                    keep = True
                elif topic.name is None and topic_id != ZERO_UUID:
                    keep = allowed(topic_name_of(topic_id), topic_id, True)
                elif topic.name is not None and topic_id == ZERO_UUID:
                    keep = allowed(topic.name, ZERO_UUID, False)
                else:
                    keep = True                     # malformed entries: the controller answers them
                if keep:
                    kept.append(topic)
            effective.topics = kept
        response = await handler.handle(ctx, effective)
        response.responses = refused + list(response.responses)
        return response

    return dataclasses.replace(handler, handle=handle)


def authorizing_create_topics_configs(handler, authorizer):
    async def handle(ctx, request):
        response = await handler.handle(ctx, request)
        may = _decisions(authorizer, ctx)
        for result in response.topics:
            if result.error_code == 0 and not may(Op.DESCRIBE_CONFIGS, RESOURCE_TOPIC, result.name):
                result.configs, result.num_partitions, result.replication_factor = [], -1, -1
                result.topic_config_error_code = int(Errors.TOPIC_AUTHORIZATION_FAILED)
        return response

    return dataclasses.replace(handler, handle=handle)


def authorize_admin_apis(server, authorizer, image) -> None:
    """Wrap ``server``'s DeleteTopics, DescribeConfigs, CreatePartitions, AlterConfigs and
    IncrementalAlterConfigs handlers, and CreateTopics' answer, where registered; ``image()``: the committed metadata
    image (topic ids to names). Before the authorizer has loaded the metadata, a check of a
    principal that is not a super user fails the request whole with UNKNOWN_SERVER_ERROR (as
    ControllerApis answers StandardAuthorizer's AuthorizerNotReadyException)."""

    def topic_name_of(topic_id):
        topic = image().topics_by_id.get(topic_id)
        return None if topic is None else topic.name

    wrappers = {
        19: lambda h: authorizing_create_topics_configs(h, authorizer),
        20: lambda h: authorizing_delete_topics(h, authorizer, topic_name_of),
        32: lambda h: authorizing_describe_configs(h, authorizer),
        33: lambda h: authorizing_alter_configs(h, authorizer, LegacyResult),
        37: lambda h: authorizing_create_partitions(h, authorizer),
        44: lambda h: authorizing_alter_configs(h, authorizer, AlterConfigsResourceResponse),
    }
    for key, wrap in wrappers.items():
        registered = server._registry.get(key)
        if registered is not None:
            server.register(key, refused_until_loaded(key, wrap(registered.handler), ADMIN_ERROR_RESPONSES[key]))
