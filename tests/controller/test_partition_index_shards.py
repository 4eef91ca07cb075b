"""A broker's partition-index keys are spread over several sets (partition_index.SHARDS), so that
no one set of a large cluster grows by rehashing all of a broker's keys inside one record's replay
(benchmarks/README.md, "A snapshot's load and take at 1M partitions"). Read as one collection, they answer as one set did."""
import random
import uuid
from types import SimpleNamespace

from kafkawire.controller.partition_index import SHARDS, PartitionIndex, partition_of
from kafkawire.metadata.registrations import NO_LEADER


class Registration:
    def __init__(self, isr, leader, elr=(), replicas=None):
        self.isr, self.leader, self.elr = tuple(isr), leader, tuple(elr)
        self.replicas = tuple(isr if replicas is None else replicas)


def test_a_brokers_keys_spread_over_the_shards_and_read_as_one_set():
    rng = random.Random(3)
    index = PartitionIndex()
    partitions = {}
    for _ in range(60):          # topics of 1 to 100 partitions: a topic's own ids alone would not spread
        topic_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        for pid in range(rng.choice((1, 3, 100))):
            isr = rng.sample(range(1, 5), 3)
            partitions[topic_id, pid] = Registration(isr, rng.choice(isr) if rng.random() < 0.9 else NO_LEADER,
                                                     elr=[5] if rng.random() < 0.1 else ())
            index.update(topic_id, pid, None, partitions[topic_id, pid])
    topics: dict = {}
    for (topic_id, pid), registration in partitions.items():
        topics.setdefault(topic_id, SimpleNamespace(partitions={})).partitions[pid] = registration
    image = SimpleNamespace(topics_by_id=topics)          # what the leaderless look reads
    sizes = index._isr.shard_sizes(1)
    assert len(sizes) == SHARDS and sum(sizes) == index.isr_count(1) > 1000
    assert max(sizes) < 2 * sum(sizes) / SHARDS          # no shard holds much more than its share
    for broker in (1, 2, 5, 9):
        in_isr = {key for key, p in partitions.items() if broker in p.isr}
        assert {partition_of(k) for k in index.isr_or_elr_keys(broker)} == in_isr | {
            key for key, p in partitions.items() if broker in p.elr}
        assert index.isr_count(broker) == len(in_isr)
        assert index.has_leaderships(broker) == any(p.leader == broker for p in partitions.values())
        leaderless = {key for key, p in partitions.items() if p.leader == NO_LEADER}
        assert index.leaderless_in_isr_or_elr_of_any(image, {broker}) == any(
            broker in partitions[k].isr + partitions[k].elr for k in leaderless)
    assert {partition_of(k) for k in index.leaderless_keys()} == leaderless
    imbalanced = {key for key, p in partitions.items() if p.leader != p.replicas[0]}
    assert {partition_of(k) for k in index.imbalanced_keys()} == imbalanced
    assert index.imbalanced_count() == len(imbalanced) > len(leaderless)


def test_a_broker_leaves_the_index_with_its_last_key():
    index = PartitionIndex()
    topic_id = uuid.uuid4()
    keys = [(topic_id, pid) for pid in range(40)]
    for key in keys:
        index.update(*key, None, Registration([1, 2], 1))
    for key in keys[:-1]:
        index.update(*key, Registration([1, 2], 1), Registration([2], 2))
    assert index.isr_count(1) == 1 and index.has_leaderships(1)
    index.update(*keys[-1], Registration([1, 2], 1), None)
    assert index.isr_count(1) == 0 and not index.has_leaderships(1) and index.isr_or_elr_keys(1) == []
    assert 1 not in index.as_sets()["isr"] and index.isr_count(2) == 39


def test_the_imbalanced_partitions_follow_every_kind_of_change():
    """Kafka's imbalancedPartitions (a partition its first replica does not lead), kept under that
    replica through creations, leader changes (the fast path), ISR-only changes, reorders and
    reassignments of the replicas, partitions without replicas and deletions: what a walk says."""
    rng = random.Random(11)
    index = PartitionIndex()
    topic_id = uuid.UUID(int=rng.getrandbits(128), version=4)
    current: dict = {}
    for _ in range(800):
        pid = rng.randrange(20)
        replicas = tuple(rng.sample(range(1, 6), rng.choice((0, 2, 3, 3))))
        old = current.get(pid)
        if old is not None and rng.random() < 0.6:
            replicas = old.replicas                     # most changes keep the replicas
        leader = rng.choice(replicas + (NO_LEADER,)) if replicas else NO_LEADER
        new = None if old is not None and rng.random() < 0.05 else Registration(replicas, leader, replicas=replicas)
        index.update(topic_id, pid, old, new)
        if new is None:
            current.pop(pid)
        else:
            current[pid] = new
        want = {}
        for p_id, p in current.items():
            if p.replicas and p.leader != p.replicas[0]:
                want.setdefault(p.replicas[0], set()).add((topic_id, p_id))
        assert index.as_sets()["imbalanced"] == want
    assert index.imbalanced_count() == sum(map(len, want.values())) > 0
    assert index.has_imbalanced()
