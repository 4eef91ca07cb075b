"""The ACL checks of Kafka's KafkaApis for the group and transaction APIs (kafkawire.broker.authorization
puts them in front of the handlers): a refused group or transactional id is answered with the
request's getErrorResponse, a refused topic leaves the request and is answered per partition.
"""
from __future__ import annotations

import copy

from kafkawire.messages.add_partitions_to_txn_response import (AddPartitionsToTxnPartitionResult,
                                                               AddPartitionsToTxnResponse,
                                                               AddPartitionsToTxnTopicResult)
from kafkawire.messages.add_offsets_to_txn_response import AddOffsetsToTxnResponse
from kafkawire.messages.consumer_group_heartbeat_response import ConsumerGroupHeartbeatResponse
from kafkawire.messages.delete_groups_response import DeletableGroupResult
from kafkawire.messages.describe_groups_response import DescribedGroup
from kafkawire.messages import consumer_group_describe_response as cgd
from kafkawire.messages.describe_transactions_response import TransactionState
from kafkawire.messages.end_txn_response import EndTxnResponse
from kafkawire.messages.find_coordinator_response import Coordinator, FindCoordinatorResponse
from kafkawire.messages.heartbeat_response import HeartbeatResponse
from kafkawire.messages.init_producer_id_response import InitProducerIdResponse
from kafkawire.messages.join_group_response import JoinGroupResponse
from kafkawire.messages.leave_group_response import LeaveGroupResponse
from kafkawire.messages import offset_commit_response as ocr
from kafkawire.messages import offset_fetch_response as ofr
from kafkawire.messages.offset_delete_response import (OffsetDeleteResponse, OffsetDeleteResponsePartition,
                                                      OffsetDeleteResponseTopic)
from kafkawire.messages.sync_group_response import SyncGroupResponse
from kafkawire.messages import txn_offset_commit_response as tocr
from kafkawire.messages.write_txn_markers_response import (WritableTxnMarkerPartitionResult,
                                                           WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
                                                           WriteTxnMarkersResponse)
from kafkawire.net.authorizer import CLUSTER_NAME, RESOURCE_CLUSTER, RESOURCE_TOPIC, Op
from kafkawire.protocol.error_codes import Errors

from .authorization import (IDEMPOTENT_WRITE, RESOURCE_GROUP, RESOURCE_TRANSACTIONAL_ID, TOPIC_AUTH, TWO_PHASE_COMMIT,
                            ZERO_UUID, _split, _topic_names, _with, authorized_operations, feature_gated)
from .group_apis import sync_protocol_present
from .streams_apis import streams_checks

__all__ = ["group_checks"]

GROUP_AUTH = int(Errors.GROUP_AUTHORIZATION_FAILED)
TXN_AUTH = int(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
CLUSTER_AUTH = int(Errors.CLUSTER_AUTHORIZATION_FAILED)
GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2
INT32_MIN = -2**31


def _group_gate(operation, refusal):
    """The whole request needs ``operation`` on its group_id; ``refusal(ctx, request)`` answers otherwise."""
    async def check(ctx, request, may, handle):
        if may(operation, RESOURCE_GROUP, request.group_id):
            return await handle(ctx, request)
        return refusal(ctx, request)
    return check


def _join_refusal(ctx, request):
    return JoinGroupResponse(error_code=GROUP_AUTH, generation_id=-1, leader="", member_id="", members=[],
                             protocol_name=None if ctx.api_version >= 7 else "")


async def _sync_group(ctx, request, may, handle):
    if not sync_protocol_present(ctx.api_version, request):
        return await handle(ctx, request)              # INCONSISTENT_GROUP_PROTOCOL comes first
    if may(Op.READ, RESOURCE_GROUP, request.group_id):
        return await handle(ctx, request)
    return SyncGroupResponse(error_code=GROUP_AUTH, assignment=b"")


# -- OffsetCommit, TxnOffsetCommit, OffsetDelete: a group, then READ on each topic --

def _topics_after(field, refuse_topic, name_of):
    """READ on each topic of ``request.<field>`` (named, or by id when the name is empty)."""
    async def check(ctx, request, may, handle):
        def allowed(t):
            name = t.name or (name_of(t.topic_id) if getattr(t, "topic_id", None) else None)
            return not name or may(Op.READ, RESOURCE_TOPIC, name)          # unknown ids: the handler answers
        kept, refused = _split(getattr(request, field), allowed)
        if not refused:
            return await handle(ctx, request)
        response = await handle(ctx, _with(request, field, kept))
        response.topics = list(response.topics) + [refuse_topic(t, TOPIC_AUTH) for t in refused]
        return response
    return check


def _commit_topic(t, code):
    return ocr.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
        ocr.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code) for p in t.partitions])


