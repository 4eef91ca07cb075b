"""Random bytes and damaged records fetched by a follower (Kafka's
KafkaRaftClientFetchTest.testRandomRecords, MockLogTest.testRandomRecords and
KafkaRaftLogTest.testRandomRecords), and a damaged snapshot (issue 19, item 5).

A follower given a Fetch response whose records are 1 to 128 random bytes, or a good batch
with a few bytes changed, must not raise; it refuses what breaks the log's rules and keeps
its log end offset. The on-disk log (DiskLogStore) and the simulator's in-memory one
(MemoryLogStore) are driven by the same core with the same payloads and must end alike.
A FetchSnapshot answer with damaged bytes must not replace the log either: the follower
refuses the snapshot and fetches it again.
"""
from __future__ import annotations

import random
import uuid

import pytest

from kafkawire.messages.fetch_request import FetchRequest
from kafkawire.protocol import framing
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft import rpc
from kafkawire.raft.config import RaftConfig
from kafkawire.raft.core import RaftCore
from kafkawire.raft.io import ResponseReceived, Tick
from kafkawire.raft.node.disk_store import DiskLogStore
from kafkawire.raft.simulate import SimSettings, Simulation
from kafkawire.raft.simulate.store import MemoryLogStore
from kafkawire.raft.types import ElectionState, Endpoints
from kafkawire.raft.voters import VoterSet
from kafkawire.records import RecordBatchBuilder

PAYLOADS = 100


def _endpoints(i: int) -> Endpoints:
    return Endpoints((("CONTROLLER", f"node{i}", 9093),))


class _Follower:
    """Node 2 of static voters {1, 2, 3}, following leader 1 in epoch 1, on ``store``."""

    def __init__(self, store):
        self.store = store
        config = RaftConfig(node_id=2, directory_id=uuid.UUID(int=2), cluster_id="c", endpoints=_endpoints(2),
                            static_voters=VoterSet.static({i: _endpoints(i) for i in (1, 2, 3)}))
        self.core = RaftCore(config, store, ElectionState.elected(1, 1), now_ms=0, seed=1)
        self.now = 0
        self._apply(self.core.start())
        self.warnings: list[str] = []

    def _apply(self, ready):
        for op in ready.log_ops:
            self.store.apply(op)
        if ready.flush:
            self.store.flush()
        self.pending = [r for r in ready.send if isinstance(r.body, FetchRequest)] or getattr(self, "pending", [])
        return ready

    def answer_fetch(self, records: bytes, high_watermark: int):
        """Answer the fetch in flight (asking for one first) with ``records``."""
        for _ in range(50):
            if self.pending:
                break
            self.now += 100
            self._apply(self.core.step(Tick(self.now)))
        request = self.pending.pop()
        body = rpc.fetch_response(int(Errors.NONE), high_watermark=high_watermark, log_start_offset=0,
                                  records=records, leader_id=1, epoch=1, endpoints=_endpoints(1),
                                  listener="CONTROLLER")
        # Through the codec, as the network would hand it over.
        frame = framing.encode_response(body, 17, request.correlation_id)
        _, decoded = framing.decode_response(frame[4:], 1, 17)
        self.now += 1
        ready = self._apply(self.core.step(ResponseReceived(self.now, request.correlation_id, request.destination,
                                                            decoded)))
        self.warnings = list(ready.warnings)
        return ready

    def log_bytes(self) -> bytes:
        return self.store.read(self.store.start_offset(), 1 << 30) if self.store.end_offset() else b""


def _batch(base: int, values: list[bytes]) -> bytes:
    builder = RecordBatchBuilder(base_offset=base, partition_leader_epoch=1)
    for value in values:
        builder.append(b"k", value, (), 0)
    return builder.build()


def _payloads():
    """Kafka's ArbitraryMemoryRecords (1 to 128 random bytes) and good batches at the log end
    with 1 to 3 bytes changed, half and half, from a fixed seed."""
    rng = random.Random(19)
    for i in range(PAYLOADS):
        if i % 2 == 0:
            yield f"random-{i}", bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 128)))
        else:
            data = bytearray(_batch(3, [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 20)))
                                        for _ in range(rng.randint(1, 4))]))
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.getrandbits(8)
            yield f"changed-{i}", bytes(data)


