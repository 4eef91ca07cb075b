"""The ACL checks of Kafka's KafkaApis in front of the broker's handlers (``authorizer.class.name``
set): the data and topic APIs here, the group and transaction APIs in
kafkawire.broker.group_authorization. The authorizer is the node's StandardAuthorizer
(kafkawire.net.authorizer): the ACLs of the committed metadata image, ``super.users`` and
``allow.everyone.if.no.acl.found``, shared with the controller's APIs in a combined node.

Each wrapper takes the refused entries out of the request before the handler sees it (so a
refused topic is neither written, read, created nor deleted) and adds their answers to the
handler's response. A topic the principal may not use is refused before its existence is
looked at: an unknown topic looks like an unauthorized one, as in Kafka. The admin requests the
broker forwards (CreateTopics, DeleteTopics, CreatePartitions, the configs it does not keep,
ElectLeaders, reassignments, DescribeQuorum) are checked by the controller, with the client's
principal the Envelope carries (kafkawire.broker.forwarding), as Kafka's broker leaves them.

    handlers = authorize_broker_handlers(broker.handlers(), authorizer, broker)
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import uuid

from kafkawire.messages import fetch_response as fr
from kafkawire.messages.delete_records_response import DeleteRecordsPartitionResult, DeleteRecordsTopicResult
from kafkawire.messages.describe_producers_response import PartitionResponse, TopicResponse
from kafkawire.messages.list_offsets_response import ListOffsetsPartitionResponse, ListOffsetsTopicResponse
from kafkawire.messages.metadata_response import MetadataResponseTopic
from kafkawire.messages.offset_for_leader_epoch_response import EpochEndOffset, OffsetForLeaderTopicResult
from kafkawire.messages.produce_response import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
from kafkawire.net.admin_authorization import _decisions, authorizing_describe_configs
from kafkawire.net.authorizer import CLUSTER_NAME, RESOURCE_CLUSTER, RESOURCE_TOPIC, Op
from kafkawire.net.server import NO_RESPONSE, CloseConnection
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors

from .delegation_token_apis import DELEGATION_TOKEN_RULES, delegation_token_checks
from .fetch_session import READABLE_TOPIC, topic_authorization_failed
from .txn_verification import _transactional_header

__all__ = ["authorize_broker_handlers", "KAFKA_BROKER_API_RULES", "RESOURCE_GROUP", "RESOURCE_TRANSACTIONAL_ID",
           "IDEMPOTENT_WRITE", "authorized_operations", "wrap"]

# The controller's checks log on the same fixed name (operators filter denials on it).
audit_log = logging.getLogger("kafkawire.authorizer")
RESOURCE_GROUP, RESOURCE_TRANSACTIONAL_ID = 3, 5
IDEMPOTENT_WRITE, TWO_PHASE_COMMIT = 12, 15
OPERATION_NAMES = {**Op.NAMES, IDEMPOTENT_WRITE: "IDEMPOTENT_WRITE", TWO_PHASE_COMMIT: "TWO_PHASE_COMMIT",
                   13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS"}
RESOURCE_NAMES = {RESOURCE_TOPIC: "Topic", RESOURCE_GROUP: "Group", RESOURCE_CLUSTER: "Cluster",
                  RESOURCE_TRANSACTIONAL_ID: "TransactionalId", 6: "DelegationToken",
                  7: "User"}                                                    # SecurityUtils.resourceTypeName
TOPIC_AUTH = int(Errors.TOPIC_AUTHORIZATION_FAILED)
ZERO_UUID = uuid.UUID(int=0)
INT32_MIN = -2**31
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})   # Topic.isInternal
# AclEntry.supportedOperations per resource type (the bits of an authorized-operations field).
SUPPORTED_OPERATIONS = {
    RESOURCE_TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS,
                     Op.ALTER_CONFIGS),
    RESOURCE_GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    RESOURCE_CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, IDEMPOTENT_WRITE,
                       Op.ALTER, Op.DESCRIBE),
}

# Kafka 4.3.1's KafkaApis: what each API the broker serves asks of the principal.
KAFKA_BROKER_API_RULES = {
    0: "WRITE on each topic; transactional batches: WRITE on the transactional id",
    1: "READ on each topic; a follower (replica id >= 0): CLUSTER_ACTION on the cluster",
    2: "DESCRIBE on each topic",
    3: "DESCRIBE on each topic (left out of an all-topics answer); auto-creation: CREATE on the cluster or topic",
    8: "READ on the group, READ on each topic",
    9: "DESCRIBE on the group, DESCRIBE on each topic (others left out of an all-topics answer)",
    10: "DESCRIBE on the group or transactional id; a share-partition key (v6+): CLUSTER_ACTION on the cluster",
    11: "READ on the group", 12: "READ on the group", 13: "READ on the group", 14: "READ on the group",
    15: "DESCRIBE on each group",
    16: "DESCRIBE on the cluster, else only the groups with DESCRIBE on them",
    21: "DELETE on each topic",
    22: "WRITE on the transactional id; without one: IDEMPOTENT_WRITE on the cluster or WRITE on any topic",
    23: "CLUSTER_ACTION on the cluster, else DESCRIBE on each topic",
    24: "WRITE on the transactional id and on each topic (v4+: CLUSTER_ACTION on the cluster)",
    25: "WRITE on the transactional id, READ on the group",
    26: "WRITE on the transactional id",
    27: "ALTER or CLUSTER_ACTION on the cluster",
    28: "WRITE on the transactional id, READ on the group, READ on each topic",
    29: "DESCRIBE on the cluster",
    30: "ALTER on the cluster (forwarded: the controller checks)",
    31: "ALTER on the cluster (forwarded: the controller checks)",
    32: "DESCRIBE_CONFIGS on the cluster, topic or group",
    33: "ALTER_CONFIGS on the cluster, topic or group (forwarded: the controller checks)",
    34: "ALTER on the cluster",
    35: "DESCRIBE on the cluster",
    **DELEGATION_TOKEN_RULES,
    42: "DELETE on each group",
    44: "ALTER_CONFIGS on the cluster, topic or group (forwarded: the controller checks)",
    47: "DELETE on the group, READ on each topic",
    60: "none (the cluster's authorized operations need DESCRIBE on it)",
    61: "READ on each topic",
    71: "none (only the listener's authentication)", 72: "none (only the listener's authentication)",
    65: "DESCRIBE on each transactional id (topics without DESCRIBE left out)",
    66: "DESCRIBE on each transactional id listed",
    88: "READ on the group, DESCRIBE on each topic of the topology; internal topics to create: CREATE on the "
        "cluster or each topic",
    89: "DESCRIBE on each group",
    68: "READ on the group, DESCRIBE on each subscribed topic",
    69: "DESCRIBE on each group, DESCRIBE on the topics its members are assigned",
    76: "READ on the group, DESCRIBE on each subscribed topic",
    77: "DESCRIBE on each group, DESCRIBE on the topics its members are assigned",
    78: "READ on the group, READ on each topic",
    79: "READ on the group, READ on each topic",
    90: "DESCRIBE on each group, DESCRIBE on each topic",
    91: "READ on the group, READ on each topic",
    92: "DELETE on the group, READ on each topic",
    83: "CLUSTER_ACTION on the cluster", 84: "CLUSTER_ACTION on the cluster", 85: "CLUSTER_ACTION on the cluster",
    86: "CLUSTER_ACTION on the cluster", 87: "CLUSTER_ACTION on the cluster",
    48: "DESCRIBE_CONFIGS on the cluster",
    49: "ALTER_CONFIGS on the cluster (forwarded: the controller checks)",
    50: "DESCRIBE on the cluster",
    51: "ALTER on the cluster (forwarded: the controller checks)",
    55: "DESCRIBE on the cluster (forwarded: the controller checks)",
    57: "ALTER on the cluster (forwarded: the controller checks)",
    64: "ALTER on the cluster (forwarded: the controller checks)",
    74: "DESCRIBE_CONFIGS on the cluster",
    75: "DESCRIBE on each topic (left out of an all-topics answer)",
    80: "ALTER on the cluster (forwarded: the controller checks)",
    81: "ALTER on the cluster (forwarded: the controller checks)",
}


def wrap(handler, check, authorizer):
    """``handler`` (an ApiHandler) behind ``check(ctx, request, may, handle)``: ``may(operation,
    resource_type, name)`` answers the authorizer's question once per distinct question."""
    async def handle(ctx, request):
        return await check(ctx, request, _audited_decisions(authorizer, ctx), handler.handle)
    return dataclasses.replace(handler, handle=handle)


