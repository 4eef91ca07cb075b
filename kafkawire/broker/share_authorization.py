"""The ACL checks of Kafka 4.3.1's KafkaApis for the share-group APIs (KIP-932), in front of
kafkawire.broker.share_apis' handlers (``authorizer.class.name`` set). UNSUPPORTED_VERSION (the
handler's answer while ``share.version`` is below 1) comes before any check, as in KafkaApis.

ShareGroupHeartbeat: READ on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on each
subscribed topic (TOPIC_AUTHORIZATION_FAILED). ShareGroupDescribe: DESCRIBE on each group, and a
group whose members are assigned a topic the principal may not DESCRIBE is answered
TOPIC_AUTHORIZATION_FAILED. ShareFetch and ShareAcknowledge: READ on the group (the whole
request), and READ on each topic, checked by the handler for every partition of the share
session (``topic_reader``), as SharePartitionManager's partitions are.
DescribeShareGroupOffsets: DESCRIBE on each group and each topic; AlterShareGroupOffsets: READ on
the group and each topic; DeleteShareGroupOffsets: DELETE on the group, READ on each topic.
The share coordinator's inter-broker APIs (83-87): CLUSTER_ACTION on the cluster, else every
share-partition CLUSTER_AUTHORIZATION_FAILED (their toGlobalErrorResponse); they are not gated by
``share.version`` (KafkaApis leaves that to ShareFetch and ShareAcknowledge).
"""
from __future__ import annotations

from kafkawire.messages import alter_share_group_offsets_response as asgo
from kafkawire.messages import delete_share_group_offsets_response as dlgo
from kafkawire.messages import describe_share_group_offsets_response as dsgo
from kafkawire.messages import share_group_describe_response as sgd
from kafkawire.messages import delete_share_group_state_response as dsr
from kafkawire.messages import initialize_share_group_state_response as isr
from kafkawire.messages import read_share_group_state_response as rsr
from kafkawire.messages import read_share_group_state_summary_response as rssr
from kafkawire.messages import write_share_group_state_response as wsr
from kafkawire.messages.share_acknowledge_response import ShareAcknowledgeResponse
from kafkawire.messages.share_fetch_response import ShareFetchResponse
from kafkawire.messages.share_group_heartbeat_response import ShareGroupHeartbeatResponse
from kafkawire.net.authorizer import CLUSTER_NAME, RESOURCE_CLUSTER, RESOURCE_TOPIC, Op
from kafkawire.protocol.error_codes import Errors

from .authorization import INT32_MIN, RESOURCE_GROUP, TOPIC_AUTH, _audited_decisions, _split, _with, \
    authorized_operations, feature_gated

__all__ = ["share_checks", "topic_reader"]

GROUP_AUTH = int(Errors.GROUP_AUTHORIZATION_FAILED)

def topic_reader(broker, ctx):
    """``may_read(topic name)`` for one request: READ on the topic (always True without an
    authorizer)."""
    if broker.authorizer is None:
        return lambda name: True
    may = _audited_decisions(broker.authorizer, ctx)
    return lambda name: may(Op.READ, RESOURCE_TOPIC, name)


def _gated(broker, check):
    return feature_gated(lambda: broker.group_apis.share_apis.enabled(), check)


async def _heartbeat(ctx, request, may, handle):
    if not may(Op.READ, RESOURCE_GROUP, request.group_id):
        return ShareGroupHeartbeatResponse(error_code=GROUP_AUTH)
    if not request.member_id or len(request.member_id) > 36:
        return await handle(ctx, request)             # KafkaApis' isMemberIdValid: INVALID_REQUEST first
    if any(not may(Op.DESCRIBE, RESOURCE_TOPIC, t) for t in set(request.subscribed_topic_names or ())):
        return ShareGroupHeartbeatResponse(error_code=TOPIC_AUTH)
    return await handle(ctx, request)


async def _describe(ctx, request, may, handle):
    kept, refused = _split(request.group_ids, lambda g: may(Op.DESCRIBE, RESOURCE_GROUP, g))
    response = await handle(ctx, _with(request, "group_ids", kept)) if refused else await handle(ctx, request)
    groups = []
    for group in response.groups:
        if group.authorized_operations != INT32_MIN and group.error_code == 0:
            group.authorized_operations = authorized_operations(may, RESOURCE_GROUP, group.group_id)
        names = {t.topic_name for m in group.members if m.assignment is not None
                 for t in m.assignment.topic_partitions}
        if group.error_code == 0 and any(not may(Op.DESCRIBE, RESOURCE_TOPIC, n) for n in names):
            group = sgd.DescribedGroup(group_id=group.group_id, error_code=TOPIC_AUTH, members=[],
                                       error_message="The group has described topic(s) that the client is not "
                                                     "authorized to describe.")
        groups.append(group)
    response.groups = groups + [sgd.DescribedGroup(group_id=g, error_code=GROUP_AUTH, members=[]) for g in refused]
    return response


def _group_read(response_of):
    async def check(ctx, request, may, handle):
        if request.group_id is not None and not may(Op.READ, RESOURCE_GROUP, request.group_id):
            return response_of()
        return await handle(ctx, request)
    return check


