"""The vote tally of one election (pre-vote or standard): who granted, who rejected."""
from __future__ import annotations

from dataclasses import dataclass, field

from .voters import majority_size


class VoteTallyError(ValueError):
    """A vote that contradicts one already counted in this election."""


@dataclass(slots=True)
class EpochElection:
    voters: frozenset[int]
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)

    def _check_voter(self, node_id: int) -> None:
        if node_id not in self.voters:
            raise VoteTallyError(f"node {node_id} is not a voter of this election {sorted(self.voters)}")

    def record_granted(self, node_id: int, *, strict: bool) -> None:
        """Count a granted vote. ``strict`` (standard votes) refuses a voter that had rejected
        us in the same epoch: a persisted vote cannot change, so that is a protocol violation.
        Pre-votes are not persisted and a voter may change its answer; the latest counts."""
        self._check_voter(node_id)
        if node_id in self.rejected:
            if strict:
                raise VoteTallyError(f"node {node_id} granted a vote it had rejected in the same epoch")
            self.rejected.discard(node_id)
        self.granted.add(node_id)

    def record_rejected(self, node_id: int, *, strict: bool) -> None:
        self._check_voter(node_id)
        if node_id in self.granted:
            if strict:
                raise VoteTallyError(f"node {node_id} rejected a vote it had granted in the same epoch")
            self.granted.discard(node_id)
        self.rejected.add(node_id)

    @property
    def is_granted(self) -> bool:
        return len(self.granted) >= majority_size(len(self.voters))

    @property
    def is_rejected(self) -> bool:
        """A majority can no longer be reached."""
        return len(self.voters) - len(self.rejected) < majority_size(len(self.voters))

    @property
    def unrecorded(self) -> frozenset[int]:
        return self.voters - self.granted - self.rejected


@dataclass(slots=True)
class PreVoteYield:
    """A won pre-vote held back for a lower-id peer whose pre-vote we granted in ``epoch``, until
    ``until_ms`` (voting.py, _note_pre_vote_granted); ``held``: it has held one back."""
    epoch: int
    until_ms: int
    held: bool = False