def test_random_records_are_refused_alike_by_the_memory_and_the_disk_log(tmp_path):
    outcomes = {"refused": 0, "appended": 0, "nothing": 0}
    for name, payload in _payloads():
        followers = [_Follower(MemoryLogStore()), _Follower(DiskLogStore(tmp_path / name, fsync=False))]
        for follower in followers:
            follower.answer_fetch(_batch(0, [b"a", b"b", b"c"]), 3)
            assert follower.core.log.end_offset == 3 and follower.core.high_watermark() == 3
        results = []
        for follower in followers:
            refused_before = follower.core.counters.get("fetch_responses_refused", 0)
            follower.answer_fetch(payload, 3)     # must not raise
            refused = follower.core.counters.get("fetch_responses_refused", 0) - refused_before
            results.append((refused, follower.core.log.end_offset, follower.store.end_offset(), follower.log_bytes(),
                            follower.warnings, follower.core.high_watermark()))
        assert results[0] == results[1], f"{name}: the memory and the disk log differ"
        refused, end, store_end, _, warnings, hw = results[0]
        assert end == store_end and hw == 3
        if refused:
            assert end == 3, f"{name}: a refused response moved the log end to {end}"
            assert any("refused the records fetched from leader 1" in w for w in warnings), warnings
            outcomes["refused"] += 1
        else:
            outcomes["appended" if end > 3 else "nothing"] += 1
        if isinstance(followers[1].store, DiskLogStore):
            followers[1].store.close()
    # Most damage is refused; bytes too short for a batch are an incomplete tail (nothing),
    # and a change in a field outside the CRC (the leader epoch within bounds) can pass.
    assert outcomes["refused"] >= PAYLOADS * 3 // 4, outcomes


def test_a_damaged_snapshot_is_refused_and_fetched_again():
    """An observer that was down while the voters snapshotted and cleaned their logs gets the
    first complete FetchSnapshot answer with its bytes replaced by random ones (the same
    length, so the chunk's size and position still add up). It refuses the snapshot, keeps
    its log, and installs the good copy it fetches next; every invariant holds throughout."""
    sim = _DamagesTheFirstSnapshot(5, SimSettings(voters=3, observers=1, snapshot_every=20, drop_rate=0.0,
                                                  duplicate_rate=0.0, clean_log_on_snapshot=True))
    sim.faults_enabled = False
    sim.start()
    observer = sim.nodes[4]
    sim.run_until(1000)
    observer.crash()
    sim.run_until(9000)
    leader = next(n for n in sim.nodes.values() if n.alive and n.core.state.__class__.__name__ == "Leader")
    assert leader.core.log.start_offset > 0
    sim._boot(observer)
    log_before = (observer.core.log.start_offset, observer.core.log.end_offset)
    assert sim.run_until(sim.now + 10_000, lambda: observer.core.counters.get("fetched_snapshots_refused", 0) == 1)
    assert sim.damaged is not None
    assert (observer.core.log.start_offset, observer.core.log.end_offset) == log_before
    assert observer.core.counters["snapshot_installs"] == 0
    assert sim.run_until(sim.now + 10_000, lambda: observer.core.counters["snapshot_installs"] == 1
                         and observer.machine.applied_offset >= leader.core.log.start_offset)
    sim.check_all()


class _DamagesTheFirstSnapshot(Simulation):
    """Damages the first FetchSnapshot answer with data sent to node ``target``."""
    target, damaged, _to = 4, None, None

    def _send_response(self, node, response):
        self._to = response.request_id[0]
        super()._send_response(node, response)

    def _maybe_corrupt(self, frame: bytes, api_key: int, version: int) -> bytes:
        if api_key != 59 or self.damaged is not None or self._to != self.target:
            return frame
        correlation_id, body = framing.decode_response(frame[4:], api_key, version)
        partition = body.topics[0].partitions[0]
        if not partition.unaligned_records:
            return frame
        self.damaged = correlation_id
        rng = random.Random(59)
        partition.unaligned_records = bytes(rng.getrandbits(8) for _ in range(len(partition.unaligned_records)))
        return framing.encode_response(body, version, correlation_id)


@pytest.mark.parametrize("damage", ["random bytes", "truncated", "no footer"])
def test_check_fetched_snapshot_names_what_is_wrong(damage):
    from kafkawire.raft.snapshot_check import check_fetched_snapshot
    from kafkawire.storage.snapshot import SnapshotBuilder, SnapshotId
    builder = SnapshotBuilder(SnapshotId(3, 1), last_contained_log_timestamp=0, time_ms=lambda: 0)
    builder.append_batch(_batch(1, [b"a", b"b", b"c"]))
    good = builder.finish()
    assert check_fetched_snapshot(good) is None
    if damage == "random bytes":
        bad, said = bytes(random.Random(1).getrandbits(8) for _ in range(len(good))), "corrupt records"
    elif damage == "truncated":
        bad, said = good[:-5], "ends inside a batch"
    else:   # everything before the footer's batch
        from kafkawire.records import iter_batches
        bad, said = good[:list(iter_batches(good))[-1].position], "last record is not a SnapshotFooter"
    assert said in check_fetched_snapshot(bad)
