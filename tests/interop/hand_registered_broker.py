"""A broker registered with a controller by hand, without a broker process: BrokerRegistration
(v4) retried until the controller is active, then BrokerHeartbeats (v2) until it is unfenced.
The controller fences it again after broker.session.timeout.ms without a heartbeat."""
from __future__ import annotations

import asyncio
import uuid

from tests.controller.harness import broker_request, heartbeat

CAUGHT_UP = 2**40          # a metadata offset past anything the controller has written


async def register_unfenced(client, address, broker_id: int, cluster_id: str) -> int:
    """Register ``broker_id`` through ``client`` (a NetworkClient) and unfence it; its epoch."""
    request = broker_request(broker_id, cluster_id=cluster_id, log_dirs=[uuid.uuid4()])
    for _ in range(200):                                        # until the controller is active
        registration = await client.send(address, request, api_version=4)
        if registration.error_code == 0:
            break
        await asyncio.sleep(0.1)
    assert registration.error_code == 0, registration
    for _ in range(200):                                        # unfenced within a few heartbeats
        beat = await client.send(address, heartbeat(broker_id, registration.broker_epoch, CAUGHT_UP), api_version=2)
        if not beat.is_fenced:
            return registration.broker_epoch
        await asyncio.sleep(0.1)
    raise AssertionError(f"broker {broker_id} still fenced: {beat}")
