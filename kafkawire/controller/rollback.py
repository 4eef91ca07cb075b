"""A rollback in proportion to the writes in flight, not to the cluster (issue 28 goal 5).

A leader that loses its leadership with writes in flight puts its state back to the committed
one (pipeline.py). Rebuilding that state from the raft log replays the whole snapshot and log on
the event loop: at 1M partitions 16 s on a quiet machine and minutes on a loaded one, during which
the node answers no vote and no fetch (benchmarks/README.md, "Failover at 1M partitions with 500
brokers"). Kafka reverts its timeline data structures to the last committed offset instead, at
the cost of the changes since.

Here the committed image already exists: the committed view (committed.py) is the state's image
as it was at the last commit, frozen and copy-on-write. So when every record in flight is of a
kind that changes only the image and the partition index (the records of CreateTopics, fencing,
partition moves, configs, heartbeats' registration changes, producer ids, NoOpRecords), the
state takes a writable copy of that view (copies of its top-level maps), puts the index back
for the partitions those records touched, and the topic-name collision map back for the topics
they created. Anything else in flight (registrations, features, transactions, topic deletions, a
topic id created again, ACLs, ...) keeps the full rebuild: ``try_fast_rollback`` returns False.
"""
from __future__ import annotations

from kafkawire.metadata.frame import MetadataRecordError, decode_metadata_record

from .state import ControllerState

# Records that change nothing of the state but its image and its partition index (state.py
# _apply: not the broker registration offsets, the feature order or a transaction).
FAST_RECORDS = frozenset({"NoOpRecord", "TopicRecord", "PartitionRecord", "PartitionChangeRecord", "ConfigRecord",
                          "BrokerRegistrationChangeRecord", "ProducerIdsRecord"})


def try_fast_rollback(state: ControllerState, committed_view, committed_offset: int, in_flight: list) -> bool:
    """Put ``state`` back to ``committed_view`` (the committed image, whose last record is at
    ``committed_offset``) undoing ``in_flight``, the records applied ahead (lists of values);
    False, having changed nothing, when a record in flight is not one this can undo."""
    if committed_view is None or state.in_transaction:
        return False
    partitions, new_topics = set(), set()
    for values in in_flight:
        for value in values:
            try:
                message = decode_metadata_record(value).message
            except MetadataRecordError:
                return False
            name = type(message).NAME
            if name not in FAST_RECORDS:
                return False
            if name in ("PartitionRecord", "PartitionChangeRecord"):
                partitions.add((message.topic_id, message.partition_id))
            elif name == "TopicRecord":
                if message.topic_id in committed_view.topics_by_id:
                    return False            # a topic started over: its old partitions are not tracked here
                new_topics.add(message.topic_id)
    current = state.image
    image = committed_view.frozen(lookups=True)
    image._acl_index_shared = True                  # it shares the view's, which readers hold
    for topic_id in new_topics:                     # their partitions leave the index with the topic
        topic = current.topics_by_id.get(topic_id)
        if topic is not None:
            partitions.update((topic_id, pid) for pid in topic.partitions)
    image.topics_with_collision_chars = current.topics_with_collision_chars
    for topic_id in new_topics:
        topic = current.topics_by_id.get(topic_id)
        if topic is not None and current.topics_by_name.get(topic.name) is topic:
            current._forget_topic_name(topic.name)      # out of the map `image` now holds too
    index = state.partition_index
    for topic_id, partition_id in partitions:
        index.update(topic_id, partition_id, _registration(current, topic_id, partition_id),
                     _registration(image, topic_id, partition_id))
    state.image = image
    state.next_offset = committed_offset + 1
    return True


def _registration(image, topic_id, partition_id: int):
    topic = image.topics_by_id.get(topic_id)
    return None if topic is None else topic.partitions.get(partition_id)
