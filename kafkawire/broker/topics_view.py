"""TopicsView, the metadata image's topics as the group coordinators see them (name -> topic id
and partition count, id -> name, each topic's hash computed once per view), and metadata_hash,
Kafka's hash of a group's subscribed topics (ModernGroup.computeMetadataHash over
kafkawire.broker.consumer_hash).

They live here, apart from consumer_coordinator.py, because every group type reads them: the
consumer groups (consumer_coordinator.py), the share groups (share_groups.py, share_group_init.py)
and the streams groups (streams_coordinator.py); and consumer_coordinator.py would otherwise pass
the project's module-size limit. consumer_coordinator.py re-exports both names, so the modules
and tests that import them from there keep working.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .consumer_hash import group_hash, topic_hash

__all__ = ["TopicsView", "metadata_hash"]


@dataclass(frozen=True)
class TopicsView:
    """The topics of the metadata image: name -> (topic id, partitions), id -> name, and
    ``racks(name)``: each partition's replica racks (for the metadata hash; none by default)."""
    by_name: dict
    by_id: dict
    racks: Callable = lambda name: ()
    hashes: dict = field(default_factory=dict)       # name -> its topic hash, computed once per view
    version: int = -1                                # the image's offset (a resolved regex's Version)

    @classmethod
    def of(cls, topics, racks: Callable = lambda name: (), version: int = -1) -> "TopicsView":
        """``topics`` is an iterable of (name, topic id, partition count)."""
        by_name = {name: (topic_id, count) for name, topic_id, count in topics}
        return cls(by_name, {topic_id: name for name, (topic_id, _) in by_name.items()}, racks, version=version)

    def ids(self, names) -> set:
        return {self.by_name[n][0] for n in names if n in self.by_name}

    def topic_hash(self, name: str) -> int:
        if name not in self.hashes:
            topic_id, count = self.by_name[name]
            self.hashes[name] = topic_hash(name, topic_id, count, self.racks(name))
        return self.hashes[name]


def metadata_hash(names, view: TopicsView) -> int:
    """ModernGroup.computeMetadataHash: Kafka's hash of the subscribed topics that exist (0 without
    any); it changes when one is created, deleted or grows, or its replicas' racks change."""
    return group_hash({name: view.topic_hash(name) for name in names if name in view.by_name})
