"""What a Kafka broker does first when it starts against a KRaft quorum, reduced to the
requests: BrokerRegistration to the active controller, then BrokerHeartbeat until the
controller unfences it. The main job uses it so that the metadata log shows a broker's life.
"""
from __future__ import annotations

import asyncio
import uuid

from kafkawire import feature_versions
from kafkawire.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kafkawire.messages.broker_registration_request import BrokerRegistrationRequest, Feature, Listener
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest


class BrokerRegistrationFailed(RuntimeError):
    pass


def broker_features(metadata_version: int) -> list:
    """What a real broker names in its BrokerRegistration: every production feature it supports,
    up to its default level at this metadata.version (the controller refuses a registration that
    leaves out a feature finalized above 0, kraft.version included)."""
    return [Feature(name="metadata.version", min_supported_version=7, max_supported_version=metadata_version),
            *(Feature(name=name, min_supported_version=0, max_supported_version=level)
              for name, level in feature_versions.default_levels(metadata_version).items())]


async def register_broker(address, cluster_id: str, broker_id: int, *, host: str = "127.0.0.1", port: int = 9092,
                          metadata_version: int, timeout_s: float = 20) -> int:
    """Register and unfence a broker; returns its broker epoch."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    async with NetworkClient(client_id=f"broker-{broker_id}", request_timeout_ms=5000) as client:
        request = BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=cluster_id, incarnation_id=uuid.uuid4(),
            listeners=[Listener(name="PLAINTEXT", host=host, port=port, security_protocol=0)],
            features=broker_features(metadata_version),
            log_dirs=[uuid.uuid4()])
        while True:
            response = await client.send(address, request)
            if response.error_code == Errors.NONE:
                break
            if asyncio.get_running_loop().time() > deadline:
                raise BrokerRegistrationFailed(f"BrokerRegistration: {Errors.for_code(response.error_code).name}")
            await asyncio.sleep(0.2)
        epoch = response.broker_epoch
        while True:
            beat = await client.send(address, BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch,
                                                                     current_metadata_offset=epoch + 1,
                                                                     want_fence=False))
            if beat.error_code == Errors.NONE and not beat.is_fenced:
                return epoch
            if asyncio.get_running_loop().time() > deadline:
                raise BrokerRegistrationFailed(f"BrokerHeartbeat: {Errors.for_code(beat.error_code).name}, "
                                               f"fenced={beat.is_fenced}")
            await asyncio.sleep(0.2)


async def create_topic(address, name: str, partitions: int, replication_factor: int = 1, *,
                       timeout_s: float = 20) -> object:
    """CreateTopics to the active controller (what a broker forwards for an admin client);
    returns the topic's result (its id, partitions and replication factor)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    async with NetworkClient(client_id="kafkawire-admin", request_timeout_ms=5000) as client:
        while True:
            response = await client.send(address, CreateTopicsRequest(
                topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=replication_factor)],
                timeout_ms=int(timeout_s * 1000)))
            result = response.topics[0]
            if result.error_code == Errors.NONE:
                return result
            if not Errors.for_code(result.error_code).retriable or asyncio.get_running_loop().time() > deadline:
                raise BrokerRegistrationFailed(f"CreateTopics {name}: {Errors.for_code(result.error_code).name}: "
                                               f"{result.error_message}")
            await asyncio.sleep(0.2)
