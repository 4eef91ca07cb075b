"""A streams group's topology configured against the metadata image, as Kafka 4.3.1's
InternalTopicManager.configureTopics does (RepartitionTopics, ChangelogTopics):

- every source topic must exist, else MISSING_SOURCE_TOPICS ("Source topics a, b are missing.");
- a repartition topic without a partition count gets the largest partition count of the source
  topics of the subtopology that writes it (repeated until every one is known; a loop that makes
  no progress is STREAMS_INVALID_TOPOLOGY, as in Kafka);
- a subtopology has as many tasks as its largest source (or repartition source) topic has
  partitions; each of its changelog topics has that many partitions;
- co-partitioned topics (CopartitionedTopicsEnforcer): the source topics of a copartition group
  must have the same partition count, else INCORRECTLY_PARTITIONED_TOPICS with Kafka's message;
  the group's repartition topics take that count (or, in a group of repartition topics only, the
  count of the fixed ones, else the largest);
- the internal topics that do not exist yet are returned as CreateTopics entries (the broker
  creates them, KafkaApis.handleStreamsGroupHeartbeat) and reported as MISSING_INTERNAL_TOPICS;
  an existing one with another partition count is INCORRECTLY_PARTITIONED_TOPICS.

Not done (documented in docs/broker.md): source topic regular expressions (refused at the
heartbeat, as Kafka 4.3.1 refuses them).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from kafkawire.broker.java_collections import java_hash_map_order, java_order
from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig
from kafkawire.messages.streams_group_topology_value import (CopartitionGroup, StreamsGroupTopologyValue, Subtopology,
                                                             TopicConfig, TopicInfo)

__all__ = ["Configured", "configure", "topology_value", "InvalidTopology", "CopartitionIndexOutOfRange",
           "MISSING_SOURCE_TOPICS", "INCORRECTLY_PARTITIONED_TOPICS", "MISSING_INTERNAL_TOPICS", "STALE_TOPOLOGY"]

# StreamsGroupHeartbeatResponse.Status codes.
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS = 0, 1, 2, 3


class InvalidTopology(Exception):
    """STREAMS_INVALID_TOPOLOGY with Kafka's message."""


class CopartitionIndexOutOfRange(Exception):
    """A copartition group's topic index outside its subtopology's topics: Kafka's coordinator does
    not check the indexes, and its List.get throws IndexOutOfBoundsException, an internal error."""


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
    """InternalTopicManager.summarizeTopics: the first three, then how many more."""
    names = list(names)
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


class _IncorrectlyPartitioned(Exception):
    """TopicConfigurationException.incorrectlyPartitionedTopics: the topology is not ready."""


