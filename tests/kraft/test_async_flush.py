"""Flush completion as an input of the core (RaftConfig.async_flush, io.LogFlushed): a leader
counts its own log end toward the high watermark only once its fsync is reported, its own
appends need not hold their messages, a follower's do; a truncation limits what a flush in
flight makes durable; and the simulator's store loses what a crash catches before its flush
finished. Deterministic: the tests step the core by hand and report flushes when they choose.
"""
from __future__ import annotations

import uuid

from kafkawire.messages.fetch_request import FetchRequest
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft import rpc
from kafkawire.raft.config import RaftConfig
from kafkawire.raft.core import RaftCore
from kafkawire.raft.io import Append, InstallSnapshot, LogFlushed, Propose, ResponseReceived, Tick, WriteSnapshotChunk
from kafkawire.raft.log import RaftLog
from kafkawire.raft.simulate.store import MemoryLogStore
from kafkawire.raft.types import ElectionState, Endpoints, OffsetAndEpoch
from kafkawire.raft.voters import VoterSet
from kafkawire.records import RecordBatchBuilder


def _endpoints(i: int) -> Endpoints:
    return Endpoints((("CONTROLLER", "127.0.0.1", 9000 + i),))


def _config(node_id: int, voters, **overrides) -> RaftConfig:
    return RaftConfig(node_id=node_id, directory_id=uuid.UUID(int=node_id), cluster_id="c",
                      endpoints=_endpoints(node_id), static_voters=VoterSet.static({i: _endpoints(i) for i in voters}),
                      **{"async_flush": True, **overrides})


def _batch(base: int, count: int, epoch: int = 1) -> bytes:
    builder = RecordBatchBuilder(base_offset=base, partition_leader_epoch=epoch)
    for i in range(count):
        builder.append(None, f"v{base + i}".encode(), (), 0)
    return builder.build()


class _Node:
    """A core whose Readys are written to a memory store; flushes wait until the test reports them."""

    def __init__(self, config: RaftConfig, election: ElectionState):
        self.store = MemoryLogStore()
        self.core = RaftCore(config, self.store, election, now_ms=0, seed=1)
        self.now = 0
        self.readys = []
        self.apply(self.core.start())

    def apply(self, ready):
        for op in ready.log_ops:
            self.store.apply(op)
        if ready.flush:
            self.store.request_flush(ready.flush_id)
        self.readys.append(ready)
        return ready

    def step(self, event):
        return self.apply(self.core.step(event))

    def tick(self, ms: int = 1):
        self.now += ms
        return self.step(Tick(self.now))

    def report_flushes(self):
        """Every flush asked for so far is done."""
        last = max(r.flush_id for r in self.readys)
        self.store.complete_flushes(last)
        return self.step(LogFlushed(self.now, last))


def _sole_leader() -> _Node:
    node = _Node(_config(1, (1,), election_timeout_ms=50, append_linger_ms=0), ElectionState.unknown(0))
    for _ in range(200):
        if node.core.status().is_leader:
            return node
        node.tick(10)
    raise AssertionError("the sole voter did not elect itself")


def test_a_leader_counts_its_own_log_end_only_once_its_flush_is_reported():
    node = _sole_leader()
    assert node.core.high_watermark() is None          # the LeaderChange is written, not durable
    assert node.report_flushes().committed_through == node.core.log.end_offset
    ready = node.step(Propose(node.now, "a", (b"value",)))        # linger 0: appended at once
    assert any(isinstance(op, Append) for op in ready.log_ops) and ready.flush and ready.flush_id > 0
    assert not ready.hold_until_flushed               # a leader's own append may leave at once
    assert ready.committed_through is None and not ready.appends_committed
    for _ in range(5):                               # time alone commits nothing
        assert not node.tick(100).appends_committed
    done = node.report_flushes()
    assert done.appends_committed == (("a", node.core.log.end_offset - 1),)
    assert done.committed_through == node.core.log.end_offset


def test_a_flush_reported_out_of_turn_or_twice_moves_nothing():
    node = _sole_leader()
    hw_before = node.core.high_watermark()
    assert node.step(LogFlushed(node.now, 10_000)).committed_through is not None   # covers all asked for
    again = node.step(LogFlushed(node.now, 10_000))
    assert again.committed_through is None and node.core.high_watermark() != hw_before


def test_without_async_flush_the_log_end_counts_at_once_and_every_flush_holds():
    node = _Node(_config(1, (1,), election_timeout_ms=50, append_linger_ms=0, async_flush=False),
                 ElectionState.unknown(0))
    while not node.core.status().is_leader:
        node.tick(10)
    assert node.core.high_watermark() == node.core.log.end_offset
    flushing = [r for r in node.readys if r.flush]
    assert flushing and all(r.hold_until_flushed and r.flush_id == 0 for r in flushing)


def test_a_followers_fetched_records_hold_its_messages_until_flushed():
    """Its next Fetch says its log end, which the leader counts toward the high watermark:
    it may leave only once that end is durable (Kafka's follower flushes before it fetches)."""
    node = _Node(_config(2, (1, 2, 3)), ElectionState.elected(1, 1))
    fetch = next((r for r in node.readys[-1].send if isinstance(r.body, FetchRequest)), None)
    while fetch is None:
        fetch = next((r for r in node.tick(100).send if isinstance(r.body, FetchRequest)), None)
    body = rpc.fetch_response(int(Errors.NONE), high_watermark=0, log_start_offset=0, records=_batch(0, 3),
                              leader_id=1, epoch=1, endpoints=_endpoints(1), listener="CONTROLLER")
    ready = node.step(ResponseReceived(node.now, fetch.correlation_id, 1, body))
    assert [type(op) for op in ready.log_ops] == [Append]
    assert ready.flush and ready.hold_until_flushed and ready.flush_id > 0


def test_a_truncation_limits_what_a_flush_in_flight_makes_durable():
    """Records written after a truncation are new: a flush asked for before it covers only
    what lies below the truncation point."""
    log = RaftLog(MemoryLogStore())
    log.append(_batch(0, 10), 0, 9, 1, flush=True, hold=False)
    log.take_pending()
    first = log.request_flush()
    log.truncate_to(5)
    log.append(_batch(5, 3, epoch=2), 5, 7, 2, flush=True)
    _, flush, hold = log.take_pending()
    assert flush and hold                            # a truncation holds the step's messages
    second = log.request_flush()
    assert log.flushed(first) and log.durable_end == 5
    assert log.flushed(second) and log.durable_end == 8
    assert not log.flushed(second)                   # reported twice: nothing moves


def test_the_simulated_disk_loses_what_a_crash_catches_before_its_flush_finished():
    store = MemoryLogStore()
    store.apply(Append(_batch(0, 2), 0, 1, 1))
    store.request_flush(1)
    store.apply(Append(_batch(2, 2), 2, 3, 1))
    store.request_flush(2)
    store.complete_flushes(1)
    assert store.durable_end_offset() == 2
    store.crash()
    assert store.end_offset() == 2                    # the second flush had not finished


def test_a_flush_asked_for_before_a_snapshot_install_does_not_bring_the_old_log_back():
    store = MemoryLogStore()
    store.apply(Append(_batch(0, 2), 0, 1, 1))
    store.request_flush(1)
    snapshot = OffsetAndEpoch(1, 10)          # (epoch, offset)
    store.apply(WriteSnapshotChunk(snapshot, 0, b"x"))
    store.apply(InstallSnapshot(snapshot))
    store.complete_flushes(1)
    store.crash()
    assert (store.start_offset(), store.end_offset()) == (10, 10)
