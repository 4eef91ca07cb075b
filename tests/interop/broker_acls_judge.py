"""Kafka 4.3.1 as the judge of the broker's ACL checks, run by hand (one Kafka JVM, so not in the
default suite, whose rows run against kafkawire alone in tests/node/test_broker_api_authorization.py):

    PYTHONPATH=$PWD .venv/bin/python -m tests.interop.broker_acls_judge

Each row of that test's RULES is sent to a combined Kafka node and to a combined kafkawire node,
both SASL_PLAINTEXT/PLAIN with the StandardAuthorizer and the same users and ACLs, as the
principal without the ACLs, the one with them and the super user; it prints, per row, the error
codes each answered and whether they agree, and exits 1 if any row differs."""
from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from kafkawire.messages.create_acls_request import CreateAclsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.net.client import NetworkClient
from kafkawire.net.sasl import SaslClient
from tests.interop import kafka_dist
from tests.interop.kafka_procs import KafkaNode
from tests.node.test_broker_api_authorization import (RULES, TOPICS, USERS, CombinedNode, _codes, _for_user, _setup,
                                                      creation)

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def kafka_properties() -> dict:
    users = " ".join(f'user_user{i}="p"' for i in range(USERS))
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" '
            f'password="c-secret" user_controller="c-secret" user_alice="a-secret" {users};')
    return {"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.plaintext.plain.sasl.jaas.config": jaas,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:controller;User:ANONYMOUS",
            "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}


async def send(port, user, password, request, version):
    async with NetworkClient(request_timeout_ms=15_000, sasl=lambda: SaslClient("PLAIN", user, password)) as client:
        return await client.send(("127.0.0.1", port), request, api_version=version)


async def kafka_setup(port) -> None:
    await send(port, "controller", "c-secret", CreateTopicsRequest(timeout_ms=10_000, topics=[
        CreatableTopic(name=t, num_partitions=1, replication_factor=1) for t in TOPICS]), 7)
    creations = []
    for i, row in enumerate(RULES):
        grants = row[5] if len(row) > 5 else row[3]
        creations += [creation(f"User:user{i}", op, resource_type=kind, name=name)
                      for kind, name, op in (_for_user(g, f"user{i}") for g in grants)]
    await send(port, "controller", "c-secret", CreateAclsRequest(creations=creations), 3)
    await asyncio.sleep(2)          # the ACLs reach the broker's image


async def answers(port, index):
    row = RULES[index]
    request, version = row[1], row[2]
    refused_user = (f"user{index}", "p") if len(row) > 5 else ("alice", "a-secret")
    result = []
    for user, password in (refused_user, (f"user{index}", "p"), ("controller", "c-secret")):
        try:
            response = await send(port, user, password, _for_user(request, user), version)
            result.append(sorted(_codes(response)))
        except Exception as exc:         # noqa: BLE001 - the judge reports whatever happened
            result.append(f"{type(exc).__name__}: {exc}")
    return result


def main() -> int:
    kafka_dist.ensure()
    base = Path(tempfile.mkdtemp(prefix="acl-judge-"))
    kafka = KafkaNode(base / "kafka", 1, roles="broker,controller", properties=kafka_properties())
    kafka.format(CLUSTER_ID, "--standalone")
    kafka.start()
    ours = CombinedNode(base / "kafkawire")
    differ = 0
    try:
        kafka.wait_ready()
        ours.call(ours.start())
        ours.call(_setup(ours))
        asyncio.run(kafka_setup(kafka.broker_port))
        for index, row in enumerate(RULES):
            theirs = asyncio.run(answers(kafka.broker_port, index))
            mine = ours.call(answers(ours.broker_port, index))
            same = theirs == mine
            differ += not same
            print(f"{'same' if same else 'DIFF'}  {row[0]}\n      kafka {theirs}\n      ours  {mine}", flush=True)
    finally:
        kafka.kill()
        ours.call(ours.stop())
        ours.loop.call_soon_threadsafe(ours.loop.stop)
    print(f"{differ} of {len(RULES)} rows differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
