"""The active controller's own layers of a topic config's resolution.

Kafka's controller resolves a topic config (ConfigurationControlManager.getTopicConfig) from the
topic's dynamic config, then the dynamic config of its own node (the BROKER resource named by
its node id), then the cluster default (the BROKER resource named ""), then its static
server.properties. The middle and last layers belong to whichever controller is active, so the
controller keeps them with its state (ControllerState.node_configs) and keeps them across a
snapshot load or rollback of that state.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NodeConfigs"]


@dataclass(frozen=True)
class NodeConfigs:
    """``node_id``: the controller's node id, None for a state no controller runs (a loader);
    ``static_unclean_election``: unclean.leader.election.enable in its server.properties;
    ``static_min_isr``: min.insync.replicas in its server.properties."""
    node_id: int | None = None
    static_unclean_election: bool = False
    static_min_isr: int = 1
