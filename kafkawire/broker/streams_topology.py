"""A streams group's topology configured against the metadata image, as Kafka 4.3.1's
InternalTopicManager.configureTopics does (RepartitionTopics, ChangelogTopics):

- every source topic must exist, else MISSING_SOURCE_TOPICS ("Source topics a, b are missing.");
- a repartition topic without a partition count gets the largest partition count of the source
  topics of the subtopology that writes it (repeated until every one is known; a loop that makes
  no progress is STREAMS_INVALID_TOPOLOGY, as in Kafka);
- a subtopology has as many tasks as its largest source (or repartition source) topic has
  partitions; each of its changelog topics has that many partitions;
- the internal topics that do not exist yet are returned as CreateTopics entries (the broker
  creates them, KafkaApis.handleStreamsGroupHeartbeat) and reported as MISSING_INTERNAL_TOPICS;
  an existing one with another partition count is INCORRECTLY_PARTITIONED_TOPICS.

Not done (documented in docs/broker.md): co-partitioning enforcement (CopartitionedTopicsEnforcer)
and source topic regular expressions (refused at the heartbeat, as Kafka 4.3.1 refuses them).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig
from kafkawire.messages.streams_group_topology_value import (CopartitionGroup, StreamsGroupTopologyValue, Subtopology,
                                                             TopicConfig, TopicInfo)

__all__ = ["Configured", "configure", "topology_value", "InvalidTopology",
           "MISSING_SOURCE_TOPICS", "INCORRECTLY_PARTITIONED_TOPICS", "MISSING_INTERNAL_TOPICS", "STALE_TOPOLOGY"]

# StreamsGroupHeartbeatResponse.Status codes.
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS = 0, 1, 2, 3


class InvalidTopology(Exception):
    """STREAMS_INVALID_TOPOLOGY with Kafka's message."""


@dataclass
class Configured:
    """ConfiguredTopology: the task count of each subtopology when the topics allow it (``tasks``
    None otherwise), the internal topics to create, and the status that explains what is missing."""
    tasks: dict | None = None                   # subtopology id -> number of tasks
    to_create: dict = field(default_factory=dict)   # topic name -> CreatableTopic
    status: tuple | None = None                 # (status code, detail)
    stateful: frozenset = frozenset()           # subtopologies with changelog topics (they get standbys)

    @property
    def ready(self) -> bool:
        return self.tasks is not None and self.status is None


def topology_value(topology) -> StreamsGroupTopologyValue:
    """The StreamsGroupTopology record's value of a heartbeat's topology (subtopologies sorted by id)."""
    def info(t):
        return TopicInfo(name=t.name, partitions=t.partitions, replication_factor=t.replication_factor,
                         topic_configs=[TopicConfig(key=c.key, value=c.value) for c in t.topic_configs])
    return StreamsGroupTopologyValue(epoch=topology.epoch, subtopologies=[Subtopology(
        subtopology_id=s.subtopology_id, source_topics=list(s.source_topics), source_topic_regex=list(s.source_topic_regex),
        state_changelog_topics=[info(t) for t in s.state_changelog_topics],
        repartition_sink_topics=list(s.repartition_sink_topics),
        repartition_source_topics=[info(t) for t in s.repartition_source_topics],
        copartition_groups=[CopartitionGroup(source_topics=list(g.source_topics), source_topic_regex=list(g.source_topic_regex),
                                             repartition_source_topics=list(g.repartition_source_topics))
                            for g in s.copartition_groups])
        for s in sorted(topology.subtopologies, key=lambda s: s.subtopology_id)])


def _summary(names) -> str:
    return ", ".join(sorted(names))


def configure(topology: StreamsGroupTopologyValue, partition_count) -> Configured:
    """``partition_count(topic name)``: its partitions in the image, or None if it does not exist.
    Raises InvalidTopology when repartition topics cannot be sized."""
    subtopologies = topology.subtopologies
    missing = {t for s in subtopologies for t in s.source_topics if partition_count(t) is None}
    if missing:
        return Configured(status=(MISSING_SOURCE_TOPICS, f"Source topics {_summary(missing)} are missing."))
    decided = _repartition_counts(subtopologies, partition_count)

    def count(name):
        found = partition_count(name)
        return decided.get(name) if found is None else found

    tasks, expected = {}, {}
    for s in subtopologies:
        counts = [c for c in map(count, list(s.source_topics) + [t.name for t in s.repartition_source_topics])
                  if c is not None]
        tasks[s.subtopology_id] = max(counts, default=0)
        for t in s.repartition_source_topics:
            expected[t.name] = (decided[t.name], t)
        for t in s.state_changelog_topics:
            expected[t.name] = (tasks[s.subtopology_id], t)
    to_create = {}
    for name, (partitions, info) in expected.items():
        existing = partition_count(name)
        if existing is None:
            to_create[name] = CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=info.replication_factor or -1,
                assignments=[], configs=[CreatableTopicConfig(name=c.key, value=c.value) for c in info.topic_configs])
        elif existing != partitions:
            return Configured(status=(INCORRECTLY_PARTITIONED_TOPICS, f"Existing topic {name} has different number "
                                      f"of partitions: expected {partitions}, found {existing}"))
    if to_create:
        return Configured(tasks=tasks, to_create=to_create,
                          status=(MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {_summary(to_create)}"))
    return Configured(tasks=tasks, stateful=frozenset(s.subtopology_id for s in subtopologies if s.state_changelog_topics))


def _repartition_counts(subtopologies, partition_count) -> dict:
    """RepartitionTopics.setup: each repartition source topic's partition count, the counts Kafka's
    passes over the subtopologies give, in O(n log n): Kafka repeats passes until every sink topic is
    sized (quadratic for a chain of subtopologies); here each subtopology is visited when, in
    Kafka's order (pass, position), one of its inputs is first known, with the inputs known by then."""
    counts = {t.name: t.partitions for s in subtopologies for t in s.repartition_source_topics if t.partitions}
    readers: dict = {}                      # repartition topic -> positions of the subtopologies reading it
    for i, s in enumerate(subtopologies):
        for t in s.repartition_source_topics:
            readers.setdefault(t.name, []).append(i)
    external = [max((c for c in map(partition_count, s.source_topics) if c is not None), default=None)
                for s in subtopologies]
    due = [(0, i) for i, s in enumerate(subtopologies) if s.repartition_sink_topics and (
        external[i] is not None or any(t.name in counts for t in s.repartition_source_topics))]
    heapq.heapify(due)
    while due:
        pass_index, i = heapq.heappop(due)
        s = subtopologies[i]
        unsized = [sink for sink in s.repartition_sink_topics if sink not in counts]
        if not unsized:
            continue
        known = [counts[t.name] for t in s.repartition_source_topics if t.name in counts]
        if external[i] is not None:
            known.append(external[i])
        value = max(known)
        for sink in unsized:
            counts[sink] = value
            for reader in readers.get(sink, ()):        # later in this pass, or in the next one
                heapq.heappush(due, (pass_index if reader > i else pass_index + 1, reader))
    if any(sink not in counts for s in subtopologies for sink in s.repartition_sink_topics):
        raise InvalidTopology("Failed to compute number of partitions for all repartition topics. "
                              "There may be loops in the topology that cannot be resolved.")
    if any(t.name not in counts for s in subtopologies for t in s.repartition_source_topics):
        raise InvalidTopology("Failed to compute number of partitions for all repartition topics, because "
                              "a repartition source topic is never used as a sink topic.")
    return counts
