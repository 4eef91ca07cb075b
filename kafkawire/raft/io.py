"""The boundary of the raft core: what goes in, what comes out, and in what order.

The core (core.py) never touches a socket, a disk or a clock. Its caller, the driver (the
asyncio node in production, the simulator in tests), feeds it one input at a time with
``RaftCore.step(input)`` and gets back a ``Ready``. The contract, as etcd's Ready loop:

1. ``election``: write quorum-state atomically (tmp file, fsync, rename) if present.
2. ``log_ops`` in order (truncations, appends, snapshot writes), then fsync the log if
   ``flush`` is set. Nothing in steps 3-5 may happen before 1 and 2 are durable, except
   with ``RaftConfig.async_flush``: then the fsync may run in the background, and only a
   Ready with ``hold_until_flushed`` keeps its steps 3-4 (and those of every later Ready, in
   order) until it is done; the driver reports each finished fsync with
   ``LogFlushed(flush_id)``, the ``flush_id`` of the latest Ready it covers.
3. ``send`` requests and ``respond`` to requests (which the driver received earlier and
   identified by ``request_id``). A vote or a fetch acknowledgement leaves only once the
   state it depends on is on disk; that is why sending comes after persisting.
4. Hand ``committed_through`` (the new high watermark) and ``load_snapshot`` to the state
   machine, and complete ``appends_committed``/``appends_failed`` for the core's clients.
5. Call ``step(Tick(now_ms))`` again at ``wake_at_ms`` at the latest.

The driver must apply a Ready completely before the next input (synchronous mode). Reads
(serving Fetch, loading control records) go through the LogStore the driver gives the core,
which must reflect every Ready applied so far.

Every input carries ``now_ms``; the core asserts it never goes backwards. Randomness comes
from a seeded ``random.Random`` owned by the core.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Never, NoReturn

from .types import ElectionState, LeaderAndEpoch, OffsetAndEpoch, ReplicaKey

# --- inputs --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed; a deadline may have expired."""
    now_ms: int


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """An RPC from a peer or a client. ``request_id`` is the driver's handle for the reply."""
    now_ms: int
    request_id: object
    api_version: int
    body: Any
    source: str = ""   # for logs: the peer address


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """The answer to one of our requests (matched by the core's ``correlation_id``)."""
    now_ms: int
    correlation_id: int
    destination: int
    body: Any


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """One of our requests got no answer: connection refused or lost, or the peer does not
    support the version the request needs (error_code UNSUPPORTED_VERSION, as Kafka's
    NetworkClient reports it). Timeouts are the core's own business."""
    now_ms: int
    correlation_id: int
    destination: int
    error_code: int


@dataclass(frozen=True, slots=True)
class Propose:
    """Append records (already serialised values) as the leader. ``token`` comes back in
    ``appends_committed`` or ``appends_failed``."""
    now_ms: int
    token: object
    records: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class LogFlushed:
    """The log is durable as written by every Ready up to the one whose ``flush_id`` this is
    (``RaftConfig.async_flush``; one fsync may cover several Readys: group commit)."""
    now_ms: int
    flush_id: int