def configure(topology: StreamsGroupTopologyValue, partition_count) -> Configured:
    """``partition_count(topic name)``: its partitions in the image, or None if it does not exist.
    Raises InvalidTopology when repartition topics cannot be sized. Where Kafka's answer depends on
    the iteration order of its HashMaps (which subtopology's passes come first, which topic a
    message names), the same order is followed (kafkawire.broker.java_collections)."""
    # StreamsTopology keeps the subtopologies in a HashMap by id
    by_id = {s.subtopology_id: s for s in topology.subtopologies}
    subtopologies = [by_id[i] for i in java_hash_map_order(list(by_id))]
    for s in subtopologies:         # copartitionGroupsFromPersistedSubtopology, before anything is checked
        for group in s.copartition_groups:
            _copartition_group(s, group)
    missing = {t for s in subtopologies for t in s.source_topics if partition_count(t) is None}
    if missing:
        return Configured(status=(MISSING_SOURCE_TOPICS,
                                  f"Source topics {_summary(sorted(missing, key=java_order))} are missing."))
    decided = _repartition_counts(subtopologies, partition_count)

    def count(name):
        found = partition_count(name)
        return decided.get(name) if found is None else found
    try:
        _enforce_copartitioning(subtopologies, count, decided)
        expected, tasks = _expected_internal_topics(subtopologies, count, decided)
        to_create = _to_create(subtopologies, expected, partition_count)
    except _IncorrectlyPartitioned as exc:
        return Configured(status=(INCORRECTLY_PARTITIONED_TOPICS, str(exc)))
    if to_create:
        return Configured(tasks=tasks, to_create=to_create,
                          status=(MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {_summary(to_create)}"))
    return Configured(tasks=tasks, stateful=frozenset(s.subtopology_id for s in subtopologies if s.state_changelog_topics))


def _expected_internal_topics(subtopologies, count, decided) -> tuple[dict, dict]:
    """({internal topic: (partitions, TopicInfo)} in the order Kafka's topicsToCreate HashMap is
    filled, {subtopology: its number of tasks})."""
    tasks, inserted = {}, {}
    for s in subtopologies:
        counts = [c for c in map(count, list(s.source_topics) + [t.name for t in s.repartition_source_topics])
                  if c is not None]
        tasks[s.subtopology_id] = max(counts, default=0)
    for s in sorted(subtopologies, key=lambda s: java_order(s.subtopology_id)):   # a TreeMap by id
        for infos, changelog in ((s.repartition_source_topics, False), (s.state_changelog_topics, True)):
            named = {t.name: t for t in infos}                                      # a HashMap by name
            for name in java_hash_map_order(list(named)):
                fixed = named[name].partitions          # a repartition topic's own count, else the decided one
                inserted[name] = (tasks[s.subtopology_id] if changelog else fixed or decided[name], named[name])
    return {name: inserted[name] for name in java_hash_map_order(list(inserted))}, tasks


def _to_create(subtopologies, expected: dict, partition_count) -> dict:
    """The internal topics to create; an existing one of another partition count (the first in the
    order of Kafka's requiredTopics HashSet) makes the topology incorrectly partitioned."""
    required = []
    for s in subtopologies:
        required += list(s.source_topics) + [t.name for t in s.repartition_source_topics] + \
            [t.name for t in s.state_changelog_topics]
    for name in java_hash_map_order(list(dict.fromkeys(required))):
        existing = partition_count(name)
        if name in expected and existing is not None and existing != expected[name][0]:
            raise _IncorrectlyPartitioned(f"Existing topic {name} has different number of partitions: "
                                          f"expected {expected[name][0]}, found {existing}")
    return {name: CreatableTopic(name=name, num_partitions=partitions, replication_factor=info.replication_factor or -1,
                                 assignments=[], configs=[CreatableTopicConfig(name=c.key, value=c.value)
                                                          for c in info.topic_configs])
            for name, (partitions, info) in expected.items() if partition_count(name) is None}


def _copartition_group(s, group) -> list:
    """The topics a copartition group names by index into its subtopology's source topics and
    repartition source topics (CopartitionIndexOutOfRange for an index outside them)."""
    topics = []
    for indexes, names in ((group.source_topics, list(s.source_topics)),
                           (group.repartition_source_topics, [t.name for t in s.repartition_source_topics])):
        for i in indexes:
            if not 0 <= i < len(names):
                raise CopartitionIndexOutOfRange(f"A copartition group of subtopology {s.subtopology_id} refers to "
                                                 f"topic index {i}, but the subtopology has {len(names)} such topics.")
            topics.append(names[i])
    return java_hash_map_order(list(dict.fromkeys(topics)))         # a HashSet


def _counts_text(counts: dict) -> str:
    """A TreeMap's toString: {a=1, b=2}."""
    return "{" + ", ".join(f"{t}={counts[t]}" for t in sorted(counts, key=java_order)) + "}"


def _enforce_copartitioning(subtopologies, count, decided: dict) -> None:
    """CopartitionedTopicsEnforcer, group by group: co-partitioned source topics must have one
    partition count, which the group's repartition topics then take; a group of repartition
    topics only takes the count of the topology's fixed repartition topics (those with a count
    in the topology, which must agree), else its largest. ``decided`` is updated in place."""
    fixed = {t.name for s in subtopologies for t in s.repartition_source_topics if t.partitions}
    flexible = {t.name for s in subtopologies for t in s.repartition_source_topics if not t.partitions}
    for s in subtopologies:
        for group in s.copartition_groups:
            topics = _copartition_group(s, group)
            if not topics:
                continue
            counts = {t: count(t) for t in topics}
            if any(c is None for c in counts.values()):
                raise InvalidTopology(f"Number of partitions is not set for topic: "
                                      f"{next(t for t, c in counts.items() if c is None)}")
            repartition = {t: counts[t] for t in java_hash_map_order([t for t in topics if t in fixed or t in flexible])}
            others = {t: counts[t] for t in topics if t not in repartition}
            if not others:
                if fixed:
                    values = {count(t) for t in fixed}
                    if len(values) > 1:
                        raise _IncorrectlyPartitioned("Following topics do not have the same number of partitions: "
                                                      f"[{_counts_text(repartition)}]")
                    partitions = values.pop()
                else:
                    partitions = max(repartition.values())
                    if partitions == 0:
                        raise InvalidTopology("All topics in the copartition group had undefined partition number: "
                                              f"[{', '.join(repartition)}]")
            else:
                if len(set(others.values())) > 1:
                    raise _IncorrectlyPartitioned("Following topics do not have the same number of partitions: "
                                                  f"[{_counts_text(others)}]")
                partitions = next(iter(others.values()))
            for topic, found in repartition.items():
                if topic in fixed and found != partitions:
                    raise _IncorrectlyPartitioned(f"Number of partitions [{found}] of repartition topic [{topic}] "
                                                  f"doesn't match number of partitions [{partitions}] of the source topic.")
            decided.update(dict.fromkeys(repartition, partitions))


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
