"""DeleteTopics on the active controller: ControllerApis.deleteTopics (names or ids, duplicates,
both given) and ReplicationControlManager.deleteTopics (a RemoveTopicRecord per topic; the
image drops the topic's partitions and configs with it), with Kafka's errors and messages.

Results come in Kafka's groups (refused entries, duplicate names, duplicate ids, unknown ids,
unknown names, then the deletions) but within a group in request order: Kafka walks HashSets and
HashMaps there. delete.topic.enable=false is not supported (the controller always deletes).

One request deletes at most MAX_RECORDS_PER_USER_OP topics (bounded.py): as Kafka's (whose
catch-all turns BoundedListTooLongException into that), the topics past the bound are answered
UNKNOWN_SERVER_ERROR without a message and stay, the others are deleted.
"""
from __future__ import annotations

import uuid

from kafkawire.messages.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from kafkawire.protocol.error_codes import Errors

from .bounded import BoundedList, BoundedListTooLong
from .errors import ApiError
from .frames import frame
from .state import ControllerState

ZERO_UUID = uuid.UUID(int=0)
NAMES_IN_TOPICS_VERSION = 6      # from v6 the request names topics as DeleteTopicState (name or id)


def _result(name, topic_id, error: Errors, message: str | None = None) -> DeletableTopicResult:
    if error != Errors.NONE and message is None:
        message = error.message                    # ApiError(Errors): the error's default message
    return DeletableTopicResult(name=name, topic_id=topic_id or ZERO_UUID, error_code=int(error),
                                error_message=message)


class _Provided:
    """Names or ids as ControllerApis collects them: each kept once, in request order, unless
    given twice (then it is a duplicate, answered apart). Dicts, so each step is one lookup."""
    def __init__(self):
        self.single: dict = {}
        self.duplicate: dict = {}

    def add(self, key) -> None:
        if key in self.duplicate:
            return
        if key in self.single:
            del self.single[key]
            self.duplicate[key] = None
        else:
            self.single[key] = None


def _read_request(request, api_version: int, early: list):
    """(names, ids, duplicate names, duplicate ids) as ControllerApis sorts them."""
    names, ids = _Provided(), _Provided()
    if api_version < NAMES_IN_TOPICS_VERSION:
        for name in request.topic_names:
            names.add(name)
    else:
        for topic in request.topics:
            topic_id = topic.topic_id or ZERO_UUID
            if topic.name is None:
                if topic_id == ZERO_UUID:
                    early.append(_result(None, ZERO_UUID, Errors.INVALID_REQUEST,
                                         "Neither topic name nor id were specified."))
                else:
                    ids.add(topic_id)
            elif topic_id == ZERO_UUID:
                names.add(topic.name)
            else:
                early.append(_result(topic.name, topic_id, Errors.INVALID_REQUEST,
                                     "You may not specify both topic name and topic id."))
    return list(names.single), list(ids.single), list(names.duplicate), list(ids.duplicate)


def delete_topics(state: ControllerState, request, api_version: int, quota=None):
    """(records, DeleteTopicsResponse); ``quota``: called with each topic's partition count before
    it is deleted (the controller mutation quota, mutation_quota.py), raising ApiError to refuse it."""
    image = state.image
    results: list[DeletableTopicResult] = []
    names, ids, duplicate_names, duplicate_ids = _read_request(request, api_version, results)
    results += [_result(n, ZERO_UUID, Errors.INVALID_REQUEST, "Duplicate topic name.") for n in duplicate_names]
    results += [_result(None, i, Errors.INVALID_REQUEST, "Duplicate topic id.") for i in duplicate_ids]
    to_delete: dict = {}                              # topic id -> name, in the order found
    for topic_id in ids:
        topic = image.topics_by_id.get(topic_id)
        if topic is None:
            results.append(_result(None, topic_id, Errors.UNKNOWN_TOPIC_ID))
        else:
            to_delete[topic_id] = topic.name
    for name in names:
        topic = image.topics_by_name.get(name)
        if topic is None:
            results.append(_result(name, ZERO_UUID, Errors.UNKNOWN_TOPIC_OR_PARTITION))
        elif topic.id in to_delete:
            del to_delete[topic.id]
            results.append(_result(name, topic.id, Errors.INVALID_REQUEST,
                                   "The provided topic name maps to an ID that was already supplied."))
        else:
            to_delete[topic.id] = name
    records = BoundedList()
    for topic_id, name in to_delete.items():
        if quota is not None:
            try:
                quota(len(image.topics_by_id[topic_id].partitions))
            except ApiError as exc:
                results.append(_result(name, topic_id, exc.error, exc.message))
                continue
        try:
            records.append(frame("RemoveTopicRecord", topic_id=topic_id))
        except BoundedListTooLong:
            results.append(DeletableTopicResult(name=name, topic_id=topic_id, error_code=int(Errors.UNKNOWN_SERVER_ERROR),
                                                error_message=None))
            continue
        results.append(_result(name, topic_id, Errors.NONE))
    return records, DeleteTopicsResponse(responses=results)
