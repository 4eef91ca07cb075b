"""A lost leadership's rollback at scale (issue 28 goal 5), in process: how long the event loop is
held while a controller that loses its leadership with a write in flight puts its state back to
the committed one (kafkawire.controller.pipeline, rollback.py).

The committed state is a snapshot's, as benchmarks/snapshot_load.py builds and keeps one
(``--snapshot-dir``: the active controller of benchmarks/controller_scale.py at --partitions
partitions, --brokers brokers, replication factor 3; built there when the directory holds none,
reused otherwise). A ControllerState loads it, a WritePipeline applies a write ahead of its
commit, and the pipeline rolls it back; the rollback is synchronous, so its wall time is the
loop's stall. The kinds of write (``--writes``):

* ``create``: a CreateTopics' records (a TopicRecord and 10 PartitionRecords);
* ``register``: a broker's registration (a RegisterBrokerRecord of a new broker id and one of an
  existing broker with a new epoch) with a CreateTopics' records;
* ``delete``: a topic's deletion (a RemoveTopicRecord of one of the snapshot's topics, 100
  partitions) with a feature level and an ACL.

Each is rolled back ``--rounds`` times from the committed view (what this tree does) and
``--rebuild-rounds`` times by the full rebuild from the log (the snapshot replayed: what a
rollback of any write but a create cost before, issue 28), the same state either way (the fast
one's result is checked against the rebuilt one's on its first round).

    PYTHONPATH=. .venv/bin/python benchmarks/rollback_at_scale.py --snapshot-dir /tmp/snap-1m \\
        --partitions 1000000 --brokers 500 [--rounds 5] [--rebuild-rounds 1]
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.snapshot_load import _build  # noqa: E402
from kafkawire.controller import pipeline as pipeline_module  # noqa: E402
from kafkawire.controller.errors import ApiError  # noqa: E402
from kafkawire.controller.frames import frame  # noqa: E402
from kafkawire.controller.pipeline import WritePipeline  # noqa: E402
from kafkawire.controller.snapshot import image_records  # noqa: E402
from kafkawire.controller.state import ControllerState  # noqa: E402
from kafkawire.storage.snapshot import parse_snapshot_file_name, stream_snapshot_data  # noqa: E402


class _SnapshotLog:
    """The raft log's committed part as a rebuild replays it: the snapshot alone."""

    def __init__(self, end_offset: int, epoch: int, records: list[bytes]):
        self.snapshot_id = type("SnapshotId", (), {"offset": end_offset, "epoch": epoch})()
        self.records = records

    def replay(self, listener) -> None:
        listener.on_snapshot_loaded(self.snapshot_id, self.records)


def _write(kind: str, state: ControllerState, serial: int) -> list[bytes]:
    topic_id = uuid.uuid4()
    created = [frame("TopicRecord", name=f"rolled.back-{serial}", topic_id=topic_id)]
    created += [frame("PartitionRecord", partition_id=p, topic_id=topic_id, replicas=[1, 2, 3], isr=[1, 2, 3],
                      leader=1, leader_epoch=0, partition_epoch=0) for p in range(10)]
    if kind == "create":
        return created
    if kind == "register":
        existing = next(iter(state.image.brokers.values()))
        return [frame("RegisterBrokerRecord", broker_id=100_000 + serial, broker_epoch=state.next_offset,
                      incarnation_id=uuid.uuid4()),
                frame("RegisterBrokerRecord", broker_id=existing.id, broker_epoch=state.next_offset + 1,
                      incarnation_id=uuid.uuid4())] + created
    topic = next(iter(state.image.topics_by_id.values()))
    return [frame("RemoveTopicRecord", topic_id=topic.id), frame("FeatureLevelRecord", name="group.version",
                                                                   feature_level=1),
            frame("AccessControlEntryRecord", id=uuid.uuid4(), resource_type=2, resource_name="t", pattern_type=3,
                  principal="User:alice", host="*", operation=3, permission_type=3)]


