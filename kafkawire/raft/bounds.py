"""The bounds of epochs, offsets and ids, and the rule that keeps a hostile request from
exhausting the epoch space (docs/raft.md, "Epoch bounds and hostile requests").

Epochs are int32 on the wire and in the quorum-state file, offsets int64. Kafka moves its
epoch to whatever a Vote, BeginQuorumEpoch or EndQuorumEpoch carries: one request at epoch
2147483646 leaves a quorum one election from the end of the space, after which no replica
can ever campaign again. Here a request may raise the epoch freely while it stays below the
last ``EPOCH_HEADROOM`` epochs; inside them only by one (a candidate is one election ahead),
so a single request leaves room for ``EPOCH_HEADROOM`` more elections.
"""
from __future__ import annotations

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# About a million elections: an election a minute for two years.
EPOCH_HEADROOM = 1 << 20
# The highest epoch a request may jump to in one step.
MAX_JUMP_EPOCH = INT32_MAX - EPOCH_HEADROOM


def epoch_jump_refusal(request_epoch: int, current_epoch: int) -> str | None:
    """Why a request at ``request_epoch`` may not raise our ``current_epoch``, or None."""
    if request_epoch <= current_epoch or request_epoch <= MAX_JUMP_EPOCH or request_epoch == current_epoch + 1:
        return None
    return (f"epoch {request_epoch} would jump from {current_epoch} into the last {EPOCH_HEADROOM} epochs "
            f"(above {MAX_JUMP_EPOCH}), where an epoch moves one election at a time")


def can_start_election(epoch: int) -> bool:
    """An election bumps the epoch by one; at INT32_MAX there is no next epoch."""
    return epoch < INT32_MAX


def check_epoch(epoch: int, what: str = "epoch") -> int:
    """``epoch`` if it fits an int32 epoch, else ValueError naming it."""
    if not 0 <= epoch <= INT32_MAX:
        raise ValueError(f"{what} {epoch} is outside 0..{INT32_MAX}")
    return epoch
