"""What the node's clients (the metadata controller, the tools' handlers) may be told."""
from __future__ import annotations


class NotLeader(Exception):
    """This node is not the leader, or lost leadership before the append committed."""

    def __init__(self, message: str, error_code: int | None = None):
        super().__init__(message)
        self.error_code = error_code


class AppendQueueFull(Exception):
    """The leader's append queue is full: appends arrive faster than its log takes them.
    Nothing was appended; retry later (Kafka's BatchAccumulator refuses likewise when it has
    no buffer left: BufferAllocationException)."""


class NoLeader(Exception):
    """No leader is known yet, or its endpoint on our listener is not known."""


class NodeFailed(RuntimeError):
    """The raft core or the disk failed; the node must stop (Kafka halts the process)."""


class StateMachineFatal(RuntimeError):
    """The state machine met committed data it must not run on (a feature level it does not
    support); the node stops, as Kafka's fatal fault handler halts the controller."""