def _audited_decisions(authorizer, ctx):
    """admin_authorization's once-per-question decisions, with StandardAuthorizerData's audit
    line for a denied question asked for access (``quiet``: a filter or authorized-operations
    question, which Kafka logs only at TRACE) on the kafkawire.authorizer logger, as the
    controller's checks log theirs; ``may.by_resource_type(operation, resource_type)`` is
    Authorizer.authorizeByResourceType."""
    decide = _decisions(authorizer, ctx)
    logged: set = set()

    def may(operation: int, resource_type: int, name: str, quiet: bool = False) -> bool:
        answer = decide(operation, resource_type, name)
        if not answer and not quiet and (operation, resource_type, name) not in logged:
            logged.add((operation, resource_type, name))
            audit_log.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s "
                           "for request = %s", ctx.principal, OPERATION_NAMES.get(operation, operation), ctx.peer[0],
                           RESOURCE_NAMES.get(resource_type, resource_type), name, api_table()[ctx.api_key].name)
        return answer

    may.by_resource_type = lambda operation, resource_type: _by_resource_type(authorizer, ctx, operation,
                                                                              resource_type)
    return may


def _by_resource_type(authorizer, ctx, operation: int, resource_type: int) -> bool:
    """Authorizer.authorizeByResourceType. Before the ACLs are loaded it raises AuthorizerNotReady,
    as Kafka's default implementation does through authorize(): the connection answers the request
    UNKNOWN_SERVER_ERROR, as KafkaApis' handleError does."""
    return authorizer.authorize_by_resource_type(ctx.principal, ctx.peer[0], operation, resource_type)