def _txn_commit_topic(t, code):
    return tocr.TxnOffsetCommitResponseTopic(
        name=t.name, topic_id=getattr(t, "topic_id", None) or ZERO_UUID, partitions=[
            tocr.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions])


def _offset_delete_topic(t, code):
    return OffsetDeleteResponseTopic(name=t.name, partitions=[
        OffsetDeleteResponsePartition(partition_index=p.partition_index, error_code=code) for p in t.partitions])


def _then(first, second):
    async def check(ctx, request, may, handle):
        return await first(ctx, request, may, lambda c, r: second(c, r, may, handle))
    return check


def _offset_commit(name_of):
    def refusal(ctx, request):
        return ocr.OffsetCommitResponse(topics=[_commit_topic(t, GROUP_AUTH) for t in request.topics])
    return _then(_group_gate(Op.READ, refusal), _topics_after("topics", _commit_topic, name_of))


def _txn_offset_commit(name_of):
    async def check(ctx, request, may, handle):
        for allowed, code in ((may(Op.WRITE, RESOURCE_TRANSACTIONAL_ID, request.transactional_id), TXN_AUTH),
                              (may(Op.READ, RESOURCE_GROUP, request.group_id), GROUP_AUTH)):
            if not allowed:
                return tocr.TxnOffsetCommitResponse(topics=[_txn_commit_topic(t, code) for t in request.topics])
        return await _topics_after("topics", _txn_commit_topic, name_of)(ctx, request, may, handle)
    return check


def _offset_delete(name_of):
    return _then(_group_gate(Op.DELETE, lambda ctx, request: OffsetDeleteResponse(error_code=GROUP_AUTH, topics=[])),
                 _topics_after("topics", _offset_delete_topic, name_of))


# -- OffsetFetch --

def _offset_fetch(name_of):
    async def check(ctx, request, may, handle):
        if ctx.api_version >= 8:
            return await _offset_fetch_groups(ctx, request, may, handle, name_of)
        if not may(Op.DESCRIBE, RESOURCE_GROUP, request.group_id):
            if ctx.api_version >= 2:
                return ofr.OffsetFetchResponse(error_code=GROUP_AUTH, topics=[])
            return ofr.OffsetFetchResponse(topics=[_fetch_topic_v0(t, GROUP_AUTH) for t in request.topics or []])
        return await _filtered_fetch_v7(ctx, request, may, handle, name_of)
    return check


async def _filtered_fetch_v7(ctx, request, may, handle, name_of):
    """OffsetFetch v1-7 (one group): refused topics out of the request (answered
    TOPIC_AUTHORIZATION_FAILED), or, for all the group's topics, the ones without DESCRIBE left
    out of the answer."""
    if request.topics is None:
        response = await handle(ctx, request)
        response.topics = [t for t in response.topics if may(Op.DESCRIBE, RESOURCE_TOPIC, t.name)]
        return response
    kept, refused = _split(request.topics, lambda t: _may_describe(may, t, name_of))
    if not refused:
        return await handle(ctx, request)
    response = await handle(ctx, _with(request, "topics", kept))
    response.topics = list(response.topics) + [_fetch_topic_v0(t, TOPIC_AUTH) for t in refused]
    return response


def _may_describe(may, t, name_of):
    name = t.name or (name_of(t.topic_id) if getattr(t, "topic_id", None) else None)
    return not name or may(Op.DESCRIBE, RESOURCE_TOPIC, name)