def _same(state: ControllerState, other: ControllerState) -> bool:
    return (state.next_offset == other.next_offset and state.register_broker_offsets == other.register_broker_offsets
            and state.feature_order == other.feature_order
            and state.partition_index.as_sets() == other.partition_index.as_sets()
            and image_records(state.image, state.feature_order) == image_records(other.image, other.feature_order))


class _Collections:
    """The garbage collections' wall time while ``on`` (a full one at 1M partitions takes
    hundreds of ms and may fall inside a rollback: told apart)."""

    def __init__(self):
        self.on, self.ms, self._start = False, 0.0, 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        elif self.on:
            self.ms += (time.perf_counter() - self._start) * 1000


async def _rollback_ms(pipeline: WritePipeline, kind: str, serial: int, collections: _Collections) -> tuple:
    """(the rollback's wall ms, of which in garbage collections)."""
    state = pipeline.state
    pipeline.apply_ahead(state.next_offset, 2, 0, _write(kind, state, serial))
    collections.on, collections.ms = True, 0.0
    started = time.perf_counter()
    pipeline.roll_back(ApiError(41, "not controller"))
    took = (time.perf_counter() - started) * 1000
    collections.on = False
    return took, collections.ms


async def measure(path: str, kinds: list[str], rounds: int, rebuild_rounds: int) -> None:
    file_id = parse_snapshot_file_name(os.path.basename(path))[0]
    with open(path, "rb") as f:
        records = [v for batch in stream_snapshot_data(f.read(), path) for v in batch.values()]
    log = _SnapshotLog(file_id.end_offset, file_id.epoch, records)
    state = ControllerState()
    started = time.perf_counter()
    log.replay(pipeline_module._Replayer(state))
    print(f"loaded {len(records)} records, {sum(len(t.partitions) for t in state.image.topics_by_id.values())} "
          f"partitions, {len(state.image.brokers)} brokers in {time.perf_counter() - started:.1f} s", flush=True)
    pipeline = WritePipeline(state, log.replay, lambda: None)
    fast_rollback = pipeline_module.try_fast_rollback
    collections = _Collections()
    serial = 0
    for kind in kinds:
        fast, rebuilt = [], []
        for _ in range(rebuild_rounds):
            pipeline_module.try_fast_rollback = lambda *args: False
            try:
                rebuilt.append(await _rollback_ms(pipeline, kind, serial := serial + 1, collections))
            finally:
                pipeline_module.try_fast_rollback = fast_rollback
        reference = ControllerState()
        log.replay(pipeline_module._Replayer(reference))
        for i in range(rounds):
            fast.append(await _rollback_ms(pipeline, kind, serial := serial + 1, collections))
            if i == 0:
                assert _same(state, reference), f"the fast rollback of {kind} is not the committed state"
        line = f"{kind}: fast rollback {_summary(fast, 1)} ({rounds} rounds)"
        if rebuilt:
            line += f"; full rebuild {_summary(rebuilt, 0)}"
        print(f"{line}; load average {os.getloadavg()[0]:.1f}", flush=True)


def _summary(rows: list[tuple], digits: int) -> str:
    """Median and max of the wall ms, each with its ms in garbage collections."""
    median = sorted(rows)[len(rows) // 2]
    longest = max(rows)
    return (f"median {median[0]:.{digits}f} ms (GC {median[1]:.0f}), "
            f"max {longest[0]:.{digits}f} ms (GC {longest[1]:.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshot-dir", required=True)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--writes", default="create,register,delete")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rebuild-rounds", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.snapshot_dir, exist_ok=True)
    found = sorted(n for n in os.listdir(args.snapshot_dir) if n.endswith(".checkpoint"))
    path = (os.path.join(args.snapshot_dir, found[-1]) if found
            else asyncio.run(_build(args.partitions, args.brokers, args.snapshot_dir)))
    print(f"python {sys.version.split()[0]}, {path} ({os.path.getsize(path) / 1e6:.1f} MB), "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    asyncio.run(measure(path, args.writes.split(","), args.rounds, args.rebuild_rounds))


if __name__ == "__main__":
    main()