def authorized_operations(may, resource_type: int, name: str) -> int:
    """AuthHelper.authorizedOperations: the bit field of the operations allowed on the resource."""
    return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type] if may(op, resource_type, name, quiet=True))


def _topic_names(broker):
    def name_of(topic_id):
        image = broker.image()
        topic = None if image is None else image.topics_by_id.get(topic_id)
        return None if topic is None else topic.name
    return name_of


def _split(entries, allowed):
    kept, refused = [], []
    for entry in entries:
        (kept if allowed(entry) else refused).append(entry)
    return kept, refused


def feature_gated(enabled, check):
    """``check`` (an ACL rule) only while ``enabled()``: an API gated by a feature level answers
    UNSUPPORTED_VERSION (its handler's answer) before any ACL check, as in KafkaApis."""
    async def gated(ctx, request, may, handle):
        if not enabled():
            return await handle(ctx, request)
        return await check(ctx, request, may, handle)
    return gated


def _with(request, field: str, value):
    effective = copy.copy(request)
    setattr(effective, field, value)
    return effective


# -- Produce --

def _produce(broker):
    name_of = _topic_names(broker)

    async def check(ctx, request, may, handle):
        v = ctx.api_version
        transactional = any(_transactional_header(p.records) is not None
                            for t in request.topic_data for p in t.partition_data)
        if transactional and request.transactional_id is not None and \
                not may(Op.WRITE, RESOURCE_TRANSACTIONAL_ID, request.transactional_id):
            return _produce_refused_everywhere(request, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)

        def allowed(t):
            name = name_of(t.topic_id) if v >= 13 else t.name
            return (v >= 13 and name is None) or may(Op.WRITE, RESOURCE_TOPIC, name)   # unknown ids: UNKNOWN_TOPIC_ID
        kept, refused = _split(request.topic_data, allowed)
        if not refused:
            return await handle(ctx, request)
        response = await handle(ctx, _with(request, "topic_data", kept)) if kept else ProduceResponse(responses=[])
        if request.acks == 0:
            raise CloseConnection("a produce request with acks=0 failed authorization")
        if response is NO_RESPONSE:
            response = ProduceResponse(responses=[])
        response.responses = list(response.responses) + [_produce_topic(t, TOPIC_AUTH) for t in refused]
        return response
    return check