def _fetch_topic_v0(t, code):
    return ofr.OffsetFetchResponseTopic(name=t.name, partitions=[ofr.OffsetFetchResponsePartition(
        partition_index=i, committed_offset=-1, committed_leader_epoch=-1, metadata="", error_code=code)
        for i in t.partition_indexes])


def _fetch_topic(t, code):
    return ofr.OffsetFetchResponseTopics(name=t.name, topic_id=getattr(t, "topic_id", None) or ZERO_UUID, partitions=[
        ofr.OffsetFetchResponsePartitions(partition_index=i, committed_offset=-1, committed_leader_epoch=-1,
                                          metadata="", error_code=code) for i in t.partition_indexes])


async def _offset_fetch_groups(ctx, request, may, handle, name_of):
    kept, refused = _split(request.groups, lambda g: may(Op.DESCRIBE, RESOURCE_GROUP, g.group_id))
    answers = []
    if kept:
        groups = [copy.copy(g) for g in kept]
        effective = _with(request, "groups", groups)
        refused_topics = {}
        for g in groups:
            if g.topics is not None:
                g.topics, refused_topics[g.group_id] = _split(g.topics, lambda t: _may_describe(may, t, name_of))
        response = await handle(ctx, effective)
        for answer in response.groups:
            if answer.error_code == 0:
                answer.topics = [t for t in answer.topics if may(Op.DESCRIBE, RESOURCE_TOPIC, t.name)] + \
                    [_fetch_topic(t, TOPIC_AUTH) for t in refused_topics.get(answer.group_id, ())]
        answers = list(response.groups)
    else:
        response = ofr.OffsetFetchResponse(groups=[])
    response.groups = answers + [ofr.OffsetFetchResponseGroup(group_id=g.group_id, error_code=GROUP_AUTH, topics=[])
                                 for g in refused]
    return response


# -- FindCoordinator, DescribeGroups, ListGroups, DeleteGroups, the KIP-848 APIs --

def _coordinator_refusal(key_type: int):
    if key_type == GROUP_KEY:
        return RESOURCE_GROUP, Errors.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION_KEY:
        return RESOURCE_TRANSACTIONAL_ID, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None, None


async def _find_coordinator(ctx, request, may, handle):
    if request.key_type == SHARE_KEY and ctx.api_version >= 6 and \
            not may(Op.CLUSTER_ACTION, RESOURCE_CLUSTER, CLUSTER_NAME):
        # KafkaApis' authorizeClusterOperation throws: the whole request is refused
        error = Errors.CLUSTER_AUTHORIZATION_FAILED
        return FindCoordinatorResponse(coordinators=[Coordinator(
            key=key, node_id=-1, host="", port=-1, error_code=int(error), error_message=error.message)
            for key in request.coordinator_keys])
    resource, error = _coordinator_refusal(request.key_type)
    if resource is None:
        return await handle(ctx, request)
    if ctx.api_version < 4:
        if may(Op.DESCRIBE, resource, request.key):
            return await handle(ctx, request)
        return FindCoordinatorResponse(error_code=int(error), error_message=error.message, node_id=-1, host="", port=-1)
    kept, refused = _split(request.coordinator_keys, lambda key: may(Op.DESCRIBE, resource, key))
    if not refused:
        return await handle(ctx, request)
    response = await handle(ctx, _with(request, "coordinator_keys", kept)) if kept else \
        FindCoordinatorResponse(coordinators=[])
    response.coordinators = list(response.coordinators) + [Coordinator(
        key=key, node_id=-1, host="", port=-1, error_code=int(error), error_message=error.message) for key in refused]
    return response


def _described_groups(field, refuse):
    """DescribeGroups / ConsumerGroupDescribe: DESCRIBE on each group, and the authorized
    operations (when asked) of the ones described."""
    async def check(ctx, request, may, handle):
        kept, refused = _split(getattr(request, field), lambda g: may(Op.DESCRIBE, RESOURCE_GROUP, g))
        response = await handle(ctx, _with(request, field, kept)) if refused else await handle(ctx, request)
        for group in response.groups:
            if group.authorized_operations != INT32_MIN and group.error_code == 0:
                group.authorized_operations = authorized_operations(may, RESOURCE_GROUP, group.group_id)
        if field == "group_ids":
            response.groups = [_hide_assigned_topics(group, may) for group in response.groups]
        response.groups = list(response.groups) + [refuse(g) for g in refused]
        return response
    return check


