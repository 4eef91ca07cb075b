"""Kafka's getErrorResponse of the group, offset and share-group state requests (see
kafkawire.net.error_responses): ``build(request, version, code)`` for each API key."""
from __future__ import annotations

from kafkawire.net.client_error_responses import response_of, struct_of
from kafkawire.protocol.error_codes import Errors

__all__ = ["GROUP_ERROR_RESPONSES"]

OFFSET_FETCH_TOP_LEVEL_ERROR_VERSION = 2     # before it, every partition carries the error
OFFSET_FETCH_BATCH_VERSION = 8               # from it, every group does
JOIN_GROUP_NULL_PROTOCOL_VERSION = 7         # from it, no protocol name is null rather than ""
AUTHORIZED_OPERATIONS_OMITTED = -2**31


def _offset_commit(request, version, code):
    topic_cls, partition_cls = struct_of(8, "topics"), struct_of(8, "topics", "partitions")
    return response_of(8, topics=[topic_cls(name=t.name, topic_id=t.topic_id, partitions=[
        partition_cls(partition_index=p.partition_index, error_code=code) for p in t.partitions])
        for t in request.topics])


def _offset_fetch(request, version, code):
    if version >= OFFSET_FETCH_BATCH_VERSION:
        group_cls = struct_of(9, "groups")
        return response_of(9, groups=[group_cls(group_id=g.group_id, error_code=code) for g in request.groups])
    if version >= OFFSET_FETCH_TOP_LEVEL_ERROR_VERSION:
        return response_of(9, error_code=code)
    topic_cls, partition_cls = struct_of(9, "topics"), struct_of(9, "topics", "partitions")
    return response_of(9, topics=[topic_cls(name=t.name, partitions=[partition_cls(
        partition_index=p, error_code=code, committed_offset=-1, metadata="", committed_leader_epoch=-1)
        for p in t.partition_indexes]) for t in request.topics])


def _join_group(request, version, code):
    protocol_name = None if version >= JOIN_GROUP_NULL_PROTOCOL_VERSION else ""
    return response_of(11, error_code=code, generation_id=-1, protocol_name=protocol_name, leader="", member_id="",
                       members=[])


def _sync_group(request, version, code):
    return response_of(14, error_code=code, assignment=b"")


def _describe_groups(request, version, code):
    """DescribeGroupsResponse.groupError: the group with empty state, protocol type and data."""
    group_cls = struct_of(15, "groups")
    return response_of(15, groups=[group_cls(group_id=g, error_code=code, group_state="", protocol_type="",
                                             protocol_data="", members=[],
                                             authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
                                   for g in request.groups])


def _txn_offset_commit(request, version, code):
    topic_cls, partition_cls = struct_of(28, "topics"), struct_of(28, "topics", "partitions")
    return response_of(28, topics=[topic_cls(name=t.name, partitions=[
        partition_cls(partition_index=p.partition_index, error_code=code) for p in t.partitions])
        for t in request.topics])


def _delete_groups(request, version, code):
    result_cls = struct_of(42, "results")
    return response_of(42, results=[result_cls(group_id=g, error_code=code) for g in request.groups_names])


def _each_group_id(api_key):
    """ConsumerGroupDescribe's, ShareGroupDescribe's and StreamsGroupDescribe's: each group id
    with the code."""
    def build(request, version, code):
        group_cls = struct_of(api_key, "groups")
        return response_of(api_key, groups=[group_cls(group_id=g, error_code=code) for g in request.group_ids])
    return build


def _share_state(api_key: int, with_message: bool):
    """The share coordinator's state APIs: each partition of each topic id with the code (and
    for the three that carry one, the code's default text)."""
    def build(request, version, code):
        result_cls, partition_cls = struct_of(api_key, "results"), struct_of(api_key, "results", "partitions")
        message = {"error_message": Errors.for_code(code).message} if with_message else {}
        return response_of(api_key, results=[result_cls(topic_id=t.topic_id, partitions=[
            partition_cls(partition=p.partition, error_code=code, **message) for p in t.partitions])
            for t in request.topics])
    return build


def _describe_share_group_offsets(request, version, code):
    """Each group with the code and, for UNKNOWN_SERVER_ERROR, its default text (the exception's otherwise)."""
    group_cls = struct_of(90, "groups")
    return response_of(90, groups=[group_cls(group_id=g.group_id, error_code=code,
                                             error_message=Errors.for_code(code).message) for g in request.groups])


def _top_level_with_text(api_key):
    """AlterShareGroupOffsets' and DeleteShareGroupOffsets': the code and its default text."""
    def build(request, version, code):
        return response_of(api_key, error_code=code, error_message=Errors.for_code(code).message)
    return build


GROUP_ERROR_RESPONSES = {
    8: _offset_commit,
    9: _offset_fetch,
    11: _join_group,
    14: _sync_group,
    15: _describe_groups,
    28: _txn_offset_commit,
    42: _delete_groups,
    69: _each_group_id(69),
    77: _each_group_id(77),
    83: _share_state(83, with_message=False),
    84: _share_state(84, with_message=True),
    85: _share_state(85, with_message=True),
    86: _share_state(86, with_message=False),
    87: _share_state(87, with_message=True),
    89: _each_group_id(89),
    90: _describe_share_group_offsets,
    91: _top_level_with_text(91),
    92: _top_level_with_text(92),
}