def _produce_topic(t, code):
    return TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=[PartitionProduceResponse(
        index=p.index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
        for p in t.partition_data])


def _produce_refused_everywhere(request, error):
    """ProduceRequest.getErrorResponse (none for acks=0: Kafka closes the connection)."""
    if request.acks == 0:
        raise CloseConnection(f"a produce request with acks=0 failed: {error.name}")
    return ProduceResponse(responses=[_produce_topic(t, int(error)) for t in request.topic_data])


# -- Fetch --

def _fetch(broker):
    async def check(ctx, request, may, handle):
        v = ctx.api_version
        replica = request.replica_state.replica_id if v >= 15 else request.replica_id
        if replica < 0:
            # a consumer: each partition of its fetch context, the session's included, is checked
            # by the fetch itself (READABLE_TOPIC), as KafkaApis checks fetchContext.foreachPartition
            token = READABLE_TOPIC.set(lambda name: may(Op.READ, RESOURCE_TOPIC, name))
            try:
                return await handle(ctx, request)
            finally:
                READABLE_TOPIC.reset(token)
        if may(Op.CLUSTER_ACTION, RESOURCE_CLUSTER, CLUSTER_NAME):
            return await handle(ctx, request)
        # a follower without CLUSTER_ACTION: every partition refused; the handler still runs (the
        # fetch session's epoch moves on), but answers at once, as Kafka does when every partition is erroneous
        effective = _with(request, "topics", [])
        effective.max_wait_ms = 0
        response = await handle(ctx, effective)
        response.responses = list(response.responses) + [fr.FetchableTopicResponse(
            topic=t.topic, topic_id=t.topic_id, partitions=[topic_authorization_failed(p.partition) for p in t.partitions])
            for t in request.topics]
        return response
    return check


# -- ListOffsets, OffsetForLeaderEpoch, DeleteRecords, DescribeProducers --

def _per_topic(field, operation, name_attr, refusal, cluster_action=False):
    """A request of topics, each needing ``operation`` on itself (or CLUSTER_ACTION on the
    cluster where ``cluster_action``); ``refusal(topic)`` answers a refused one."""
    async def check(ctx, request, may, handle):
        if cluster_action and may(Op.CLUSTER_ACTION, RESOURCE_CLUSTER, CLUSTER_NAME):
            return await handle(ctx, request)
        kept, refused = _split(getattr(request, field), lambda t: may(operation, RESOURCE_TOPIC, getattr(t, name_attr)))
        if not refused:
            return await handle(ctx, request)
        response = await handle(ctx, _with(request, field, kept))
        response.topics = list(response.topics) + [refusal(t) for t in refused]
        return response
    return check


def _list_offsets_refusal(t):
    return ListOffsetsTopicResponse(name=t.name, partitions=[ListOffsetsPartitionResponse(
        partition_index=p.partition_index, error_code=TOPIC_AUTH, timestamp=-1, offset=-1) for p in t.partitions])


