"""``__share_group_state`` on a combined node: created through the active controller when a
FindCoordinator(SHARE) first needs it, with Kafka's topic configs
(ShareCoordinatorService.shareGroupStateTopicConfigs: cleanup.policy=delete with retention.ms=-1,
as Kafka keeps the records and prunes them itself; compression.type=producer; segment.bytes and
min.insync.replicas from the ``share.coordinator.state.topic.*`` settings); each partition's
records replayed when the broker starts leading it (its share-partitions are
COORDINATOR_LOAD_IN_PROGRESS meanwhile), and the coordinator's records appended to it.

    store = ShareStateTopic(broker, None, ShareStateLoader(coordinator))   # group_log's machinery
    store.persist(coordinator_key(group, topic_id, partition), records)

A share-partition's place is its coordinator key ``groupId:topicId:partition``, hashed as a
group id is (kafkawire.broker.share_state_records), so OffsetsTopic's lookups serve it.
"""
from __future__ import annotations

import logging

from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig

from kafkawire.protocol.error_codes import Errors

from .group_log import OffsetsTopic
from .group_records import partition_for
from .share_state_records import SHARE_STATE_TOPIC, coordinator_key, decode_state_record

__all__ = ["ShareStateTopic", "ShareStateLoader"]

log = logging.getLogger(__name__)


class ShareStateTopic(OffsetsTopic):
    TOPIC = SHARE_STATE_TOPIC
    last_offset = -1                  # the offset of the record ``persist`` appended last

    def persist(self, group_id: str, records: list, *, producer=None) -> int:
        code = super().persist(group_id, records, producer=producer)
        if code == Errors.NONE:
            partition = self.broker.partitions.get((self.TOPIC, self.partition_of(group_id)))
            self.last_offset = partition.log.log_end_offset - 1
        return code

    def unload(self, index: int) -> None:
        """The runtime's unload of the share coordinator's shard: the state of the partition's
        share-partitions (and records staged by a load cut short) dropped when this broker stops
        leading it, and again before it is loaded (OffsetsTopic.unload), so a write the new leader
        never had is not found when the partition comes back."""
        self.offsets.unload(self.keys_of(index))

    def partition_of(self, key: str) -> int:
        return partition_for(key, self.partitions(self.broker.image()))

    def creatable_topic(self, c) -> CreatableTopic:
        return CreatableTopic(
            name=self.TOPIC, num_partitions=c.share_coordinator_state_topic_num_partitions,
            replication_factor=c.share_coordinator_state_topic_replication_factor, assignments=[], configs=[
                CreatableTopicConfig(name="cleanup.policy", value="delete"),
                CreatableTopicConfig(name="compression.type", value="producer"),
                CreatableTopicConfig(name="segment.bytes", value=str(c.share_coordinator_state_topic_segment_bytes)),
                CreatableTopicConfig(name="min.insync.replicas", value=str(c.share_coordinator_state_topic_min_isr)),
                CreatableTopicConfig(name="retention.ms", value="-1")])


class ShareStateLoader:
    """What OffsetsTopic's loading calls (``replay``, ``after_load``) for the share coordinator:
    the records are staged in log order and replayed, in that order, when their partition is
    loaded (an update merges into the snapshot before it); the partition's earlier state (from a
    time this broker led it before) is dropped by ``unload`` when it stops leading it and before
    the load."""

    def __init__(self, coordinator):
        self.coordinator = coordinator
        self.staged: list = []
        self.store = None                 # the ShareStateTopic (its replay_offset: the record's offset)

    def replay(self, key, value) -> None:
        decoded = decode_state_record(key, value)
        if decoded is not None:
            self.staged.append((*decoded, None if self.store is None else self.store.replay_offset))

    def unload(self, here) -> None:
        """Drop the state and the staged records of the share-partitions whose coordinator key
        ``here(key)`` names."""
        self.staged = [staged for staged in self.staged if not here(coordinator_key(*staged[1]))]
        self.coordinator.forget(lambda share_key: here(coordinator_key(*share_key)))

    def after_load(self, loaded_here) -> None:
        def here(share_key) -> bool:
            return loaded_here(coordinator_key(*share_key))
        kept = []
        for record_type, share_key, state, offset in self.staged:
            if here(share_key):
                self.coordinator.replay(record_type, share_key, state, offset)
            else:
                kept.append((record_type, share_key, state, offset))
        self.staged = kept

