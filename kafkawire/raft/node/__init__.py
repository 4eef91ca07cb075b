"""The production KRaft node: the raft core driven by asyncio over TCP and Kafka's on-disk log.

``ControllerNode`` (controller_node.py) is what ``kafkawire server-start`` runs; ``LocalQuorum``
(local_quorum.py) starts a quorum of them as processes. Imported on first use.
"""
from kafkawire._lazy import lazy_exports

__all__ = ["ControllerNode", "NodeStartError", "LocalQuorum"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "ControllerNode": ".controller_node:ControllerNode",
    "NodeStartError": ".controller_node:NodeStartError",
    "LocalQuorum": ".local_quorum:LocalQuorum",
})
