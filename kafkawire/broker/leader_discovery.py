"""Leader discovery (KIP-951): what Kafka's broker tells a client it refuses as not the leader, so
that the client can go to the leader without first refreshing its metadata.

Kafka 4.3.1's KafkaApis fills, in a Produce answer from v10 on (for NOT_LEADER_OR_FOLLOWER) and a
Fetch answer from v16 on (for NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH), the partition's
``current_leader`` with KafkaApis.getCurrentLeader's leader id and epoch, and the answer's
``node_endpoints`` with that leader's endpoint on the listener the request came in on. A follower's
Fetch gets the leader in each partition but no endpoints (KafkaApis answers followers without them).

getCurrentLeader: a partition hosted here (led or followed) gives the leader and leader epoch this
replica knows; otherwise the metadata image's partition registration; otherwise (-1, -1). The
endpoint is MetadataCache.getAliveBrokerNode's: the leader's broker registered, unfenced, with an
endpoint on the listener (host, port, and its rack); else the answer names the leader without one.

    hints = LeaderHints(broker, image, ctx.listener_name)
    leader_id, leader_epoch = hints.current_leader("t", 0)       # and the leader's endpoint noted
    hints.endpoints()            # [(node id, host, port, rack)] in the order Kafka sends them
"""
from __future__ import annotations

__all__ = ["LeaderHints", "PRODUCE_LEADER_VERSION", "FETCH_LEADER_VERSION", "scala_hash_map_order"]

PRODUCE_LEADER_VERSION = 10      # ProduceResponse v10 added CurrentLeader and NodeEndpoints
FETCH_LEADER_VERSION = 16        # KafkaApis fills them in Fetch answers from v16 on

# Scala 2.13's mutable.HashMap, in which KafkaApis gathers the endpoints before it lists its values
SCALA_INITIAL_TABLE = 16
SCALA_LOAD_FACTOR = 0.75


class LeaderHints:
    """The current leaders of one answer's refused partitions and the endpoints to send with it."""

    def __init__(self, broker, image, listener_name: str):
        self.broker = broker
        self.image = image
        self.listener_name = listener_name
        self._nodes: dict[int, tuple] = {}

    def current_leader(self, topic: str | None, index: int) -> tuple[int, int]:
        """KafkaApis.getCurrentLeader: (leader id, leader epoch); the leader's alive endpoint on
        the request's listener, if any, goes into endpoints()."""
        leader_id, leader_epoch = self._leader(topic, index)
        node = self._alive_node(leader_id)
        if node is not None:
            self._nodes[leader_id] = node
        return leader_id, leader_epoch

    def endpoints(self) -> list[tuple]:
        """[(node id, host, port, rack)]: each leader named once, in Kafka's order."""
        return [self._nodes[i] for i in scala_hash_map_order(self._nodes)]

    def _leader(self, topic: str | None, index: int) -> tuple[int, int]:
        if topic is None:
            return -1, -1
        led = self.broker.partitions.get((topic, index))
        if led is not None:                           # ReplicaManager.getPartitionOrError: hosted here
            return self.broker.node_id, led.leader_epoch
        followed = self.broker.replica_roles.followers.get((topic, index))
        if followed is not None:
            return followed.leader_id, followed.leader_epoch
        t = None if self.image is None else self.image.topics_by_name.get(topic)
        registration = None if t is None else t.partitions.get(index)   # MetadataCache.getLeaderAndIsr
        if registration is None:
            return -1, -1
        return registration.leader, registration.leader_epoch

    def _alive_node(self, broker_id: int) -> tuple | None:
        b = None if self.image is None else self.image.brokers.get(broker_id)
        if b is None or b.fenced:
            return None
        endpoint = b.listeners.get(self.listener_name)
        if endpoint is None:
            return None
        return broker_id, endpoint.host, endpoint.port, b.rack


def scala_hash_map_order(keys) -> list[int]:
    """Non-negative int keys in the order Scala 2.13's mutable.HashMap (16 slots, load factor 0.75,
    doubled as it fills) iterates them: by slot (the improved hash masked by the table size), then by
    hash within a slot. For ids below 16 this is ascending order."""
    keys = list(keys)
    size = SCALA_INITIAL_TABLE
    while len(keys) >= int(size * SCALA_LOAD_FACTOR):   # put0 grows the table before the insert that reaches it
        size *= 2

    def improved(key: int) -> int:
        return key ^ (key >> 16)
    return sorted(keys, key=lambda k: (improved(k) & (size - 1), improved(k)))