def _hide_assigned_topics(group, may):
    """ConsumerGroupDescribe: a group whose members are assigned a topic the principal may not
    DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED instead of described."""
    if group.error_code != 0:
        return group
    names = {t.topic_name for m in group.members for assignment in (m.assignment, m.target_assignment)
             if assignment is not None for t in assignment.topic_partitions}
    if all(may(Op.DESCRIBE, RESOURCE_TOPIC, name) for name in names):
        return group
    return cgd.DescribedGroup(group_id=group.group_id, error_code=TOPIC_AUTH, members=[],
                              error_message="The group has described topic(s) that the client is not authorized "
                                            "to describe.")


async def _list_groups(ctx, request, may, handle):
    response = await handle(ctx, request)
    if not may(Op.DESCRIBE, RESOURCE_CLUSTER, CLUSTER_NAME, quiet=True):
        response.groups = [g for g in response.groups if may(Op.DESCRIBE, RESOURCE_GROUP, g.group_id, quiet=True)]
    return response


async def _delete_groups(ctx, request, may, handle):
    kept, refused = _split(request.groups_names, lambda g: may(Op.DELETE, RESOURCE_GROUP, g))
    if not refused:
        return await handle(ctx, request)
    response = await handle(ctx, _with(request, "groups_names", kept))
    response.results = list(response.results) + [DeletableGroupResult(group_id=g, error_code=GROUP_AUTH)
                                                 for g in refused]
    return response


def _consumer_protocol(broker, check):
    """ConsumerGroupHeartbeat / ConsumerGroupDescribe: UNSUPPORTED_VERSION (the handler's answer)
    while group.version is below 1 comes before any ACL check, as in KafkaApis."""
    return feature_gated(lambda: broker.group_apis.consumer_apis.enabled(), check)


async def _consumer_group_heartbeat(ctx, request, may, handle):
    if not may(Op.READ, RESOURCE_GROUP, request.group_id):
        return ConsumerGroupHeartbeatResponse(error_code=GROUP_AUTH, error_message=None)
    topics = set(request.subscribed_topic_names or ())
    if any(not may(Op.DESCRIBE, RESOURCE_TOPIC, t) for t in topics):
        return ConsumerGroupHeartbeatResponse(error_code=TOPIC_AUTH, error_message=None)
    return await handle(ctx, request)


# -- transactions --

def _txn_gate(response_of):
    async def check(ctx, request, may, handle):
        if may(Op.WRITE, RESOURCE_TRANSACTIONAL_ID, request.transactional_id):
            return await handle(ctx, request)
        return response_of(TXN_AUTH)
    return check


async def _init_producer_id(ctx, request, may, handle):
    refused = InitProducerIdResponse(producer_id=-1, producer_epoch=-1)
    if request.transactional_id is not None:
        if not may(Op.WRITE, RESOURCE_TRANSACTIONAL_ID, request.transactional_id) or \
                (getattr(request, "enable2_pc", False) and
                 not may(TWO_PHASE_COMMIT, RESOURCE_TRANSACTIONAL_ID, request.transactional_id)):
            refused.error_code = TXN_AUTH
            return refused
    elif not may(IDEMPOTENT_WRITE, RESOURCE_CLUSTER, CLUSTER_NAME, quiet=True) and \
            not may.by_resource_type(Op.WRITE, RESOURCE_TOPIC):
        refused.error_code = CLUSTER_AUTH
        return refused
    return await handle(ctx, request)


async def _add_offsets_to_txn(ctx, request, may, handle):
    if not may(Op.WRITE, RESOURCE_TRANSACTIONAL_ID, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=TXN_AUTH)
    if not may(Op.READ, RESOURCE_GROUP, request.group_id):
        return AddOffsetsToTxnResponse(error_code=GROUP_AUTH)
    return await handle(ctx, request)


