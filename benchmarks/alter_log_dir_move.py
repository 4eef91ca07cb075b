"""How long AlterReplicaLogDirs keeps a partition unavailable, and how long the copy takes
(kafkawire.broker.log_dir_copy: a future log copied by a task on the event loop while the replica
serves, swapped when caught up and the controller accepted it: here a stand-in accepting
on the next turn of the loop). One partition of SIZE MB moved between two log directories of an
in-process broker while a client task produces 1 KiB batches and fetches them back without pause.
Reported, medians of RUNS: the answer's latency, the copy until the swap, the longest gap between
two answers of the client during the move (the time the partition, or the loop, did not serve),
the same client's longest gap in 0.3 s before the move (the machine's own noise), the swap itself
(one turn of the loop), its fsyncs (the new log's last writes and both renames, off the loop:
produce waits for them, fetch does not), the client's refused answers (NOT_LEADER_OR_FOLLOWER: 0
expected), and a plain ``shutil.copytree`` of the directory (the floor of a copy).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/alter_log_dir_move.py [--sizes 16,64] [--runs 3]

Before (the move within the request, the partition closed throughout, issue 29): 16 MB 95 ms and
64 MB 214 ms of unavailability (the whole move), copytree 9.5 and 21 ms.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
import uuid
from types import SimpleNamespace

from kafkawire.broker import Broker
from kafkawire.messages.alter_replica_log_dirs_request import (AlterReplicaLogDir, AlterReplicaLogDirsRequest,
                                                               AlterReplicaLogDirTopic)
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.metadata.registrations import UNASSIGNED
from kafkawire.net.config import parse_server_config
from kafkawire.records.builder import build_batch

TOPIC_ID = uuid.UUID(int=0x77)
CTX = SimpleNamespace(api_version=12, listener_name="PLAINTEXT")


def broker_with(dirs):
    registration = SimpleNamespace(leader=1, leader_epoch=0, replicas=(1,), isr=(1,), partition_epoch=0,
                                   directories=(UNASSIGNED,))
    topic = SimpleNamespace(name="t", id=TOPIC_ID, partitions={0: registration})
    image = SimpleNamespace(topics_by_name={"t": topic}, topics_by_id={TOPIC_ID: topic}, brokers={}, configs={},
                            metadata_version=17)
    config = parse_server_config(f"process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                                 f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
                                 f"controller.quorum.bootstrap.servers=127.0.0.1:1\nlog.dirs={','.join(dirs)}\n")
    broker = Broker(config, cluster_id="c", directory_id=None, image=lambda: image, metadata_offset=lambda: 0,
                    send_to_controller=None, supported_features={})
    broker.lifecycle = SimpleNamespace(state="RUNNING", poke=lambda: None, broker_epoch=5)
    broker.group_apis.on_metadata = broker.txn_apis.on_metadata = lambda: None
    broker.dir_assignments.submit = accepted_on_the_next_turn
    return broker


def accepted_on_the_next_turn(topic_id, index, directory, *, on_accepted=None) -> None:
    """A stand-in controller: a move's AssignReplicasToDirs accepted on the event loop's next turn."""
    if on_accepted is not None:
        asyncio.get_running_loop().call_soon(on_accepted)


async def client(broker, stop: asyncio.Event, stats: dict) -> None:
    """Produce a batch and fetch it back, again and again, timing the gaps between answers."""
    value = os.urandom(1024)
    last = time.perf_counter()
    while not stop.is_set():
        request = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(name="t", partition_data=[
            PartitionProduceData(index=0, records=build_batch([(None, value)]))])])
        answer = (await broker.produce_api.produce(CTX, request)).responses[0].partition_responses[0]
        fetch = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[FetchTopic(topic="t", partitions=[
            FetchPartition(partition=0, fetch_offset=max(answer.base_offset, 0), partition_max_bytes=1 << 20)])])
        fetched = (await broker.fetch_api.fetch(CTX, fetch)).responses[0].partitions[0]
        now = time.perf_counter()
        stats["gap"] = max(stats["gap"], now - last)
        last = now
        stats["answers"] += 1
        stats["refused"] += (answer.error_code != 0) + (fetched.error_code != 0)
        await asyncio.sleep(0)


async def one_run(size_mb: int) -> dict:
    root = tempfile.mkdtemp(prefix="jbod-move-")
    try:
        dirs = [os.path.join(root, "a"), os.path.join(root, "b")]
        broker = broker_with(dirs)
        broker.on_metadata()
        partition = broker.partitions[("t", 0)]
        value = os.urandom(1 << 16)
        for _ in range(size_mb * 16):
            partition.log.append(build_batch([(None, value)]), assign_offsets=True, leader_epoch=0)
        partition.log.flush()
        source = partition.log.directory
        started = time.perf_counter()
        shutil.copytree(source, os.path.join(root, "plain-copy"))
        plain = time.perf_counter() - started
        futures = broker.alter_log_dirs.futures
        swaps = []
        real_swap = futures.swap

        durable = []                               # the swap's fsyncs done (appends allowed again)

        async def until_durable():
            await broker.state_writes.appends_allowed()
            durable.append(time.perf_counter() - swapped[0])

        def timed_swap(*args):
            begun = time.perf_counter()
            failed = real_swap(*args)
            swapped.append(time.perf_counter())
            swaps.append(swapped[0] - begun)
            waits.append(asyncio.ensure_future(until_durable()))
            return failed
        futures.swap = timed_swap
        waits = []
        swapped = []
        stop, stats = asyncio.Event(), {"gap": 0.0, "answers": 0, "refused": 0}
        running = asyncio.ensure_future(client(broker, stop, stats))
        await asyncio.sleep(0.05)                  # the client going
        stats["gap"] = 0.0
        await asyncio.sleep(0.3)                   # the client alone: the machine's own gaps
        idle_gap, stats["gap"] = stats["gap"], 0.0
        request = AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDir(path=dirs[1], topics=[
            AlterReplicaLogDirTopic(name="t", partitions=[0])])])
        started = time.perf_counter()
        response = await broker.alter_log_dirs.alter_replica_log_dirs(None, request)
        answered = time.perf_counter() - started
        assert response.results[0].partitions[0].error_code == 0
        async with asyncio.timeout(600):
            while futures.futures or not durable:
                await asyncio.sleep(0.001)
        copied = time.perf_counter() - started
        stop.set()
        await running
        assert os.path.dirname(broker.partitions[("t", 0)].log.directory) == dirs[1]
        await broker.stop(graceful=False)
        return dict(answer=answered, copy=copied, gap=stats["gap"], idle_gap=idle_gap, swap=swaps[0], durable=durable[0],
                    refused=stats["refused"],
                    answers=stats["answers"], plain=plain)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,16,64")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'MB':>4} {'answer ms':>9} {'copy ms':>8} {'max gap ms':>10} {'idle gap ms':>11} {'swap ms':>8} {'fsyncs ms':>9} {'refused':>7} "
          f"{'client answers':>14} {'copytree ms':>11}")
    for size in map(int, args.sizes.split(",")):
        runs = [asyncio.run(one_run(size)) for _ in range(args.runs)]

        def median(name):
            return statistics.median(r[name] for r in runs)
        print(f"{size:>4} {median('answer') * 1000:>9.2f} {median('copy') * 1000:>8.0f} {median('gap') * 1000:>10.1f} "
              f"{median('idle_gap') * 1000:>11.1f} "
              f"{median('swap') * 1000:>8.1f} {median('durable') * 1000:>9.1f} {median('refused'):>7.0f} {median('answers'):>14.0f} "
              f"{median('plain') * 1000:>11.1f}")


if __name__ == "__main__":
    main()
