"""The contract between a raft node (kafkawire.raft.node) and the state machine it runs
(kafkawire.controller's MetadataController, or test-raft-server's LoadGenerator): the only
thing either side imports of the other. The node never imports the controller, the controller
never imports the node; `kafkawire server-start` (kafkawire.tools.server_start) joins them by
handing ControllerNode a ``StateMachineFactory``.

Everything here runs on the node's one asyncio event loop, in its one thread. Nothing is
thread-safe, and nothing needs to be.

The raft handle: what the state machine may ask of raft (``RaftHandle``; RaftDriver is one)
-------------------------------------------------------------------------------------------
* ``node_id``: this node's node.id.
* ``leader() -> LeaderAndEpoch``: the leader this node knows (``leader_id`` None while none is
  known) and the epoch. Cheap, never blocks.
* ``is_leader() -> bool``: this node is the leader of the current epoch.
* ``leader_caught_up() -> bool``: this node leads *and* has applied (``on_committed``) every
  record committed before its epoch began. Kafka tells its listener of a new leadership only
  then; a state machine must not act as the leader before it (the committed state may still
  miss records).
* ``next_offset() -> int``: the offset the next appended record will get (log end, plus what
  the core is batching, plus what waits in the append queue). Kafka's broker epochs are the
  offset of their RegisterBrokerRecord: this is how the controller knows it before appending.
* ``await append(records) -> int``: append ``records`` (encoded values) as one batch, as the
  leader; resolves with the batch's last offset once it is *committed* (the state machine sees
  it through ``on_committed`` in the same loop turn or before). Raises ``NotLeader`` when this
  node does not lead or lost leadership before the commit, ``AppendQueueFull`` when appends
  arrive faster than the log takes them (nothing appended; retry later), ``NodeFailed`` when
  the node stopped.
* ``prepare_append(records) -> Future``: ``append`` without waiting (Kafka's prepareAppend
  and schedulePreparedAppend): the records take the offsets from ``next_offset()`` at once, in
  the same step, and go out once the caller's step ends; the future resolves as ``append``
  does. ``NotLeader`` and ``AppendQueueFull`` are raised at once, with nothing appended. The
  controller applies the records to its state between the two, ahead of their commit.
* ``replay_committed(listener)``: hand ``listener`` (on_snapshot_loaded, on_committed) the
  latest snapshot and every batch committed and applied after it, at once: what the state
  machine was given so far. The controller rebuilds its committed state from it when it must
  drop records it applied ahead of their commit.
* ``await send_to_leader(request, timeout_ms) -> response``: one request to the leader's
  listener on a connection of its own (not the raft connection, whose answers are ordered
  behind the fetches a commit needs). Raises ``NoLeader`` when no leader (or no endpoint of
  it on our listener) is known; transport errors are kafkawire.net.client's.

``NodeRaft`` adds what only the factory uses: ``hw_listeners``, callables the node calls with
no argument whenever the high watermark moves (also when only control records committed).

The state machine: what the node drives (``StateMachine``)
---------------------------------------------------------
Called by the driver (kafkawire.raft.node.driver). The three ``on_*`` come in log order,
synchronously from inside its step: they must not await, block, or call back into the
driver's step (``append`` only queues, so a task it starts is fine).

* ``on_snapshot_loaded(snapshot_id, records)``: the state is now exactly the snapshot's
  records (encoded values) at ``snapshot_id`` (OffsetAndEpoch); at start (the latest snapshot)
  and when the follower installed one fetched from the leader.
* ``begin_snapshot_load(snapshot_id) -> SnapshotLoadInSteps`` (optional): the same load in
  steps, so that a large snapshot does not hold the loop: the driver hands the records to
  ``add`` a few milliseconds' worth at a time, between other work, then calls ``finish``,
  which swaps the new state in whole. Until ``finish`` the state machine serves from its old
  state; ``add`` must not touch it. A load may be dropped unfinished (a newer snapshot
  installed, the node stopping): nothing of it may then show. Between ``begin`` and
  ``finish`` the driver hands no ``on_committed`` (it holds them, and applies them after
  ``finish``, in order), but ``on_leader_change`` comes as it happens; ``leader_caught_up``
  is false meanwhile. A state machine without it gets ``on_snapshot_loaded`` at the end.
* ``on_committed(base_offset, epoch, append_time_ms, records)``: one committed data batch,
  whole, with no gap to the previous one (the driver stops the node on a gap). Control
  batches are not passed. May raise ``StateMachineFatal`` (a feature level it cannot run):
  the node stops, as Kafka's fatal fault handler halts it.
* ``on_leader_change(leader_id, epoch)``: a new epoch, or its leader became known
  (``leader_id`` None: unknown).
* ``snapshot_records() -> list[bytes]``: the committed state as records at the applied
  offset. Called on the loop too, but in an event-loop step of its own after a commit (not
  inside the step that applied it); the driver freezes what it returns and a worker thread
  writes the file. Not called while ``in_transaction`` is true (a metadata transaction still
  open is not in the state yet).
* ``frozen_snapshot() -> Callable[[], list[bytes]]`` (optional): the same records in two
  halves, so a large state is not encoded on the loop: called where ``snapshot_records``
  would be, it freezes a view of the state cheaply; the function it returns produces the
  records from that view, on the driver's worker thread, however the state changes meanwhile.
* ``in_transaction``: see above.

Called by ControllerNode (kafkawire.raft.node.controller_node):

* ``handlers() -> dict[int, ApiHandler]``: the APIs the state machine answers, registered on
  every controller listener at start, before raft starts (so before any ``on_*``); the node
  puts its authorizer in front of them. Registering only reads their version bounds.
* ``await run()``: its background work, started once the node listens; cancelled at stop.
* ``image``: the committed MetadataImage (ACLs and SCRAM credentials for the listeners'
  authorizer and SASL, the registered controllers for DescribeCluster, feature levels for
  ApiVersions), or None for a state machine that keeps no metadata (the node then answers
  from the voter set alone). Read at any time between the calls above.
* ``supported_features``: feature name -> (min, max) level this state machine supports,
  advertised in ApiVersions beside kraft.version.

A ``StateMachineFactory`` is ``factory(raft, server_config, meta_properties) -> StateMachine``;
ControllerNode calls it once, at start, after reading meta.properties and before binding.
RaftDriver.register takes any ``RaftListener`` (the three ``on_*`` methods), which then gets
the latest snapshot and the committed records up to now before the live calls.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Mapping, Protocol

from kafkawire.metadata.image import MetadataImage
from kafkawire.net.config import ServerConfig
from kafkawire.protocol.handler import ApiHandler
from kafkawire.storage.state_files import MetaProperties

from .types import LeaderAndEpoch, OffsetAndEpoch

__all__ = ["RaftHandle", "NodeRaft", "RaftListener", "StateMachine", "StateMachineFactory", "NotLeader", "NoLeader",
           "AppendQueueFull", "NodeFailed", "StateMachineFatal", "SnapshotLoadInSteps"]


class NotLeader(Exception):
    """This node is not the leader, or lost leadership before the append committed."""

    def __init__(self, message: str, error_code: int | None = None):
        super().__init__(message)
        self.error_code = error_code


class NoLeader(Exception):
    """No leader is known yet, or its endpoint on our listener is not known."""


class AppendQueueFull(Exception):
    """The leader's append queue is full: appends arrive faster than its log takes them.
    Nothing was appended; retry later (Kafka's BatchAccumulator refuses likewise when it has
    no buffer left: BufferAllocationException)."""


class NodeFailed(RuntimeError):
    """The raft core or the disk failed; the node must stop (Kafka halts the process)."""


class StateMachineFatal(RuntimeError):
    """The state machine met committed data it must not run on (a feature level it does not
    support); the node stops, as Kafka's fatal fault handler halts the controller."""


