"""A heartbeat storm (issue 28, "Bad input and overload"): many brokers register at the active
controller and heartbeat as fast as they are answered, where Kafka's brokers heartbeat every
2 s (broker.heartbeat.interval.ms). The controller answers each one, NONE or, once a heartbeat
waited past the deadline Kafka's ControllerApis gives it (half the heartbeat interval),
REQUEST_TIMED_OUT: backpressure. The storm alone must not cost the quorum its leader: the
raft epoch is the same before and after it.

Cheap on purpose (twenty brokers, a few seconds, the nemesis's few partitions); brokers at
Kafka's pace at 100k partitions and more are tests/nemesis/paced_storm.py's."""
from __future__ import annotations

import asyncio
import uuid
from collections import Counter

from kafkawire.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kafkawire.messages.broker_registration_request import BrokerRegistrationRequest, Listener
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.demo_client import broker_features

STORM_BROKERS = 20
FIRST_STORM_BROKER = 1000
# Answers a storm may get from a controller that keeps its leadership (NOT_CONTROLLER while a
# leader elected just before the storm is still activating).
EXPECTED_ANSWERS = {f"{kind} {error}" for kind in ("registration", "heartbeat")
                    for error in ("NONE", "REQUEST_TIMED_OUT", "NOT_CONTROLLER")}


def _registration(broker_id: int, cluster_id: str, metadata_version: int) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster_id, incarnation_id=uuid.uuid4(),
        listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=19092 + broker_id, security_protocol=0)],
        features=broker_features(metadata_version), log_dirs=[uuid.uuid4()])


async def _one_broker(address, cluster_id: str, metadata_version: int, broker_id: int, until: float,
                      answers: Counter) -> None:
    """One broker on a connection of its own, as a real broker: the server answers a connection's
    requests in order, so brokers sharing one would wait behind each other's writes."""
    async with NetworkClient(client_id=f"storm-broker-{broker_id}", request_timeout_ms=3000,
                             connect_timeout_ms=3000) as client:
        await _heartbeat_until(client, address, cluster_id, metadata_version, broker_id, until, answers)


async def _heartbeat_until(client: NetworkClient, address, cluster_id: str, metadata_version: int, broker_id: int,
                           until: float, answers: Counter) -> None:
    loop = asyncio.get_running_loop()
    epoch = None
    while loop.time() < until:
        try:
            if epoch is None:
                reply = await client.send(address, _registration(broker_id, cluster_id, metadata_version))
                kind = "registration"
                if reply.error_code == Errors.NONE:
                    epoch = reply.broker_epoch
            else:
                reply = await client.send(address, BrokerHeartbeatRequest(
                    broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=2**62, want_fence=False))
                kind = "heartbeat"
                if reply.error_code == Errors.STALE_BROKER_EPOCH:
                    epoch = None
        except (TransportError, asyncio.TimeoutError, OSError):
            answers["no answer"] += 1
            await asyncio.sleep(0.1)
            continue
        answers[f"{kind} {Errors.for_code(reply.error_code).name}"] += 1
        if reply.error_code != Errors.NONE:
            await asyncio.sleep(0.05)      # a refusal: do not spin on it


async def heartbeat_storm(address, cluster_id: str, metadata_version: int, duration_s: float,
                          brokers: int = STORM_BROKERS) -> Counter:
    """``brokers`` brokers register at ``address`` and heartbeat back to back for ``duration_s``;
    returns the answers by kind and error name ("no answer" for a lost or timed-out request)."""
    answers = Counter()
    until = asyncio.get_running_loop().time() + duration_s
    await asyncio.gather(*(_one_broker(address, cluster_id, metadata_version, FIRST_STORM_BROKER + i, until, answers)
                           for i in range(brokers)))
    return answers
