"""A rollback in proportion to the writes in flight, not to the cluster (issue 28 goal 5).

A leader that loses its leadership with writes in flight puts its state back to the committed
one (pipeline.py). Rebuilding that state from the raft log replays the whole snapshot and log on
the event loop: at 1M partitions 16-20 s on a quiet machine and minutes on a loaded one, during
which the node answers no vote and no fetch (benchmarks/README.md, "Failover at 1M partitions
with 500 brokers"). Kafka reverts its timeline data structures to the last committed offset
instead, at the cost of the changes since.

Here the committed image already exists: the committed view (committed.py) is the state's image
as it was at the last commit, frozen and copy-on-write. The state takes a writable copy of that
view (copies of its top-level maps: brokers, features, topics, configs, quotas, ACLs and their
index, SCRAM credentials, delegation tokens, the scalars), and puts back what it keeps beside
the image, each at the cost of what the records in flight touched:

* the partition index (state.py, partition_index.py), for the partitions of the topics those
  records created, started over (a TopicRecord of an id already there), deleted or cleared the
  ELR of, and the partitions they wrote: from each partition's registration now to the
  committed one;
* the topic-name collision map, for the names of those topics: a name stays in its group when
  the committed image has it (the groups are built in topics_by_name's order; a group of two or
  more, which CreateTopics never writes, is read back from the committed topics_by_name);
* the broker registration offsets, the feature order and the open metadata transaction, from
  the Mark the state gave when the oldest write in flight was applied (state.py: taken in O(1);
  a transaction open then gets back the records it had, and one ended in flight was applied to
  the image, so its committed records count as touched too).

``try_fast_rollback`` returns False, having changed nothing, only when there is no committed
view or a record in flight cannot be decoded: then the pipeline rebuilds from the log.
"""
from __future__ import annotations

from kafkawire.metadata.frame import MetadataRecordError, decode_metadata_record
from kafkawire.metadata.image import MetadataImage, has_collision_chars, unify_collision_chars

from .state import ControllerState, Mark

_PARTITION_RECORDS = ("PartitionRecord", "PartitionChangeRecord")
_TOPIC_RECORDS = ("TopicRecord", "RemoveTopicRecord")


def try_fast_rollback(state: ControllerState, committed_view, committed_offset: int, mark: Mark | None,
                      in_flight: list) -> bool:
    """Put ``state`` back to ``committed_view`` (the committed image, whose last record is at
    ``committed_offset``) undoing ``in_flight``, the records applied ahead (lists of values),
    ``mark`` the state's Mark from before the first of them; False, having changed nothing,
    when that cannot be done here."""
    if committed_view is None or mark is None:
        return False
    records = []
    for values in in_flight:
        for value in values:
            try:
                records.append(decode_metadata_record(value).message)
            except MetadataRecordError:
                return False
    if mark.transaction is not None:        # applied to the image if an EndTransactionRecord is in flight
        records.extend(message for message, _ in mark.transaction.records[:mark.transaction_records])
    current = state.image
    image = committed_view.frozen(lookups=True)
    image._acl_index_shared = True                  # it shares the view's, which readers hold
    topics, partitions, names = _touched(records, current, image)
    image.topics_with_collision_chars = _collisions_back(current, image, names)
    _index_back(state, current, image, topics, partitions)
    state.image = image
    state.back_to(mark, committed_offset + 1)
    return True


def _touched(records: list, current: MetadataImage, committed: MetadataImage) -> tuple[set, set, set]:
    """The ids of the topics ``records`` may have created, started over, deleted or changed
    whole; the (topic id, partition id) of the partitions they wrote; the names of those topics,
    now and committed."""
    topics, partitions, names = set(), set(), set()
    for message in records:
        kind = type(message).NAME
        if kind in _PARTITION_RECORDS:
            partitions.add((message.topic_id, message.partition_id))
        elif kind in _TOPIC_RECORDS:
            topics.add(message.topic_id)
            if kind == "TopicRecord":
                names.add(message.name)
        elif kind == "ClearElrRecord":              # a topic created in flight is in ``topics`` already
            if not message.topic_name:
                topics.update(committed.topics_by_id)
            elif message.topic_name in committed.topics_by_name:
                topics.add(committed.topics_by_name[message.topic_name].id)
    for topic_id in topics:
        for image in (current, committed):
            topic = image.topics_by_id.get(topic_id)
            if topic is not None:
                names.add(topic.name)
    return topics, partitions, names


def _collisions_back(current: MetadataImage, committed: MetadataImage, names: set) -> dict:
    """The state's collision map (its own: no view holds one) with the groups of ``names`` as
    the committed topics_by_name makes them."""
    groups = current.topics_with_collision_chars
    by_group: dict[str, set] = {}
    for name in names:
        if has_collision_chars(name):
            by_group.setdefault(unify_collision_chars(name), set()).add(name)
    committed_names = committed.topics_by_name
    for unified, touched in by_group.items():
        members = [name for name in groups.get(unified, ()) if name not in touched]
        members += [name for name in touched if name in committed_names]
        if len(members) > 1:                        # their order is topics_by_name's
            members = [name for name in committed_names if unify_collision_chars(name) == unified]
        if members:
            groups[unified] = dict.fromkeys(members)
        else:
            groups.pop(unified, None)
    return groups


def _index_back(state: ControllerState, current: MetadataImage, committed: MetadataImage, topics: set,
                partitions: set) -> None:
    """The partition index from ``current``'s registrations to ``committed``'s, for every
    partition of ``topics`` in either image and for ``partitions``."""
    for topic_id in topics:
        for image in (current, committed):
            topic = image.topics_by_id.get(topic_id)
            if topic is not None:
                partitions.update((topic_id, pid) for pid in topic.partitions)
    index = state.partition_index
    for topic_id, partition_id in partitions:
        before, after = _registration(current, topic_id, partition_id), _registration(committed, topic_id, partition_id)
        if before is not after:
            index.update(topic_id, partition_id, before, after)


def _registration(image, topic_id, partition_id: int):
    topic = image.topics_by_id.get(topic_id)
    return None if topic is None else topic.partitions.get(partition_id)
