"""What the core's helpers (membership changes, snapshot fetching, parked fetches) may do to
a step's output, and ask of the core, without reaching into it.

``Outbox`` collects a step's messages and notices until ``RaftCore`` turns them into a
frozen Ready. ``Effects`` is the narrow interface the core hands its helpers: send a request,
answer one, warn, count, and the validations every handler shares. The core implements it
with an adapter (``core.CoreEffects``); a helper never sees the core itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .io import OutboundRequest, OutboundResponse
from .states import Follower
from .types import Endpoints


class RaftInvariantError(RuntimeError):
    """The core found itself in a state the protocol forbids (Kafka throws IllegalStateException)."""


@dataclass(slots=True)
class Outbox:
    """A step's output while the step runs (Ready is frozen; this is what it is built from)."""
    send: list[OutboundRequest] = field(default_factory=list)
    respond: list[OutboundResponse] = field(default_factory=list)
    appends_failed: list[tuple[object, int]] = field(default_factory=list)
    appended: list[tuple[object, int]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class Answerable(Protocol):
    """A request the driver will route an answer to (RequestReceived, a parked fetch)."""
    @property
    def request_id(self) -> object: ...

    @property
    def api_version(self) -> int: ...


class Effects(Protocol):
    @property
    def now_ms(self) -> int: ...

    @property
    def shutting_down(self) -> bool: ...

    def send(self, destination: int, address: tuple[str, int] | None, body: Any, api: str) -> int:
        """Queue a request (its correlation id is returned) and track it as in flight."""

    def respond(self, request: Answerable, body: Any) -> None: ...

    def warn(self, message: str) -> None: ...

    def count(self, counter: str) -> None: ...

    def valid_cluster_id(self, cluster_id: str | None) -> bool: ...

    def validate_leader_only_request(self, request_epoch: int) -> int:
        """NONE, or the error a leader-only request (Fetch, FetchSnapshot, UpdateRaftVoter) gets."""

    def leader_fields(self) -> dict[str, Any]:
        """The epoch, leader id, its endpoints and the listener: what every answer names."""

    def handle_common_response(self, error: int, leader_id: int | None, epoch: int,
                               endpoints: Endpoints) -> bool | None:
        """Kafka's maybeHandleCommonResponse: True/False if handled, None to go on."""

    def handle_unexpected_error(self, error: int) -> bool: ...

    def on_successful_fetch(self, state: Follower) -> None:
        """A follower heard from its leader (a fetch answered): its fetch timer restarts."""

    def on_leader_high_watermark_update(self) -> None: ...

    def append_control_records(self, records: list[tuple[int, object]]) -> int:
        """Append one control batch as the leader; returns its base offset."""
