"""Controller writes per second on a three-voter quorum of `kafkawire server-start` processes
(fsync on, loopback), issue 28: BrokerRegistrations and CreateTopics of one topic, sent back
to back by one client, then by N clients at once, to the active controller.

    .venv/bin/python benchmarks/controller_writes.py [--writes 200] [--clients 1,16] [--rounds 3]

How each number is obtained:

* registrations/s: ``--writes`` BrokerRegistrations of new broker ids, spread over the clients
  (each client on a connection of its own, as real brokers; a connection's requests are
  answered in order, so one client waits for each answer before it sends the next); the
  writes over the wall time from the first send to the last answer.
* CreateTopics/s: the same with CreateTopics of one topic (1 partition, replication factor 1)
  each, after one broker was registered and unfenced so that topics can be placed.
* latency p50: of the single requests, in ms.
* medians over ``--rounds`` rounds; every answer must be NONE (else the round is reported
  with the error counts). The load average is printed: the machine is shared.

To compare with an older tree, copy this file into it and run it there (it imports the tree it
sits in).
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkawire.feature_versions import LATEST_PRODUCTION_LEVEL  # noqa: E402
from kafkawire.messages.broker_heartbeat_request import BrokerHeartbeatRequest  # noqa: E402
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest  # noqa: E402
from kafkawire.net.client import NetworkClient  # noqa: E402
from kafkawire.protocol.error_codes import Errors  # noqa: E402
from kafkawire.raft.node.demo_client import register_broker  # noqa: E402
from kafkawire.raft.node.local_quorum import LocalQuorum  # noqa: E402
from tests.nemesis.storm import _registration  # noqa: E402

_broker_ids = itertools.count(5000)
_topic_ids = itertools.count()


def _create_one(name: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1,
                                                      assignments=[], configs=[])], timeout_ms=30000)


def _error_of(reply) -> int:
    if hasattr(reply, "topics"):
        return reply.topics[0].error_code
    return reply.error_code


async def _client(address, requests: list, latencies: list, errors: Counter) -> None:
    async with NetworkClient(client_id="controller-writes", request_timeout_ms=30000) as client:
        for request in requests:
            started = time.perf_counter()
            reply = await client.send(address, request)
            latencies.append((time.perf_counter() - started) * 1000)
            errors[Errors.for_code(_error_of(reply)).name] += 1


async def one_round(address, make, writes: int, clients: int) -> dict:
    """``writes`` requests made by ``make()``, spread over ``clients`` connections at once."""
    requests = [make() for _ in range(writes)]
    latencies: list[float] = []
    errors: Counter = Counter()
    started = time.perf_counter()
    await asyncio.gather(*(_client(address, requests[i::clients], latencies, errors) for i in range(clients)))
    seconds = time.perf_counter() - started
    return {"per_s": writes / seconds, "p50_ms": statistics.median(latencies), "errors": errors}


async def measure(quorum: LocalQuorum, leader: int, writes: int, client_counts: list[int], rounds: int) -> None:
    address = quorum.address(leader)
    mv = LATEST_PRODUCTION_LEVEL
    epoch = await register_broker(address, quorum.cluster_id, 1, metadata_version=mv)
    beating = asyncio.ensure_future(_heartbeat(address, 1, epoch))
    kinds = {
        "BrokerRegistration": lambda: _registration(next(_broker_ids), quorum.cluster_id, mv),
        "CreateTopics(1 topic)": lambda: _create_one(f"bench-{next(_topic_ids)}"),
    }
    print(f"leader {leader}; load average {os.getloadavg()[0]:.2f}; {writes} writes a round, {rounds} rounds")
    for kind, make in kinds.items():
        for clients in client_counts:
            results = [await one_round(address, make, writes, clients) for _ in range(rounds)]
            errors = sum((r["errors"] for r in results), Counter())
            print(f"{kind:22} clients={clients:3}: {statistics.median(r['per_s'] for r in results):8.1f}/s  "
                  f"p50 {statistics.median(r['p50_ms'] for r in results):7.1f} ms  answers {dict(errors)}")
    print(f"load average after {os.getloadavg()[0]:.2f}")
    beating.cancel()


async def _heartbeat(address, broker_id: int, epoch: int) -> None:
    """Keep the broker that topics are placed on unfenced (every 500 ms, on its own connection)."""
    async with NetworkClient(client_id="controller-writes-broker", request_timeout_ms=30000) as client:
        while True:
            await client.send(address, BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch,
                                                              current_metadata_offset=2**62, want_fence=False))
            await asyncio.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--clients", default="1,16")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="controller-writes-") as base:
        quorum = LocalQuorum(base, voters=3)
        with quorum.started():
            leader = quorum.wait_for_leader(timeout_s=30).leader_id
            asyncio.run(measure(quorum, leader, args.writes, [int(c) for c in args.clients.split(",")], args.rounds))


if __name__ == "__main__":
    main()