async def _add_partitions_to_txn(ctx, request, may, handle):
    if ctx.api_version >= 4:             # from brokers only (KIP-890 verification)
        if may(Op.CLUSTER_ACTION, RESOURCE_CLUSTER, CLUSTER_NAME):
            return await handle(ctx, request)
        return AddPartitionsToTxnResponse(error_code=CLUSTER_AUTH, results_by_transaction=[])
    topics = request.v3_and_below_topics
    if not may(Op.WRITE, RESOURCE_TRANSACTIONAL_ID, request.v3_and_below_transactional_id):
        return _add_partitions_v3(topics, lambda name: TXN_AUTH)
    refused = {t.name for t in topics if not t.name.startswith("__") and not may(Op.WRITE, RESOURCE_TOPIC, t.name)}
    if refused:        # the whole transaction fails: the others were not attempted
        return _add_partitions_v3(topics, lambda name: TOPIC_AUTH if name in refused
                                  else int(Errors.OPERATION_NOT_ATTEMPTED))
    return await handle(ctx, request)


def _add_partitions_v3(topics, code_of):
    return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=[AddPartitionsToTxnTopicResult(
        name=t.name, results_by_partition=[AddPartitionsToTxnPartitionResult(
            partition_index=p, partition_error_code=code_of(t.name)) for p in t.partitions]) for t in topics])


async def _write_txn_markers(ctx, request, may, handle):
    if may(Op.ALTER, RESOURCE_CLUSTER, CLUSTER_NAME) or may(Op.CLUSTER_ACTION, RESOURCE_CLUSTER, CLUSTER_NAME):
        return await handle(ctx, request)
    return WriteTxnMarkersResponse(markers=[WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
        WritableTxnMarkerTopicResult(name=t.name, partitions=[WritableTxnMarkerPartitionResult(
            partition_index=p, error_code=CLUSTER_AUTH) for p in t.partition_indexes]) for t in m.topics])
        for m in request.markers])


async def _describe_transactions(ctx, request, may, handle):
    kept, refused = _split(request.transactional_ids, lambda t: may(Op.DESCRIBE, RESOURCE_TRANSACTIONAL_ID, t))
    response = await handle(ctx, _with(request, "transactional_ids", kept)) if refused else await handle(ctx, request)
    for state in response.transaction_states:
        state.topics = [t for t in state.topics if may(Op.DESCRIBE, RESOURCE_TOPIC, t.topic)]
    # only the id and the code, the schema's defaults (0, "") elsewhere, as KafkaApis builds it
    response.transaction_states = list(response.transaction_states) + [TransactionState(
        transactional_id=t, error_code=TXN_AUTH, topics=[]) for t in refused]
    return response


async def _list_transactions(ctx, request, may, handle):
    response = await handle(ctx, request)
    response.transaction_states = [s for s in response.transaction_states
                                   if may(Op.DESCRIBE, RESOURCE_TRANSACTIONAL_ID, s.transactional_id)]
    return response


def group_checks(broker) -> dict:
    name_of = _topic_names(broker)
    return {
        8: _offset_commit(name_of),
        9: _offset_fetch(name_of),
        10: _find_coordinator,
        11: _group_gate(Op.READ, _join_refusal),
        12: _group_gate(Op.READ, lambda ctx, request: HeartbeatResponse(error_code=GROUP_AUTH)),
        13: _group_gate(Op.READ, lambda ctx, request: LeaveGroupResponse(error_code=GROUP_AUTH, members=[])),
        14: _sync_group,
        15: _described_groups("groups", lambda g: DescribedGroup(group_id=g, error_code=GROUP_AUTH, members=[])),
        16: _list_groups,
        22: _init_producer_id,
        24: _add_partitions_to_txn,
        25: _add_offsets_to_txn,
        26: _txn_gate(lambda code: EndTxnResponse(error_code=code, producer_id=-1, producer_epoch=-1)),
        27: _write_txn_markers,
        28: _txn_offset_commit(name_of),
        42: _delete_groups,
        47: _offset_delete(name_of),
        65: _describe_transactions,
        66: _list_transactions,
        68: _consumer_protocol(broker, _consumer_group_heartbeat),
        69: _consumer_protocol(broker, _described_groups("group_ids", lambda g: cgd.DescribedGroup(
            group_id=g, error_code=GROUP_AUTH, members=[]))),
        **streams_checks(broker),
    }