def _epoch_refusal(t):
    return OffsetForLeaderTopicResult(topic=t.topic, partitions=[EpochEndOffset(
        partition=p.partition, error_code=TOPIC_AUTH, leader_epoch=-1, end_offset=-1) for p in t.partitions])


def _delete_records_refusal(t):
    return DeleteRecordsTopicResult(name=t.name, partitions=[DeleteRecordsPartitionResult(
        partition_index=p.partition_index, error_code=TOPIC_AUTH, low_watermark=-1) for p in t.partitions])


def _describe_producers_refusal(t):
    return TopicResponse(name=t.name, partitions=[PartitionResponse(
        partition_index=i, error_code=TOPIC_AUTH, error_message=Errors.TOPIC_AUTHORIZATION_FAILED.message,
        active_producers=[]) for i in t.partition_indexes])


# -- Metadata, DescribeCluster, DescribeLogDirs --

def _metadata(broker):
    name_of = _topic_names(broker)

    async def check(ctx, request, may, handle):
        v = ctx.api_version
        if request.topics is None or (v == 0 and not request.topics):      # every topic
            response = await handle(ctx, request)
            response.topics = [t for t in response.topics
                               if t.name is None or may(Op.DESCRIBE, RESOURCE_TOPIC, t.name, quiet=True)]
        else:
            response = await _named_metadata(ctx, request, may, handle, broker, name_of)
        _metadata_operations(ctx, request, response, may)
        return response
    return check


async def _named_metadata(ctx, request, may, handle, broker, name_of):
    image = broker.image()
    auto_create = getattr(request, "allow_auto_topic_creation", True) and broker.config.auto_create_topics_enable
    kept, not_creatable, not_describable = [], [], []
    for t in request.topics:
        name = t.name if t.name is not None else name_of(t.topic_id)
        if name is None:
            kept.append(t)                       # an unknown id: the handler answers UNKNOWN_TOPIC_ID
        elif not may(Op.DESCRIBE, RESOURCE_TOPIC, name):
            # a topic named by id keeps its id (ids are not secret), one named by name gets none
            not_describable.append(MetadataResponseTopic(error_code=TOPIC_AUTH, name=t.name,
                                                         topic_id=ZERO_UUID if t.name is not None else t.topic_id,
                                                         is_internal=False, partitions=[]))
        elif auto_create and (image is None or name not in image.topics_by_name) and not (
                may(Op.CREATE, RESOURCE_CLUSTER, CLUSTER_NAME, quiet=True) or may(Op.CREATE, RESOURCE_TOPIC, name)):
            not_creatable.append(MetadataResponseTopic(error_code=TOPIC_AUTH, name=name, topic_id=ZERO_UUID,
                                                       is_internal=name in INTERNAL_TOPICS, partitions=[]))
        else:
            kept.append(t)
    refused = not_creatable + not_describable           # KafkaApis' order, after the described topics
    response = await handle(ctx, _with(request, "topics", kept) if refused else request)
    response.topics = list(response.topics) + refused
    return response


def _metadata_operations(ctx, request, response, may):
    for topic in response.topics:
        if getattr(topic, "topic_authorized_operations", INT32_MIN) != INT32_MIN and topic.error_code == 0:
            topic.topic_authorized_operations = authorized_operations(may, RESOURCE_TOPIC, topic.name)
    _cluster_operations(response, may)


def _cluster_operations(response, may):
    if getattr(response, "cluster_authorized_operations", INT32_MIN) != INT32_MIN:
        response.cluster_authorized_operations = authorized_operations(may, RESOURCE_CLUSTER, CLUSTER_NAME) \
            if may(Op.DESCRIBE, RESOURCE_CLUSTER, CLUSTER_NAME) else 0


async def _describe_cluster(ctx, request, may, handle):
    response = await handle(ctx, request)
    _cluster_operations(response, may)
    return response


