"""Kafka's getErrorResponse of the admin requests (see kafkawire.net.error_responses): topics,
configs, partitions, ACLs, quotas, SCRAM credentials, delegation tokens, the quorum. Also used
where Kafka answers such a request as a whole with another error: a broker's forwarding that
failed (kafkawire.broker.forwarding), and a controller's authorizer that has not loaded the
metadata yet (kafkawire.net.admin_authorization)."""
from __future__ import annotations

from kafkawire.metadata.delegation_tokens import token_error_response
from kafkawire.net.client_error_responses import response_of, struct_of
from kafkawire.protocol.error_codes import Errors

__all__ = ["ADMIN_ERROR_RESPONSES", "create_topics_error", "delete_topics_error", "create_partitions_error"]

NAMES_IN_TOPICS_VERSION = 6    # DeleteTopics names its topics in Topics (with ids) from v6
ELECT_LEADERS_TOP_LEVEL_VERSION = 1


def create_topics_error(request, version, code):
    result_cls = struct_of(19, "topics")
    return response_of(19, topics=[result_cls(name=t.name, error_code=code, error_message=None)
                                   for t in request.topics])


def delete_topics_error(request, version, code):
    result_cls = struct_of(20, "responses")
    if version < NAMES_IN_TOPICS_VERSION:
        return response_of(20, responses=[result_cls(name=n, error_code=code) for n in request.topic_names])
    return response_of(20, responses=[result_cls(name=t.name, topic_id=t.topic_id, error_code=code)
                                      for t in request.topics])


def create_partitions_error(request, version, code):
    result_cls = struct_of(37, "results")
    return response_of(37, results=[result_cls(name=t.name, error_code=code, error_message=None)
                                    for t in request.topics])


def _configs_error(api_key):
    """AlterConfigs' or IncrementalAlterConfigs' (ApiError.fromThrowable: no message)."""
    def build(request, version, code):
        result_cls = struct_of(api_key, "responses")
        return response_of(api_key, responses=[result_cls(error_code=code, error_message=None,
                                                          resource_type=r.resource_type, resource_name=r.resource_name)
                                               for r in request.resources])
    return build


def _describe_configs_error(request, version, code):
    """Every resource, with the error's default text."""
    result_cls = struct_of(32, "results")
    return response_of(32, results=[result_cls(error_code=code, error_message=Errors.for_code(code).message,
                                               resource_type=r.resource_type, resource_name=r.resource_name,
                                               configs=[]) for r in request.resources])


def _elect_leaders(request, version, code):
    result_cls, partition_cls = struct_of(43, "replica_election_results"), struct_of(
        43, "replica_election_results", "partition_result")
    return response_of(43, error_code=code if version >= ELECT_LEADERS_TOP_LEVEL_VERSION else 0,
                       replica_election_results=[result_cls(topic=t.topic, partition_result=[
                           partition_cls(partition_id=p, error_code=code, error_message=None) for p in t.partitions])
                           for t in request.topic_partitions or []])


def _alter_reassignments(request, version, code):
    topic_cls, partition_cls = struct_of(45, "responses"), struct_of(45, "responses", "partitions")
    return response_of(45, error_code=code, error_message=None, responses=[topic_cls(name=t.name, partitions=[
        partition_cls(partition_index=p.partition_index, error_code=code, error_message=None) for p in t.partitions])
        for t in request.topics])


def _list_reassignments(request, version, code):
    """Each topic asked about, its partitions with nothing reassigning; the code at the top."""
    topic_cls, partition_cls = struct_of(46, "topics"), struct_of(46, "topics", "partitions")
    return response_of(46, error_code=code, error_message=None, topics=[topic_cls(name=t.name, partitions=[
        partition_cls(partition_index=p) for p in t.partition_indexes]) for t in request.topics or []])


def _create_acls(request, version, code):
    result_cls = struct_of(30, "results")
    return response_of(30, results=[result_cls(error_code=code, error_message=None) for _ in request.creations])


def _delete_acls(request, version, code):
    result_cls = struct_of(31, "filter_results")
    return response_of(31, filter_results=[result_cls(error_code=code, error_message=None, matching_acls=[])
                                           for _ in request.filters])


def _describe_client_quotas(request, version, code):
    return response_of(48, error_code=code, error_message=None, entries=None)


def _alter_client_quotas(request, version, code):
    """Every entry's entities, with the error's default text."""
    entry_cls, entity_cls = struct_of(49, "entries"), struct_of(49, "entries", "entity")
    return response_of(49, entries=[entry_cls(error_code=code, error_message=Errors.for_code(code).message, entity=[
        entity_cls(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])
        for entry in request.entries])


def _describe_scram(request, version, code):
    """The code at the top and on a result per user asked about (which names no user). Kafka's
    throws on a request for every user (null users), and its broker leaves the request
    unanswered until the client gives up: ours closes the connection (docs/differences.md)."""
    if request.users is None:
        return None
    result_cls = struct_of(50, "results")
    return response_of(50, error_code=code, error_message=None,
                       results=[result_cls(error_code=code, error_message=None) for _ in request.users])


def _alter_scram(request, version, code):
    """Every user named by a deletion or an upsertion, once, sorted."""
    result_cls = struct_of(51, "results")
    users = sorted({d.name for d in request.deletions} | {u.name for u in request.upsertions})
    return response_of(51, results=[result_cls(user=u, error_code=code, error_message=None) for u in users])


def _alter_replica_log_dirs(request, version, code):
    """Every partition of every topic of every directory, a result per (directory, topic)."""
    result_cls, partition_cls = struct_of(34, "results"), struct_of(34, "results", "partitions")
    return response_of(34, results=[result_cls(topic_name=t.name, partitions=[
        partition_cls(partition_index=p, error_code=code) for p in t.partitions]) for d in request.dirs for t in d.topics])


def _top_level(api_key, *, text: bool):
    """The code at the top, with its default text (``text``) or no message."""
    def build(request, version, code):
        return response_of(api_key, error_code=code, error_message=Errors.for_code(code).message if text else None)
    return build


def _token(api_key):
    def build(request, version, code):
        return token_error_response(api_key, request, code, version)
    return build


def _update_features(request, version, code):
    return response_of(57, error_code=code, error_message=None, results=[])


ADMIN_ERROR_RESPONSES = {
    19: create_topics_error,
    20: delete_topics_error,
    30: _create_acls,
    31: _delete_acls,
    32: _describe_configs_error,
    33: _configs_error(33),
    34: _alter_replica_log_dirs,
    37: create_partitions_error,
    **{key: _token(key) for key in (38, 39, 40, 41)},
    43: _elect_leaders,
    44: _configs_error(44),
    45: _alter_reassignments,
    46: _list_reassignments,
    48: _describe_client_quotas,
    49: _alter_client_quotas,
    50: _describe_scram,
    51: _alter_scram,
    55: _top_level(55, text=True),          # DescribeQuorumRequest.getTopLevelErrorResponse
    57: _update_features,
    64: _top_level(64, text=True),          # UnregisterBroker: the exception's message
    70: _top_level(70, text=True),          # ControllerRegistration
    80: _top_level(80, text=True),          # AddRaftVoter
    81: _top_level(81, text=True),          # RemoveRaftVoter
}
