"""Per-broker partition indexes, kept on record replay: Kafka's BrokersToIsrs and BrokersToElrs
(ReplicationControlManager). For each broker: the partitions whose ISR holds it, the ones it
leads, the ones whose ELR holds it; under NO_LEADER, the partitions without a leader. And
Kafka's imbalancedPartitions, the partitions their first (preferred) replica does not lead,
each under that replica: the electPreferred task (leader_balance.py) visits only them.

They let a heartbeat answer "does this broker lead anything?" in constant time and let
fencing, unfencing, controlled shutdown and a new incarnation visit only the partitions
concerned, instead of walking every partition of the cluster.

Each broker's partitions are keys: the topic id's 128 bits and the partition id's 32 in one
int, made once per partition change and shared by every set that holds it. (A set per broker
and topic, as Kafka keeps an array, costs some 500 bytes a partition in Python; this costs
about 200, and hashes in C where a UUID key would call Python.) A broker's keys are spread over
SHARDS sets (``_Keys``), because a set grows by rehashing all of it at once: at 1M partitions
and 10 brokers one set of 150k keys took ~10 ms to grow, a loop stall inside one record's replay
(a snapshot's load, a CreateTopics); a shard holds a 32nd of the keys and grows in a 32nd of
the time. Lookups stay one hash; iteration is in no order, as the one set's was.
"""
from __future__ import annotations

import uuid
from itertools import chain

from kafkawire.metadata.image import MetadataImage
from kafkawire.metadata.registrations import NO_LEADER

from .java_order import uuid_tree_order

_PARTITION_RECORDS = ("PartitionRecord", "PartitionChangeRecord")
_TOPIC_RECORDS = ("TopicRecord", "RemoveTopicRecord")
_PID_BITS = 32
_PID_MASK = (1 << _PID_BITS) - 1


def _key(topic_id: uuid.UUID, partition_id: int) -> int:
    return topic_id.int << _PID_BITS | (partition_id & _PID_MASK)


def _partition_id(key: int) -> int:
    pid = key & _PID_MASK
    return pid - (1 << _PID_BITS) if pid >> (_PID_BITS - 1) else pid


def partition_of(key: int) -> tuple[uuid.UUID, int]:
    """The (topic id, partition id) of an index key."""
    return uuid.UUID(int=key >> _PID_BITS), _partition_id(key)


def topic_of(key: int) -> uuid.UUID:
    """The topic id of an index key (keys of one topic share ``key >> PID_BITS``)."""
    return uuid.UUID(int=key >> _PID_BITS)


PID_BITS = _PID_BITS
partition_id_of = _partition_id


SHARD_BITS = 5
SHARDS = 1 << SHARD_BITS
_SHARD_MASK = SHARDS - 1


def _shard(key: int) -> int:
    """Which of a broker's sets holds ``key``: the topic id's low bits (random in a v4 UUID)
    mixed with the partition id, so that a topic's partitions and the topics spread alike."""
    return (key ^ key >> _PID_BITS) & _SHARD_MASK


class _Keys:
    """A read-only view of one broker's keys, kept in SHARDS sets (``_shard``), as one collection."""
    __slots__ = ("shards",)

    def __init__(self, shards: list[set[int]]):
        self.shards = shards

    def __len__(self) -> int:
        return sum(map(len, self.shards))

    def __bool__(self) -> bool:
        return any(self.shards)

    def __iter__(self):
        return chain.from_iterable(self.shards)      # in C, as a set's own iteration

    def __contains__(self, key: int) -> bool:
        return key in self.shards[_shard(key)]

    def isdisjoint(self, other: _Keys) -> bool:
        """No key in both (shard by shard: a key is in the same shard everywhere)."""
        return all(mine.isdisjoint(theirs) for mine, theirs in zip(self.shards, other.shards) if mine and theirs)


_NO_KEYS = _Keys([set() for _ in range(SHARDS)])       # what a broker without keys reads as; never added to


