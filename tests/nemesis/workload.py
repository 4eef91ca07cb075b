"""What clients do to a controller quorum while the nemesis works: a broker that registers and
keeps heartbeating (so that topics can be placed), a writer that creates topics one after
another and records each outcome, and a monitor that asks who leads every 200 ms.

Outcomes of a CreateTopics: ``acked`` (error NONE: the controller answers only once the records
are committed, so the topic must survive every fault), ``refused`` (an error the controller
gives before writing anything) and ``maybe`` (a timeout, a lost connection, or NOT_CONTROLLER
from a leader that lost its quorum mid-request: the records may or may not have committed).
Names are never reused, so a name can appear in the log at most once.
"""
from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from kafkawire.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kafkawire.messages.broker_registration_request import BrokerRegistrationRequest, Listener
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_topics_request import DeleteTopicState, DeleteTopicsRequest
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import encode_request
from kafkawire.raft.node.demo_client import broker_features
from kafkawire.raft.node.local_quorum import QuorumError, describe_quorum

BROKER_ID = 100
# Answers given before anything is written: the topic certainly does not exist.
DEFINITE_REFUSALS = {Errors.INVALID_REPLICATION_FACTOR, Errors.INVALID_TOPIC_EXCEPTION,
                     Errors.TOPIC_ALREADY_EXISTS, Errors.INVALID_PARTITIONS}


@dataclass
class Outcomes:
    acked: list[str] = field(default_factory=list)        # in the order their answers came
    refused: list[str] = field(default_factory=list)
    maybe: list[str] = field(default_factory=list)
    leader_samples: list[tuple[float, int | None]] = field(default_factory=list)   # (time, leader id)

    def leaderless_seconds(self) -> float:
        """Time between samples that began with no leader (each sample takes as long as it takes)."""
        samples = self.leader_samples
        return sum(later[0] - earlier[0] for earlier, later in zip(samples, samples[1:]) if earlier[1] is None)


class QuorumClient:
    """Finds the active controller among the nodes' real addresses and talks to it."""

    def __init__(self, addresses: dict[int, tuple[str, int]], timeout_ms: int = 3000):
        self.addresses = addresses
        self.timeout_ms = timeout_ms
        self.client = NetworkClient(client_id="nemesis", request_timeout_ms=timeout_ms,
                                    connect_timeout_ms=timeout_ms)

    async def leader(self) -> int | None:
        """A node that says it leads (asked directly, so a partitioned old leader may still say so)."""
        for node_id, address in self.addresses.items():
            try:
                view = await asyncio.wait_for(describe_quorum(address, timeout_ms=1000), 2)
            except (TransportError, QuorumError, OSError, asyncio.TimeoutError):
                continue
            if view.leader_id == node_id:
                return node_id
        return None

    async def send_to_leader(self, request):
        leader = await self.leader()
        if leader is None:
            raise TransportError(("?", 0), "no leader")
        return await asyncio.wait_for(self.client.send(self.addresses[leader], request),
                                      self.timeout_ms / 1000 + 2)

    async def close(self) -> None:
        await self.client.close()


async def keep_a_broker(qc: QuorumClient, cluster_id: str, metadata_version: int, stop: asyncio.Event) -> None:
    """Register broker 100 and heartbeat it every 500 ms to whoever leads, re-registering when
    the controller no longer knows its epoch."""
    epoch = None
    while not stop.is_set():
        try:
            if epoch is None:
                reply = await qc.send_to_leader(BrokerRegistrationRequest(
                    broker_id=BROKER_ID, cluster_id=cluster_id, incarnation_id=uuid.uuid4(),
                    listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=9092, security_protocol=0)],
                    features=broker_features(metadata_version),
                    log_dirs=[uuid.uuid4()]))
                if reply.error_code == Errors.NONE:
                    epoch = reply.broker_epoch
            else:
                reply = await qc.send_to_leader(BrokerHeartbeatRequest(
                    broker_id=BROKER_ID, broker_epoch=epoch, current_metadata_offset=2**62, want_fence=False))
                if reply.error_code == Errors.STALE_BROKER_EPOCH:
                    epoch = None
        except (TransportError, asyncio.TimeoutError, OSError):
            pass
        await asyncio.sleep(0.5)


