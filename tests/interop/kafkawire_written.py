"""A metadata directory a kafkawire node wrote, for Kafka's tools to read: a single-voter
controller (`kafkawire server-start`) with a broker registered and a topic created, run until
it has taken a snapshot holding them, then stopped."""
from __future__ import annotations

import asyncio
from pathlib import Path

from kafkawire.raft.node.local_quorum import LocalQuorum

TOPIC = "kafkawire-topic"
BROKER_ID = 100


def _snapshot_ends(directory: Path) -> list[int]:
    return sorted(int(p.name.split("-")[0]) for p in directory.iterdir()
                  if p.name.endswith(".checkpoint") and p.name[:20].isdigit())


def run_node_until_snapshot(base_dir) -> LocalQuorum:
    """Start a node, register broker 100, create a 3-partition topic, wait (bounded) for a
    snapshot taken after that, stop the node; returns the stopped quorum (its data_dir(1))."""
    from kafkawire.raft.node.demo_client import create_topic, register_broker
    from kafkawire.tools.storage import LATEST_PRODUCTION, metadata_version
    quorum = LocalQuorum(base_dir, voters=1, properties={
        "metadata.log.max.snapshot.interval.ms": "500", "metadata.log.max.record.bytes.between.snapshots": "1"})
    with quorum.started("standalone"):
        quorum.wait_for_leader(timeout_s=30)

        async def populate():
            address = quorum.address(1)
            await register_broker(address, quorum.cluster_id, broker_id=BROKER_ID,
                                  metadata_version=metadata_version(LATEST_PRODUCTION)[1])
            await create_topic(address, TOPIC, partitions=3)
        asyncio.run(populate())
        after_topic = quorum.describe(1).high_watermark
        directory = Path(quorum.metadata_partition_dir(1))
        quorum.wait_until(lambda: any(end >= after_topic for end in _snapshot_ends(directory)), 30,
                          f"a snapshot at or past offset {after_topic}")
    return quorum


def latest_snapshot(quorum: LocalQuorum) -> Path:
    directory = Path(quorum.metadata_partition_dir(1))
    end = _snapshot_ends(directory)[-1]
    return next(p for p in directory.iterdir() if p.name.startswith(f"{end:020d}-"))