@dataclass(frozen=True, slots=True)
class SnapshotFrozen:
    """The state machine finished writing a snapshot (through the driver) with this id."""
    now_ms: int
    snapshot_id: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Stop gracefully: a leader resigns and tells the voters, then the core reports done."""
    now_ms: int
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class Resign:
    """The state machine asks the leader of ``epoch`` to step down (Kafka's RaftClient.resign)."""
    now_ms: int
    epoch: int


@dataclass(frozen=True, slots=True)
class CleanLog:
    """The driver's retention policy (metadata.max.retention.bytes/ms) says the log may shed
    what the latest committed snapshot covers (Kafka's KafkaMetadataLog.maybeClean)."""
    now_ms: int


Input = (Tick | RequestReceived | ResponseReceived | RequestFailed | Propose | SnapshotFrozen | Shutdown | Resign
         | CleanLog | LogFlushed)

# --- outputs -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TruncateTo:
    """Remove every record at or after ``offset``."""
    offset: int


@dataclass(frozen=True, slots=True)
class Append:
    """Append one v2 batch (its offsets and epoch already assigned)."""
    batch: bytes
    base_offset: int
    last_offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class WriteSnapshotChunk:
    """Write ``data`` at ``position`` of the partial snapshot file ``snapshot_id`` (.part)."""
    snapshot_id: OffsetAndEpoch
    position: int
    data: bytes


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    """Make the partial snapshot durable and visible (fsync, rename .part), then empty the
    log, restart it at the snapshot's end offset and delete older snapshots."""
    snapshot_id: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class TruncateFully:
    """Empty the log and restart it at ``offset`` (the end of a snapshot the log fell behind;
    Kafka's truncateFullyAndStartAt); snapshots older than that offset go too."""
    offset: int


@dataclass(frozen=True, slots=True)
class DeleteBefore:
    """Log cleaning: segments wholly before ``offset`` and snapshots older than
    ``keep_snapshot`` may go; the log start offset becomes ``offset``."""
    offset: int
    keep_snapshot: OffsetAndEpoch


LogOp = TruncateTo | Append | WriteSnapshotChunk | InstallSnapshot | TruncateFully | DeleteBefore


def unknown_log_op(op: Never) -> NoReturn:
    """The ``case _`` of a match over LogOp: the type checker proves it unreachable; at run
    time it names what arrived."""
    raise TypeError(f"unknown log operation {op!r}")


@dataclass(frozen=True, slots=True)
class OutboundRequest:
    correlation_id: int
    destination: int                      # node id; bootstrap servers are -2, -3, ...
    address: tuple[str, int] | None      # where to connect, when the core knows it
    body: Any                             # a generated *Request message


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    request_id: object
    api_version: int
    body: Any


@dataclass(frozen=True, slots=True)
class Ready:
    """What one step asks of the driver, in the order the module docstring gives."""
    election: ElectionState | None = None                  # to persist before anything else
    log_ops: tuple[LogOp, ...] = ()
    flush: bool = False
    # async_flush only: the number LogFlushed reports once this Ready's writes are durable,
    # and whether its messages and notices must wait for that (a follower's fetch offset, a
    # truncation, a snapshot install); a leader's own appends need not, since it counts its
    # log end toward the high watermark only once LogFlushed says it is durable.
    flush_id: int = 0
    hold_until_flushed: bool = False
    send: tuple[OutboundRequest, ...] = ()
    respond: tuple[OutboundResponse, ...] = ()
    committed_through: int | None = None                   # new high watermark
    load_snapshot: OffsetAndEpoch | None = None
    leader_change: LeaderAndEpoch | None = None
    appends_committed: tuple[tuple[object, int], ...] = ()  # (token, last offset)
    appends_failed: tuple[tuple[object, int], ...] = ()     # (token, error code)
    appended: tuple[tuple[object, int], ...] = ()           # (token, last offset): accepted, not committed yet
    shutdown_complete: bool = False
    wake_at_ms: int = 0
    # Requests refused as hostile or impossible, and elections the epoch space no longer
    # allows: the driver logs each as a warning (they change no state).
    warnings: tuple[str, ...] = ()
    # The changes of epoch state in this step, (before, after) as states.describe says them,
    # for the driver's log.
    transitions: tuple[tuple[str, str], ...] = ()

    def is_empty(self) -> bool:
        return not (self.election or self.log_ops or self.send or self.respond
                    or self.committed_through is not None or self.load_snapshot
                    or self.leader_change or self.appends_committed or self.appends_failed
                    or self.appended or self.shutdown_complete)


@dataclass(frozen=True, slots=True)
class ReplicaProgress:
    """What DescribeQuorum reports per replica."""
    key: ReplicaKey
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclass(frozen=True, slots=True)
class RaftStatus:
    """What the driver and its metrics may know of the core between steps (``RaftCore.status()``):
    a copy, so that reading it never reaches into the core's state."""
    role: str                              # "leader", "follower", "candidate", "prospective", "unattached", "resigned"
    epoch: int
    leader: LeaderAndEpoch
    voted_id: int | None
    high_watermark: int | None
    log_start_offset: int
    log_end_offset: int
    last_fetched_epoch: int
    epoch_start_offset: int | None         # the leader's: the first offset of its epoch
    proposed_records: int                  # accepted by the leader, not in the log yet (its accumulator)
    voters: int
    unknown_voter_connections: int         # voters with no endpoint on our listener (Kafka's metric)
    observers: int                         # the observers a leader tracks
    uncommitted_voter_change: bool         # a leader's KIP-853 change in flight
    kraft_version: int
    counters: tuple[tuple[str, int], ...]  # (name, count), sorted by name

    @property
    def is_leader(self) -> bool:
        return self.role == "leader"

    def counter(self, name: str) -> int:
        return dict(self.counters).get(name, 0)