class _BrokerSets:
    """broker id -> the keys of its partitions, in SHARDS sets (a broker is here while it has a key)."""

    def __init__(self):
        self.by_broker: dict[int, list[set[int]]] = {}

    def change(self, key: int, shard: int, before, after) -> None:
        """The partition (``key``, in ``shard``) was under the brokers ``before`` and is now under ``after``."""
        if before == after:
            return
        by_broker = self.by_broker
        for broker_id in before:
            if broker_id not in after:
                shards = by_broker.get(broker_id)
                if shards is not None:
                    keys = shards[shard]
                    keys.discard(key)
                    if not keys and not any(shards):
                        del by_broker[broker_id]
        for broker_id in after:
            if broker_id not in before:
                shards = by_broker.get(broker_id)
                if shards is None:
                    shards = by_broker[broker_id] = [set() for _ in range(SHARDS)]
                shards[shard].add(key)

    def move(self, key: int, shard: int, before: int, after: int) -> None:
        """``change(key, shard, (before,), (after,))`` for two different brokers (a leader
        change), with no tuples made: a broker's fencing moves up to 100,000 leaders at 1M."""
        by_broker = self.by_broker
        shards = by_broker.get(before)
        if shards is not None:
            keys = shards[shard]
            keys.discard(key)
            if not keys and not any(shards):
                del by_broker[before]
        shards = by_broker.get(after)
        if shards is None:
            shards = by_broker[after] = [set() for _ in range(SHARDS)]
        shards[shard].add(key)

    def put(self, key: int, shard: int, broker_id: int) -> None:
        """``key`` under ``broker_id`` (``change(key, shard, (), (broker_id,))`` without tuples)."""
        shards = self.by_broker.get(broker_id)
        if shards is None:
            shards = self.by_broker[broker_id] = [set() for _ in range(SHARDS)]
        shards[shard].add(key)

    def drop(self, key: int, shard: int, broker_id: int) -> None:
        """``key`` no longer under ``broker_id`` (``change(key, shard, (broker_id,), ())``)."""
        shards = self.by_broker.get(broker_id)
        if shards is not None:
            keys = shards[shard]
            keys.discard(key)
            if not keys and not any(shards):
                del self.by_broker[broker_id]

    def of(self, broker_id: int) -> _Keys:
        shards = self.by_broker.get(broker_id)
        return _NO_KEYS if shards is None else _Keys(shards)

    def shard_sizes(self, broker_id: int) -> list[int]:
        return [len(keys) for keys in self.by_broker.get(broker_id, ())]


def _imbalanced_under(p) -> tuple:
    """(its first replica,) when that replica does not lead ``p`` (Kafka's hasPreferredLeader is
    false: imbalancedPartitions holds it, a leaderless partition too), else ()."""
    replicas = p.replicas
    return (replicas[0],) if replicas and p.leader != replicas[0] else ()


def topic_partition_counts(topic) -> tuple[int, int, int]:
    """(partitions, without a leader, not led by their first replica) of one topic, counted as
    the index counts them (ControllerMetricsChanges' hasLeader and hasPreferredLeader)."""
    leaderless = imbalanced = 0
    for p in topic.partitions.values():
        leaderless += p.leader == NO_LEADER
        imbalanced += bool(p.replicas) and p.leader != p.replicas[0]
    return len(topic.partitions), leaderless, imbalanced


