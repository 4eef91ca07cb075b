"""Make the captures in this folder: real Kafka clients against a kafkawire node, one capture each.

    .venv/bin/python -m tests.data.pcaps.make_captures     # needs dumpcap (Debian: tshark) and kcat

A standalone kafkawire voter (`kafkawire test-raft-server`, appending 20 records/s of 16 bytes to
__cluster_metadata) listens on 127.0.0.1; dumpcap records `tcp port PORT` on lo while one client
runs; the capture is written as <client>.pcapng. The clients, as installed by `pip install -e .[dev]`:

- kafka-python.pcapng: KafkaAdminClient.describe_metadata_quorum, then a KafkaConsumer reading
  __cluster_metadata from the beginning until 20 records have come.
- confluent-kafka.pcapng: AdminClient.list_topics and a Consumer reading 20 records (librdkafka).
- kcat.pcapng: `kcat -L`, then `kcat -C -t __cluster_metadata -o beginning -c 20 -e`.
- aiokafka.pcapng: AIOKafkaConsumer.start and topics().

tests/tools/test_pcap.py checks each with `kafkawire pcap --check` and against tshark.
"""
from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.peers import kcat, loopback_capture

HERE = Path(__file__).resolve().parent
TOPIC = "__cluster_metadata"
WANT = 20


def kafka_python(bootstrap):
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        admin.describe_metadata_quorum()
    finally:
        admin.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, request_timeout_ms=10000)
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got, deadline = 0, time.monotonic() + 30
        while got < WANT and time.monotonic() < deadline:
            got += sum(len(records) for records in consumer.poll(timeout_ms=500).values())
    finally:
        consumer.close()


def confluent_kafka(bootstrap):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient
    AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "capture", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        got, deadline = 0, time.monotonic() + 30
        while got < WANT and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            got += message is not None and message.error() is None
    finally:
        consumer.close()


def kcat_client(bootstrap):
    subprocess.run([kcat(), "-b", bootstrap, "-L"], capture_output=True, timeout=30, check=True)
    subprocess.run([kcat(), "-b", bootstrap, "-C", "-t", TOPIC, "-o", "beginning", "-c", str(WANT), "-e"],
                   capture_output=True, timeout=30, check=True)


def aiokafka(bootstrap):
    import aiokafka as aio

    async def run():
        consumer = aio.AIOKafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=10000)
        await asyncio.wait_for(consumer.start(), 30)
        try:
            await asyncio.wait_for(consumer.topics(), 30)
        finally:
            await consumer.stop()
    asyncio.run(run())


CLIENTS = {"kafka-python": kafka_python, "confluent-kafka": confluent_kafka, "kcat": kcat_client,
           "aiokafka": aiokafka}


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        q = LocalQuorum(Path(work), voters=1, server_args=lambda c: [
            "test-raft-server", "--config", c, "--throughput", "20", "--record-size", "16"])
        q.format(mode="standalone")
        q.start_all()
        try:
            q.wait_for_leader(120)
            q.wait_until(lambda: q.describe(1).high_watermark >= 40, 30, "40 committed records")
            port = q.ports[1]
            for name, client in CLIENTS.items():
                target = Path(work) / f"{name}.pcapng"
                with loopback_capture(port, target):
                    client(f"127.0.0.1:{port}")
                    time.sleep(0.5)
                shutil.copy(target, HERE / f"{name}.pcapng")
                print(f"{name}.pcapng: {target.stat().st_size} bytes")
        finally:
            q.stop_all()
            q.kill(1)


if __name__ == "__main__":
    main()
