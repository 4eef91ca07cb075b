"""How long AlterReplicaLogDirs keeps a partition unavailable (kafkawire.broker.alter_log_dirs
moves a replica within the request): the move of one partition of SIZE MB between two log
directories of an in-process broker, against a plain ``shutil.copytree`` of the same directory
(the floor: the move copies, fsyncs, renames and opens the log again). Medians of RUNS.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/alter_log_dir_move.py [--sizes 1,16,64] [--runs 3]
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
from kafkawire.metadata.registrations import UNASSIGNED
from kafkawire.net.config import parse_server_config
from kafkawire.records.builder import build_batch

TOPIC_ID = uuid.UUID(int=0x77)


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
    broker.dir_assignments.submit = lambda *a: None
    return broker


async def one_run(size_mb: int) -> tuple[float, float]:
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
        request = AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDir(path=dirs[1], topics=[
            AlterReplicaLogDirTopic(name="t", partitions=[0])])])
        started = time.perf_counter()
        response = await broker.alter_log_dirs.alter_replica_log_dirs(None, request)
        moved = time.perf_counter() - started
        assert response.results[0].partitions[0].error_code == 0
        assert os.path.dirname(broker.partitions[("t", 0)].log.directory) == dirs[1]
        await broker.stop(graceful=False)
        return moved, plain
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,16,64")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'MB':>4} {'move ms':>9} {'copytree ms':>12} {'ratio':>6} {'MB/s':>6}")
    for size in map(int, args.sizes.split(",")):
        runs = [asyncio.run(one_run(size)) for _ in range(args.runs)]
        moved = statistics.median(r[0] for r in runs)
        plain = statistics.median(r[1] for r in runs)
        print(f"{size:>4} {moved * 1000:>9.1f} {plain * 1000:>12.1f} {moved / plain:>6.2f} {size / moved:>6.0f}")


if __name__ == "__main__":
    main()