class PartitionIndex:
    def __init__(self):
        self._isr = _BrokerSets()
        self._leader = _BrokerSets()          # NO_LEADER holds the leaderless partitions
        self._elr = _BrokerSets()
        self._imbalanced = _BrokerSets()      # under its preferred replica, a partition that replica does not lead

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
        topic_bits = topic_id.int
        key = topic_bits << _PID_BITS | (partition_id & _PID_MASK)          # _key and _shard, inline
        shard = (topic_bits & _SHARD_MASK) ^ (partition_id & _SHARD_MASK)
        if before is not None and after is not None:    # a change: most leave the ELR (and many the leader) as is
            if before.isr != after.isr:
                self._isr.change(key, shard, before.isr, after.isr)
            if before.elr != after.elr:
                self._elr.change(key, shard, before.elr, after.elr)
            replicas = after.replicas
            if before.leader != after.leader:
                self._leader.move(key, shard, before.leader, after.leader)
                if replicas is before.replicas or replicas == before.replicas:
                    # the common leader change: only whether the first replica leads may differ
                    # (without replicas a partition is never imbalanced)
                    if replicas:
                        first = replicas[0]
                        if before.leader == first:
                            self._imbalanced.put(key, shard, first)
                        elif after.leader == first:
                            self._imbalanced.drop(key, shard, first)
                    return
            elif replicas is before.replicas or replicas == before.replicas:
                return
            self._imbalanced.change(key, shard, _imbalanced_under(before), _imbalanced_under(after))
            return
        self._isr.change(key, shard, before.isr if before else (), after.isr if after else ())
        self._elr.change(key, shard, before.elr if before else (), after.elr if after else ())
        self._leader.change(key, shard, (before.leader,) if before else (), (after.leader,) if after else ())
        self._imbalanced.change(key, shard, _imbalanced_under(before) if before else (),
                                _imbalanced_under(after) if after else ())

    # --- queries --------------------------------------------------------------------------------
    def has_leaderships(self, broker_id: int) -> bool:
        """BrokersToIsrs.hasLeaderships."""
        return broker_id in self._leader.by_broker         # a broker is there while it has a key

    def isr_count(self, broker_id: int) -> int:
        """How many partitions hold ``broker_id`` in their ISR."""
        return len(self._isr.of(broker_id))

    def elr_count(self, broker_id: int) -> int:
        """How many partitions hold ``broker_id`` in their ELR."""
        return len(self._elr.of(broker_id))

    def leaderless_count(self) -> int:
        """How many partitions have no leader (what an unfencing event visits)."""
        return len(self._leader.of(NO_LEADER))

    def has_imbalanced(self) -> bool:
        """Whether some partition is not led by its first replica (arePartitionLeadersImbalanced)."""
        return bool(self._imbalanced.by_broker)         # a broker is there while it has a key

    def imbalanced_count(self) -> int:
        """How many partitions their first replica does not lead."""
        return sum(len(keys) for shards in self._imbalanced.by_broker.values() for keys in shards)

    def partition_count(self) -> int:
        """How many partitions there are (each is under its leader or NO_LEADER, once)."""
        return sum(len(keys) for shards in self._leader.by_broker.values() for keys in shards)

    def imbalanced_keys(self) -> list[int]:
        """The keys of the partitions their first replica does not lead, in no order (a copy in C)."""
        return list(self.walk_imbalanced())

    def walk_imbalanced(self):
        """``imbalanced_keys`` one at a time, from the index's own sets (no copy: a caller that
        stops early has not paid for the rest), so no partition may change while it is walked."""
        return chain.from_iterable(chain.from_iterable(self._imbalanced.by_broker.values()))

    def leaderless_keys(self) -> list[int]:
        """The keys of the partitions without a leader, in no order (a copy in C)."""
        return list(self._leader.of(NO_LEADER))

    def leaderless_in_isr_or_elr_of_any(self, image: MetadataImage, broker_ids: set[int]) -> bool:
        """Whether a partition without a leader holds one of ``broker_ids`` in its ISR or ELR: one
        look at each leaderless partition (a UUID made per topic), not an intersection of the
        leaderless set with each broker's ISR and ELR sets (at 1M partitions, 500 brokers and
        ~5,000 leaderless partitions that took 0.1-0.2 s of CPU on each activation)."""
        by_topic: dict[int, list[int]] = {}
        for key in self._leader.of(NO_LEADER):
            by_topic.setdefault(key >> _PID_BITS, []).append(_partition_id(key))
        for topic_int, partition_ids in by_topic.items():
            topic = image.topics_by_id.get(uuid.UUID(int=topic_int))
            for pid in partition_ids if topic is not None else ():
                p = topic.partitions.get(pid)
                if p is not None and not (broker_ids.isdisjoint(p.isr) and broker_ids.isdisjoint(p.elr)):
                    return True
        return False

    def isr_or_elr_keys(self, broker_id: int) -> list[int]:
        """The keys of the partitions whose ISR or ELR holds ``broker_id``, each once, in no order."""
        isr = self._isr.of(broker_id)
        return list(isr) + [key for key in self._elr.of(broker_id) if key not in isr]

    def elr_key_list(self, broker_id: int) -> list[int]:
        """The keys of the partitions whose ELR holds ``broker_id``, in no order (a copy in C)."""
        return list(self._elr.of(broker_id))

    def isr_keys_and_leaderships(self, broker_id: int) -> tuple[list[int], set[int]]:
        """The keys (``partition_of``) of the partitions whose ISR holds ``broker_id`` and of
        those it leads, as now (copies in C: a list, a set). fencing.py visits the led ones
        first and leaves them out of the rest as it sorts them in steps (a set difference of a
        broker's 300,000 ISR keys at 1M partitions held the loop ~30 ms). Copied shard by shard:
        a set updated from a set takes the hashes it stores, where a set built from an iterator
        hashes every key again (a 160-bit int is hashed over its digits): at 1M partitions the
        fence's own event listed a broker's 100,000 leaderships in ~20 ms of CPU, ~6-9 ms so."""
        in_isr: list[int] = []
        for keys in self._isr.of(broker_id).shards:
            in_isr.extend(keys)
        led: set[int] = set()
        for keys in self._leader.of(broker_id).shards:
            led.update(keys)
        return in_isr, led

    def with_broker_in_isr(self, image: MetadataImage, broker_id: int) -> list:
        """partitionsWithBrokerInIsr, as (topic, partition id, registration)."""
        return list(self.walk_isr(image, broker_id))

    def with_broker_in_elr(self, image: MetadataImage, broker_id: int) -> list:
        """BrokersToElrs.partitionsWithBrokerInElr."""
        return list(self.walk_elr(image, broker_id))

    def walk_isr(self, image: MetadataImage, broker_id: int):
        """``with_broker_in_isr`` one partition at a time: a caller that stops early (a bounded
        list full) has not built the rest."""
        return _in_walk_order(image, self._isr.of(broker_id))

    def walk_elr(self, image: MetadataImage, broker_id: int):
        """``with_broker_in_elr`` one partition at a time."""
        return _in_walk_order(image, self._elr.of(broker_id))

    def without_leader(self, image: MetadataImage) -> list:
        """partitionsWithNoLeader."""
        return list(_in_walk_order(image, self._leader.of(NO_LEADER)))

    def as_sets(self) -> dict:
        """Everything indexed, as {kind: {broker: {(topic id, partition id)}}} (for checks)."""
        def flat(index: _BrokerSets):
            return {b: {(uuid.UUID(int=k >> _PID_BITS), _partition_id(k)) for k in chain.from_iterable(shards)}
                    for b, shards in index.by_broker.items()}
        return {"isr": flat(self._isr), "leader": flat(self._leader), "elr": flat(self._elr),
                "imbalanced": flat(self._imbalanced)}


def _in_walk_order(image: MetadataImage, keys: _Keys):
    """The partitions topic by topic in the image's order (HashTreePMap's: by Uuid hash), then by
    partition id, as a walk of the whole image would meet them (an iterator: the keys are
    grouped by topic first, the partitions looked up as they are asked for)."""
    by_topic: dict[int, list[int]] = {}
    for key in keys:
        by_topic.setdefault(key >> _PID_BITS, []).append(_partition_id(key))
    for topic_id in uuid_tree_order([uuid.UUID(int=t) for t in by_topic]):
        topic = image.topics_by_id[topic_id]
        for pid in sorted(by_topic[topic_id.int]):
            yield topic, pid, topic.partitions[pid]