async def _alter_replica_log_dirs(ctx, request, may, handle):
    if may(Op.ALTER, RESOURCE_CLUSTER, CLUSTER_NAME):
        return await handle(ctx, request)
    from .alter_log_dirs import alter_replica_log_dirs_refusal
    return alter_replica_log_dirs_refusal(request, Errors.CLUSTER_AUTHORIZATION_FAILED)


async def _describe_log_dirs(ctx, request, may, handle):
    if may(Op.DESCRIBE, RESOURCE_CLUSTER, CLUSTER_NAME):
        return await handle(ctx, request)
    from kafkawire.messages.describe_log_dirs_response import DescribeLogDirsResponse
    return DescribeLogDirsResponse(error_code=int(Errors.CLUSTER_AUTHORIZATION_FAILED), results=[])


# -- the table --

def _data_checks(broker) -> dict:
    return {
        0: _produce(broker),
        1: _fetch(broker),
        2: _per_topic("topics", Op.DESCRIBE, "name", _list_offsets_refusal),
        3: _metadata(broker),
        21: _per_topic("topics", Op.DELETE, "name", _delete_records_refusal),
        23: _per_topic("topics", Op.DESCRIBE, "topic", _epoch_refusal, cluster_action=True),
        34: _alter_replica_log_dirs,
        35: _describe_log_dirs,
        60: _describe_cluster,
        61: _per_topic("topics", Op.READ, "name", _describe_producers_refusal),
        71: _no_acl, 72: _no_acl,        # client telemetry: KafkaApis asks the authorizer nothing
    }


async def _no_acl(ctx, request, may, handle):
    return await handle(ctx, request)


def authorize_broker_handlers(handlers: dict, authorizer, broker) -> dict:
    """``handlers`` (API key -> ApiHandler) with Kafka's checks in front of each one it has a
    rule for; an API without a rule is refused here (KeyError), so none is served unchecked."""
    from .describe_topic_partitions import describe_topic_partitions_check
    from .group_authorization import group_checks         # the group and transaction APIs
    from .image_admin_apis import image_admin_checks
    from .share_authorization import share_checks          # the share-group APIs (KIP-932)

    checks = {**_data_checks(broker), **group_checks(broker), **image_admin_checks(), **share_checks(broker),
              **delegation_token_checks(broker.delegation_token_apis),
              75: describe_topic_partitions_check(broker, broker.describe_topic_partitions_api, authorized_operations)}
    wrapped = dict(handlers)
    for key, handler in handlers.items():
        if key == DESCRIBE_CONFIGS:
            wrapped[key] = authorizing_describe_configs(handler, authorizer)     # ConfigHelper's checks
        elif key in checks:
            wrapped[key] = wrap(handler, checks[key], authorizer)
        elif key not in FORWARDED_UNCHECKED and key not in SASL_UNCHECKED:
            raise KeyError(f"api key {key}: the broker has no authorization rule for it")
    return wrapped


# Forwarded to the controller, which checks them with the client's principal in the Envelope, as
# Kafka's broker forwards them: CreateTopics, DeleteTopics, CreateAcls, DeleteAcls, AlterConfigs, CreatePartitions,
# ElectLeaders, IncrementalAlterConfigs, AlterPartitionReassignments, ListPartitionReassignments,
# DescribeQuorum, AlterClientQuotas, AlterUserScramCredentials, UpdateFeatures, UnregisterBroker,
# AddRaftVoter, RemoveRaftVoter.
FORWARDED_UNCHECKED = frozenset({19, 20, 30, 31, 33, 37, 43, 44, 45, 46, 55, 49, 51, 57, 64, 80, 81})
DESCRIBE_CONFIGS = 32
# SaslHandshake and SaslAuthenticate need no ACL (Kafka's KafkaApis checks none): on an
# authenticated connection they answer ILLEGAL_SASL_STATE.
SASL_UNCHECKED = frozenset({17, 36})
