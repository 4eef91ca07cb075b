"""Which replica a consumer should fetch from (KIP-392): Kafka's ReplicaSelector,
RackAwareReplicaSelector and ReplicaManager.findPreferredReadReplica, sans-I/O.

    selector = replica_selector(config.replica_selector_class)     # None: leader only; SelectorError
    replica = preferred_read_replica(selector, leader_id=1, leader_log_end=leo, followers=[...],
                                     client_rack="eu-1", fetch_offset=42, now_ms=now)   # a broker id, or None

``replica.selector.class`` is unset by default: every consumer reads from the leader (a follower
still serves a consumer that comes to it, see kafkawire.broker.fetch). The one selector kafkawire
has is Kafka's ``org.apache.kafka.common.replica.RackAwareReplicaSelector``, named by that class
name; any other name stops the broker at start, as Kafka's ReplicaManager fails to instantiate
a class it does not find.

findPreferredReadReplica, on the leader, for a consumer's fetch from v11 on: the candidates are
the leader (its log end, caught up now) and each follower in the committed ISR whose log holds the
fetch offset (log start <= offset <= log end, as its fetches showed them), with its endpoint on
the consumer's listener if its broker is registered, unfenced and has one. RackAwareReplicaSelector
then picks, for a client with a non-empty rack: the leader when it is in that rack or no replica
is; else among the replicas in that rack the most caught up (largest log end, then the one caught
up most recently, then the highest broker id). The leader, or a replica without an endpoint,
means "no preferred replica": the leader serves the fetch.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

__all__ = ["RACK_AWARE_REPLICA_SELECTOR", "ReplicaView", "SelectorError", "preferred_read_replica",
           "rack_aware_select", "replica_selector"]

RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


class SelectorError(ValueError):
    """``replica.selector.class`` names a selector kafkawire does not have."""


class ReplicaView(NamedTuple):
    """Kafka's ReplicaView: a replica's broker, its endpoint's rack (``has_endpoint`` False: no
    endpoint on the client's listener, Node.noNode()), log end, and ms since it was last caught up."""
    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_caught_up_ms: int
    has_endpoint: bool = True


Selector = Callable[[str | None, list, ReplicaView], ReplicaView]


def rack_aware_select(client_rack: str | None, replicas: list, leader: ReplicaView) -> ReplicaView:
    """RackAwareReplicaSelector.select over ``replicas`` (the leader among them)."""
    if not client_rack:
        return leader
    same_rack = [r for r in replicas if r.has_endpoint and r.rack == client_rack]
    if not same_rack or leader in same_rack:
        return leader
    # ReplicaView.comparator: log end, then least time since caught up, then broker id; the max wins
    return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_caught_up_ms, r.broker_id))


_SELECTORS: dict[str, Selector] = {RACK_AWARE_REPLICA_SELECTOR: rack_aware_select}


def replica_selector(class_name: str | None) -> Selector | None:
    """The selector ``replica.selector.class`` names (None when unset); SelectorError otherwise."""
    if class_name is None:
        return None
    selector = _SELECTORS.get(class_name)
    if selector is None:
        raise SelectorError(f"replica.selector.class={class_name}: kafkawire knows no such replica selector "
                            f"(the one it has is {RACK_AWARE_REPLICA_SELECTOR}; leave the setting unset to serve "
                            f"consumers from the leader only)")
    return selector


class FollowerView(NamedTuple):
    """What the leader knows of one follower, for findPreferredReadReplica."""
    broker_id: int
    in_isr: bool
    log_start_offset: int
    log_end_offset: int
    last_caught_up_time_ms: int
    endpoint_rack: tuple[str | None] | None      # (rack,) of its endpoint on the client's listener, None: none


def preferred_read_replica(selector: Selector | None, *, leader_id: int, leader_log_end: int,
                           leader_rack: tuple[str | None] | None, followers: list, client_rack: str | None,
                           fetch_offset: int, now_ms: int) -> int | None:
    """ReplicaManager.findPreferredReadReplica for a consumer's fetch on the leader: the broker id
    of the replica to read from, or None (the leader; no selector). ``followers``: FollowerViews;
    ``leader_rack``: like their ``endpoint_rack``."""
    if selector is None:
        return None
    views = [ReplicaView(f.broker_id, None if f.endpoint_rack is None else f.endpoint_rack[0], f.log_end_offset,
                         now_ms - f.last_caught_up_time_ms, f.endpoint_rack is not None)
             for f in followers
             if f.in_isr and f.log_start_offset <= fetch_offset <= f.log_end_offset]
    leader = ReplicaView(leader_id, None if leader_rack is None else leader_rack[0], leader_log_end, 0,
                         leader_rack is not None)
    views.append(leader)
    selected = selector(client_rack, views, leader)
    if selected is None or selected is leader or not selected.has_endpoint:
        return None
    return selected.broker_id
