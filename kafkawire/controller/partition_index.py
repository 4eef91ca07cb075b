"""Per-broker partition indexes, kept on record replay: Kafka's BrokersToIsrs and BrokersToElrs
(ReplicationControlManager). For each broker: the partitions whose ISR holds it, the ones it
leads, the ones whose ELR holds it; under NO_LEADER, the partitions without a leader.

They let a heartbeat answer "does this broker lead anything?" in constant time and let
fencing, unfencing, controlled shutdown and a new incarnation visit only the partitions
concerned, instead of walking every partition of the cluster.
"""
from __future__ import annotations

from kafkawire.metadata.image import MetadataImage
from kafkawire.metadata.registrations import NO_LEADER

from .java_order import uuid_tree_order

_PARTITION_RECORDS = ("PartitionRecord", "PartitionChangeRecord")
_TOPIC_RECORDS = ("TopicRecord", "RemoveTopicRecord")


class _BrokerMap:
    """broker id -> topic id -> partition ids."""

    def __init__(self):
        self.by_broker: dict[int, dict[object, set[int]]] = {}

    def add(self, broker_id: int, topic_id, partition_id: int) -> None:
        self.by_broker.setdefault(broker_id, {}).setdefault(topic_id, set()).add(partition_id)

    def discard(self, broker_id: int, topic_id, partition_id: int) -> None:
        topics = self.by_broker.get(broker_id)
        if topics is None or topic_id not in topics:
            return
        ids = topics[topic_id]
        ids.discard(partition_id)
        if not ids:
            del topics[topic_id]
            if not topics:
                del self.by_broker[broker_id]

    def change(self, topic_id, partition_id: int, before, after) -> None:
        """The partition was under the brokers ``before`` and is now under ``after``."""
        if before == after:
            return
        kept = set(before) & set(after)
        for broker_id in before:
            if broker_id not in kept:
                self.discard(broker_id, topic_id, partition_id)
        for broker_id in after:
            if broker_id not in kept:
                self.add(broker_id, topic_id, partition_id)

    def of(self, broker_id: int) -> dict[object, set[int]]:
        return self.by_broker.get(broker_id, {})


class PartitionIndex:
    def __init__(self):
        self._isr = _BrokerMap()
        self._leader = _BrokerMap()          # NO_LEADER holds the leaderless partitions
        self._elr = _BrokerMap()

    # --- kept on replay (ControllerState._apply) -----------------------------------------------
    def before_apply(self, image: MetadataImage, message) -> list | None:
        """What the record may change: (topic id, partition id, registration before) of each
        partition it can touch, None when it touches no partition."""
        name = type(message).NAME
        if name in _PARTITION_RECORDS:
            topic = image.topics_by_id.get(message.topic_id)
            before = topic.partitions.get(message.partition_id) if topic is not None else None
            return [(message.topic_id, message.partition_id, before)]
        if name in _TOPIC_RECORDS:
            topics = [image.topics_by_id.get(message.topic_id)]
        elif name == "ClearElrRecord":
            topics = ([image.topics_by_name.get(message.topic_name)] if message.topic_name
                      else list(image.topics_by_id.values()))
        else:
            return None
        return [(topic.id, pid, p) for topic in topics if topic is not None for pid, p in topic.partitions.items()]

    def after_apply(self, image: MetadataImage, touched: list | None) -> None:
        for topic_id, partition_id, before in touched or ():
            topic = image.topics_by_id.get(topic_id)
            after = topic.partitions.get(partition_id) if topic is not None else None
            if after is not before:
                self.update(topic_id, partition_id, before, after)

    def update(self, topic_id, partition_id: int, before, after) -> None:
        """BrokersToIsrs.update and BrokersToElrs.update: ``before``/``after`` are the
        partition's registrations (None when it does not exist)."""
        self._isr.change(topic_id, partition_id, before.isr if before else (), after.isr if after else ())
        self._elr.change(topic_id, partition_id, before.elr if before else (), after.elr if after else ())
        self._leader.change(topic_id, partition_id, (before.leader,) if before else (),
                            (after.leader,) if after else ())

    # --- queries --------------------------------------------------------------------------------
    def has_leaderships(self, broker_id: int) -> bool:
        """BrokersToIsrs.hasLeaderships."""
        return bool(self._leader.of(broker_id))

    def with_broker_in_isr(self, image: MetadataImage, broker_id: int) -> list:
        """partitionsWithBrokerInIsr, as (topic, partition id, registration)."""
        return _in_walk_order(image, self._isr.of(broker_id))

    def with_broker_in_elr(self, image: MetadataImage, broker_id: int) -> list:
        """BrokersToElrs.partitionsWithBrokerInElr."""
        return _in_walk_order(image, self._elr.of(broker_id))

    def without_leader(self, image: MetadataImage) -> list:
        """partitionsWithNoLeader."""
        return _in_walk_order(image, self._leader.of(NO_LEADER))

    def as_sets(self) -> dict:
        """Everything indexed, as plain sets (for checks against a walk of the image)."""
        def flat(index: _BrokerMap):
            return {b: {(t, p) for t, ids in topics.items() for p in ids} for b, topics in index.by_broker.items()}
        return {"isr": flat(self._isr), "leader": flat(self._leader), "elr": flat(self._elr)}


def _in_walk_order(image: MetadataImage, by_topic: dict[object, set[int]]) -> list:
    """The partitions topic by topic in the image's order (HashTreePMap's: by Uuid hash), then by
    partition id, as a walk of the whole image would meet them."""
    out = []
    for topic_id in uuid_tree_order(by_topic):
        topic = image.topics_by_id[topic_id]
        out += [(topic, pid, topic.partitions[pid]) for pid in sorted(by_topic[topic_id])]
    return out

