"""KRaft (Kafka's Raft metadata quorum) as a deterministic state machine, without I/O.

``RaftCore`` (core.py) steps on inputs and returns what to write and send; ``contract.py`` is
where the node and a state machine such as the metadata controller meet. The node that runs it
on sockets and disk is ``kafkawire.raft.node``; the simulator ``kafkawire.raft.simulate``.
The names below are imported on first use.
"""
from kafkawire._lazy import lazy_exports

__all__ = ["RaftCore", "RaftHandle", "StateMachine"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "RaftCore": ".core:RaftCore",
    "RaftHandle": ".contract:RaftHandle",
    "StateMachine": ".contract:StateMachine",
})