async def create_topics(qc: QuorumClient, outcomes: Outcomes, stop: asyncio.Event, prefix: str = "nemesis",
                        created: list[str] | None = None) -> None:
    """Create topics one after another; ``created`` (if given) also gets each acknowledged name."""
    n = 0
    while not stop.is_set():
        name = f"{prefix}-{n:07d}"
        n += 1
        request = CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
                                      timeout_ms=qc.timeout_ms)
        try:
            reply = await qc.send_to_leader(request)
        except TransportError as exc:
            if "no leader" in str(exc):
                outcomes.refused.append(name)      # nothing was sent
                await asyncio.sleep(0.2)
            else:
                outcomes.maybe.append(name)
            continue
        except (asyncio.TimeoutError, OSError):
            outcomes.maybe.append(name)
            continue
        code = Errors.for_code(reply.topics[0].error_code)
        if code == Errors.NONE:
            outcomes.acked.append(name)
            if created is not None:
                created.append(name)
        elif code in DEFINITE_REFUSALS:
            outcomes.refused.append(name)
            await asyncio.sleep(0.2)
        else:
            outcomes.maybe.append(name)
            await asyncio.sleep(0.05)


async def monitor_leadership(qc: QuorumClient, outcomes: Outcomes, stop: asyncio.Event,
                             interval: float = 0.2) -> None:
    while not stop.is_set():
        outcomes.leader_samples.append((time.monotonic(), await qc.leader()))
        await asyncio.sleep(interval)


RACE_NAMES = [f"race-{i}" for i in range(4)]


async def race_on_names(qc: QuorumClient, stop: asyncio.Event, rng, counts: Counter) -> None:
    """Writers racing on a few names: each round sends three CreateTopics or DeleteTopics of one
    name at once, on connections of their own, each with a timeout of 0-30 ms and half of them
    closed right after sending (a client that disconnects). A write the controller has generated
    must still be seen by the next one, so the log never holds two TopicRecords of one live name
    or two RemoveTopicRecords of one topic; the checks replay the log to prove it (issue 24,
    defect 2)."""
    while not stop.is_set():
        leader = await qc.leader()
        if leader is None:
            await asyncio.sleep(0.2)
            continue
        name = rng.choice(RACE_NAMES)
        racers = [_race_request(name, rng) for _ in range(3)]
        for request, disconnect in racers:
            counts["race: sent and disconnected" if disconnect else "race: sent with a short timeout"] += 1
        await asyncio.gather(*(_send_raw(qc.addresses[leader], request, disconnect)
                               for request, disconnect in racers), return_exceptions=True)
        await asyncio.sleep(rng.uniform(0, 0.02))


def _race_request(name: str, rng):
    if rng.random() < 0.5:
        request = CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
                                      timeout_ms=rng.randint(0, 30))
    else:
        request = DeleteTopicsRequest(topics=[DeleteTopicState(name=name, topic_id=uuid.UUID(int=0))],
                                      timeout_ms=rng.randint(0, 30))
    return request, rng.random() < 0.5


async def _send_raw(address, request, disconnect: bool) -> None:
    """Write one request frame on a connection of its own; close it at once, or after the answer."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), 2)
    try:
        version = 7 if isinstance(request, CreateTopicsRequest) else 6
        writer.write(encode_request(request, version, 1, client_id="nemesis-race"))
        await asyncio.wait_for(writer.drain(), 2)
        if not disconnect:
            size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), 5), "big")
            await asyncio.wait_for(reader.readexactly(size), 5)
    finally:
        writer.transport.abort()