async def _describe_offsets(ctx, request, may, handle):
    """DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED), DESCRIBE on each topic: unnamed
    topics the principal may not describe are left out, named ones answered
    TOPIC_AUTHORIZATION_FAILED (start offset and lag -1), as KafkaApis answers them."""
    refused_topics = {}
    groups = []
    for group in request.groups:
        if not may(Op.DESCRIBE, RESOURCE_GROUP, group.group_id):
            continue
        if group.topics:
            kept, refused = _split(group.topics, lambda t: may(Op.DESCRIBE, RESOURCE_TOPIC, t.topic_name))
            if refused:
                refused_topics[group.group_id] = refused
                group = _with(group, "topics", kept)
        groups.append(group)
    response = await handle(ctx, _with(request, "groups", groups))
    answered = {g.group_id: g for g in response.groups}
    out = []
    for group in request.groups:
        answer = answered.get(group.group_id)
        if answer is None:
            out.append(dsgo.DescribeShareGroupOffsetsResponseGroup(group_id=group.group_id, error_code=GROUP_AUTH))
            continue
        if answer.error_code == 0 and group.topics is None:
            answer.topics = [t for t in answer.topics if may(Op.DESCRIBE, RESOURCE_TOPIC, t.topic_name)]
        elif answer.error_code == 0:
            answer.topics = answer.topics + [dsgo.DescribeShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, partitions=[dsgo.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=p, start_offset=-1, lag=-1, error_code=TOPIC_AUTH,
                    error_message=Errors.TOPIC_AUTHORIZATION_FAILED.message) for p in t.partitions])
                for t in refused_topics.get(group.group_id, ())]
        out.append(answer)
    response.groups = out
    return response


async def _alter_offsets(ctx, request, may, handle):
    """READ on the group (the whole request), READ on each topic (its partitions answered
    TOPIC_AUTHORIZATION_FAILED, merged into the coordinator's answer unless it refused it all)."""
    if not may(Op.READ, RESOURCE_GROUP, request.group_id):
        return asgo.AlterShareGroupOffsetsResponse(error_code=GROUP_AUTH,
                                                   error_message=Errors.GROUP_AUTHORIZATION_FAILED.message)
    kept, refused = _split(request.topics, lambda t: may(Op.READ, RESOURCE_TOPIC, t.topic_name))
    response = await handle(ctx, _with(request, "topics", kept) if refused else request)
    if response.error_code == 0 and refused:
        response.responses = [asgo.AlterShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, partitions=[asgo.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=TOPIC_AUTH,
                error_message=Errors.TOPIC_AUTHORIZATION_FAILED.message) for p in t.partitions])
            for t in refused] + response.responses
    return response


async def _delete_offsets(ctx, request, may, handle):
    """DELETE on the group (the whole request), READ on each topic."""
    if not may(Op.DELETE, RESOURCE_GROUP, request.group_id):
        return dlgo.DeleteShareGroupOffsetsResponse(error_code=GROUP_AUTH,
                                                    error_message=Errors.GROUP_AUTHORIZATION_FAILED.message)
    kept, refused = _split(request.topics, lambda t: may(Op.READ, RESOURCE_TOPIC, t.topic_name))
    response = await handle(ctx, _with(request, "topics", kept) if refused else request)
    if response.error_code == 0 and refused:
        response.responses = [dlgo.DeleteShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, error_code=TOPIC_AUTH, error_message=Errors.TOPIC_AUTHORIZATION_FAILED.message)
            for t in refused] + response.responses
    return response


def _cluster_action(module, response_cls, result_cls):
    """A share-state API: CLUSTER_ACTION on the cluster, else each share-partition refused."""
    refused = int(Errors.CLUSTER_AUTHORIZATION_FAILED)

    async def check(ctx, request, may, handle):
        if may(Op.CLUSTER_ACTION, RESOURCE_CLUSTER, CLUSTER_NAME):
            return await handle(ctx, request)
        return response_cls(results=[result_cls(topic_id=t.topic_id, partitions=[module.PartitionResult(
            partition=p.partition, error_code=refused, error_message=Errors.CLUSTER_AUTHORIZATION_FAILED.message)
            for p in t.partitions]) for t in request.topics])
    return check


def share_checks(broker) -> dict:
    return {
        83: _cluster_action(isr, isr.InitializeShareGroupStateResponse, isr.InitializeStateResult),
        84: _cluster_action(rsr, rsr.ReadShareGroupStateResponse, rsr.ReadStateResult),
        85: _cluster_action(wsr, wsr.WriteShareGroupStateResponse, wsr.WriteStateResult),
        86: _cluster_action(dsr, dsr.DeleteShareGroupStateResponse, dsr.DeleteStateResult),
        87: _cluster_action(rssr, rssr.ReadShareGroupStateSummaryResponse, rssr.ReadStateSummaryResult),
        76: _gated(broker, _heartbeat),
        77: _gated(broker, _describe),
        78: _gated(broker, _group_read(lambda: ShareFetchResponse(error_code=GROUP_AUTH, responses=[]))),
        79: _gated(broker, _group_read(lambda: ShareAcknowledgeResponse(error_code=GROUP_AUTH, responses=[]))),
        90: _gated(broker, _describe_offsets),
        91: _gated(broker, _alter_offsets),
        92: _gated(broker, _delete_offsets),
    }