@dataclass(frozen=True)
class SnapshotLoadInSteps:
    """A state machine's load of one snapshot in steps (``begin_snapshot_load``): ``add(records)``
    for the next records, in order; ``finish()`` once they were all added, to swap the state in;
    ``prepare()``, if given, once before the first ``add``, on a worker thread (the driver's
    read of the file): the load's one-time costs that touch nothing readers see (importing the
    record decoders: 10-50 ms each on a fresh process's loop). ``finish`` may return an
    awaitable, done once the state it replaced has been let go (dropped in steps): the driver
    holds full garbage collections off until then, then freezes what survives
    (kafkawire.raft.node.gc_pauses.freeze_after_load)."""
    add: Callable[[list[bytes]], None]
    finish: Callable[[], None]
    prepare: Callable[[], None] | None = None


class RaftHandle(Protocol):
    """What the raft node offers a state machine: who leads, whether this node does, the next
    offset, the kraft.version, ``append(records)`` (raises NotLeader, AppendQueueFull) and
    ``send_to_leader(request)``.
    """
    @property
    def node_id(self) -> int: ...

    def leader(self) -> LeaderAndEpoch: ...

    def is_leader(self) -> bool: ...

    def leader_caught_up(self) -> bool: ...

    def next_offset(self) -> int: ...

    def kraft_version(self) -> int: ...

    async def append(self, records: list[bytes]) -> int: ...

    def prepare_append(self, records: list[bytes]) -> Awaitable[int]: ...   # the driver's future

    def replay_committed(self, listener: RaftListener) -> None: ...

    async def send_to_leader(self, request, timeout_ms: int = 5000): ...


class NodeRaft(RaftHandle, Protocol):
    hw_listeners: list[Callable[[], None]]


class RaftListener(Protocol):
    def on_snapshot_loaded(self, snapshot_id: OffsetAndEpoch, records: list[bytes]) -> None: ...

    def on_committed(self, base_offset: int, epoch: int, append_time_ms: int, records: list[bytes]) -> None: ...

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None: ...


class StateMachine(RaftListener, Protocol):
    """What the node runs on raft (the metadata controller): it hears committed batches, snapshots
    and leader changes (RaftListener), gives its image and records for a snapshot, the API handlers
    it serves, and runs until the node stops.
    """
    @property
    def in_transaction(self) -> bool: ...

    @property
    def image(self) -> MetadataImage | None: ...

    @property
    def supported_features(self) -> Mapping[str, tuple[int, int]]: ...

    def snapshot_records(self) -> list[bytes]: ...

    def handlers(self) -> Mapping[int, ApiHandler]: ...

    async def run(self) -> None: ...


StateMachineFactory = Callable[[NodeRaft, ServerConfig, MetaProperties], StateMachine]
