"""What the core's helpers (membership changes, snapshot fetching, parked fetches) may do to
a step's output, and ask of the core, without reaching into it.

``Outbox`` collects a step's messages and notices until ``RaftCore`` turns them into a
frozen Ready. ``Effects`` is the narrow interface the core hands its helpers: send a request,
answer one, warn, count, and the validations every handler shares. The core implements it
with an adapter, ``CoreEffects``, a helper gets instead of the core itself. The adapter lives here,
beside the interface it implements, rather than in core.py: it is the whole of what a helper may
reach, best read next to the interface, and core.py keeps the step loop within the project's
module-size limit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .io import OutboundRequest, OutboundResponse
from .states import Follower
from .types import Endpoints

if TYPE_CHECKING:
    from .core import RaftCore


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


class CoreEffects:
    """The core as its helpers see it (effects.Effects): each call goes to the core's method
    of the moment, so a subclass of RaftCore (the simulator's mutants) changes it too."""

    def __init__(self, core: RaftCore):
        self._core = core

    @property
    def now_ms(self) -> int:
        return self._core.now_ms

    @property
    def shutting_down(self) -> bool:
        return self._core.shutdown_deadline_ms is not None

    def send(self, destination: int, address: tuple[str, int] | None, body: Any, api: str) -> int:
        return self._core._send(destination, address, body, api)

    def respond(self, request: Answerable, body: Any) -> None:
        self._core._out.respond.append(OutboundResponse(request.request_id, request.api_version, body))

    def warn(self, message: str) -> None:
        self._core._warn(message)

    def count(self, counter: str) -> None:
        self._core.counters[counter] = self._core.counters.get(counter, 0) + 1

    def valid_cluster_id(self, cluster_id: str | None) -> bool:
        return self._core._valid_cluster_id(cluster_id)

    def validate_leader_only_request(self, request_epoch: int) -> int:
        return self._core._validate_leader_only_request(request_epoch)

    def leader_fields(self) -> dict[str, Any]:
        return self._core._leader_fields()

    def handle_common_response(self, error: int, leader_id: int | None, epoch: int,
                               endpoints: Endpoints) -> bool | None:
        return self._core._maybe_handle_common_response(error, leader_id, epoch, endpoints)

    def handle_unexpected_error(self, error: int) -> bool:
        return self._core._handle_unexpected_error(error)

    def on_successful_fetch(self, state: Follower) -> None:
        self._core._on_successful_fetch(state)

    def on_leader_high_watermark_update(self) -> None:
        self._core._on_leader_high_watermark_update()

    def append_control_records(self, records: list[tuple[int, object]]) -> int:
        return self._core.append_control_records(records)
