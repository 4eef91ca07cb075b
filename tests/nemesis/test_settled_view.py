"""The replication nemesis's view of a partition, without brokers: it waits for every replica in
the ISR, and picks the node a network partition cuts, from what every node says, never from the
first node that answers (seed 2929: a node's view from before a kill named a leader the
controller was about to fence, and the nemesis waited 30 s for a cut to move a partition that
had moved by itself); and its liveness bounds count only the time the cluster could run."""
import os
import random

import pytest

from kafkawire.messages.metadata_response import MetadataResponsePartition
from tests.nemesis import replication_run
from tests.nemesis.broker_cluster import BrokerCluster


def partition(index, leader, epoch, isr):
    return MetadataResponsePartition(partition_index=index, leader_id=leader, leader_epoch=epoch,
                                     replica_nodes=[1, 2, 3], isr_nodes=list(isr))


class ViewsCluster(BrokerCluster):
    """A BrokerCluster whose nodes answer Metadata from ``views`` (node -> index -> partition, or
    None: no answer), each read taking the next of ``reads`` when given (views that change)."""

    def __init__(self, views, reads=()):
        self.views, self.reads = views, list(reads)
        self.down, self.rng, self.asked = set(), random.Random(1), 0

    def partitions(self, topic, nodes=(1, 2, 3)):
        if len(nodes) == 1 and nodes[0] == 1 and self.reads:
            self.views = self.reads.pop(0)           # a read starts at node 1: the next state of the cluster
        self.asked += 1
        for i in nodes:
            if i not in self.down and self.views.get(i) is not None:
                return self.views[i]
        return None

    def wait_until(self, predicate, bound_s, what):
        for _ in range(10):
            value = predicate()
            if value:
                return value
        raise TimeoutError(f"waiting for {what}")


def same_view(*parts):
    return {node: {p.partition_index: p for p in parts} for node in (1, 2, 3)}


# Seed 2929, just after node 3 (partition 0's leader) was killed and restarted: node 1 still has the
# view from before the kill (the new controller fences node 3 only when its session ends), node 2
# has replayed the move, node 3 is catching up and does not answer yet.
STALE = {1: {0: partition(0, 3, 4, [1, 2, 3]), 1: partition(1, 1, 2, [1, 2, 3])},
         2: {0: partition(0, 1, 5, [1, 2]), 1: partition(1, 1, 2, [1, 2, 3])},
         3: None}
MOVED = same_view(partition(0, 1, 5, [1, 2, 3]), partition(1, 1, 2, [1, 2, 3]))


def test_every_replica_is_in_sync_only_when_every_node_says_so():
    cluster = ViewsCluster(STALE)
    assert cluster.all_in_sync("t", 2) is False      # node 1 alone said every replica was in sync
    assert cluster.settled("t", 2) is None
    cluster.views = {**STALE, 3: MOVED[3]}            # node 3 up, nodes 1 and 2 disagree
    assert cluster.settled("t", 2) is None
    cluster.views = same_view(partition(0, 1, 5, [1, 2]), partition(1, 1, 2, [1, 2, 3]))
    assert cluster.settled("t", 2) == {0: (1, 5, (1, 2)), 1: (1, 2, (1, 2, 3))}
    assert cluster.all_in_sync("t", 2) is False
    cluster.views = MOVED
    assert cluster.all_in_sync("t", 2) is True
    cluster.down = {2}                                # a node down (killed): nothing is settled
    assert cluster.settled("t", 2) is None and cluster.all_in_sync("t", 2) is False


def test_a_network_partition_cuts_by_a_settled_view_read_twice_alike():
    leader_moving = same_view(partition(0, 3, 4, [1, 2, 3]), partition(1, 1, 2, [1, 2, 3]))
    cluster = ViewsCluster(leader_moving, reads=[leader_moving, MOVED, MOVED, MOVED])
    (leader, epoch, isr), target = replication_run.settled_pick(cluster, "isolate leader", 0)
    assert (leader, epoch, isr, target) == (1, 5, (1, 2, 3), 1)    # not node 3: it moved on before the cut
    cluster = ViewsCluster(STALE, reads=[STALE, MOVED, MOVED])
    (leader, epoch, _), follower = replication_run.settled_pick(cluster, "cut follower from leader", 0)
    assert (leader, epoch) == (1, 5) and follower in (2, 3)
    with pytest.raises(TimeoutError):                # never settled: no cut
        replication_run.settled_pick(ViewsCluster(STALE), "isolate leader", 0)


def test_a_liveness_bound_does_not_count_the_time_the_cluster_waited_for_a_core():
    from tests.nemesis.runnable_clock import RunnableClock, waiting_for_a_core
    clock_s, waited = [100.0], {1: 5.0, 2: 7.0}
    clock = RunnableClock(lambda: list(waited), read=waited.get, now=lambda: clock_s[0])
    clock_s[0], waited[1], waited[2] = 130.0, 30.0, 8.0     # node 1 starved 25 of 30 s, node 2 1 s
    assert clock.elapsed() == 5.0 and clock.starved == 25.0
    waited[3] = 50.0                                        # a node restarted meanwhile counts from now on
    clock_s[0], waited[3] = 140.0, 52.0
    assert clock.elapsed() == 15.0
    del waited[1]                                           # gone (killed): what it waited still counts
    assert clock.elapsed() == 15.0 and "waited 25 s" in clock.describe()
    clock_s[0] = 200.0                                      # a node slow or hung by itself: wall time
    assert clock.elapsed() == 75.0
    assert waiting_for_a_core(os.getpid()) >= 0 and waiting_for_a_core(2 ** 31) is None
