"""Every controller registers itself with the active controller: Kafka's
ControllerRegistrationManager (KIP-919).

A node sends ControllerRegistration (API 70) through RaftHandle.send_to_leader when the
committed metadata has a metadata.version that allows it (3.7-IV0 and later), a leader is
known, and the metadata holds no registration for this process's incarnation id (it has none
yet, or one a previous process left). The request carries this node's controller listeners,
zkMigrationReady false and its supported feature ranges (in the order Kafka's HashMap of them
iterates). A failed attempt (no leader, a transport error, an error answer) is retried after
Kafka's exponential backoff: 100 ms doubling to 120 s, 2% jitter.

One difference from Kafka: after an acknowledged registration the node does not send again
for this incarnation. Kafka may resend when a metadata update lands before the registration
record reaches it; since the active controller answers only once the record is committed, the
record is certain to arrive.
"""
from __future__ import annotations

import asyncio
import logging
import random
import uuid

from kafkawire.messages.controller_registration_request import ControllerRegistrationRequest, Feature, Listener
from kafkawire.net.backoff import ExponentialBackoff
from kafkawire.net.client import TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.storage.state_files import uuid_to_kafka
from kafkawire.raft.contract import NoLeader, NotLeader

from .java_order import string_hashmap_order
from .versions import controller_registration_supported

log = logging.getLogger(__name__)

SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


# ControllerRegistrationManager.resendExponentialBackoff: 100 ms (backoff_initial_ms here)
# doubling up to 120 s, 2% jitter.
RESEND_BACKOFF_MULTIPLIER, RESEND_BACKOFF_MAX_MS, RESEND_BACKOFF_JITTER = 2, 120_000, 0.02


class ControllerRegistrationManager:
    def __init__(self, raft, committed_image, *, incarnation_id: uuid.UUID, listeners, supported_features: dict,
                 request_timeout_ms: int = 5000, backoff_initial_ms: int = 100, rng: random.Random | None = None):
        """``listeners``: (name, host, port, security protocol name or id) of this node's
        controller listeners; ``committed_image()``: the image of committed records (Kafka's
        manager is a metadata publisher: what the controller applied ahead of the commit, which
        a lost leadership rolls back, must not count as registered)."""
        self.raft = raft
        self.committed_image = committed_image
        self.incarnation_id = incarnation_id
        self.listeners = list(listeners)
        self.supported_features = dict(supported_features)
        self.request_timeout_ms = request_timeout_ms
        self.backoff_initial_ms = backoff_initial_ms
        self.rng = rng or random.Random()
        self.resend_backoff = ExponentialBackoff(backoff_initial_ms, RESEND_BACKOFF_MULTIPLIER, RESEND_BACKOFF_MAX_MS,
                                                 RESEND_BACKOFF_JITTER, self.rng)
        self.acknowledged = False
        self.attempts = 0                 # requests sent, for tests and metrics
        self.failures = 0                 # consecutive failures (the backoff exponent)
        self._wake = asyncio.Event()

    def poke(self) -> None:
        """Something changed (a commit, a new leader): look again."""
        self._wake.set()

    def registered(self) -> bool:
        mine = self.committed_image().controllers.get(self.raft.node_id)
        return mine is not None and mine.incarnation_id == self.incarnation_id

    def _should_send(self) -> bool:
        if self.acknowledged or self.registered():
            return False
        mv = self.committed_image().metadata_version
        return mv is not None and controller_registration_supported(mv) and self.raft.leader().leader_id is not None

    def request(self) -> ControllerRegistrationRequest:
        listeners = [Listener(name=name, host=host, port=port,
                              security_protocol=SECURITY_PROTOCOL_IDS.get(protocol, protocol))
                     for name, host, port, protocol in self.listeners]
        features = [Feature(name=n, min_supported_version=self.supported_features[n][0],
                            max_supported_version=self.supported_features[n][1])
                    for n in string_hashmap_order(self.supported_features)]
        return ControllerRegistrationRequest(controller_id=self.raft.node_id, incarnation_id=self.incarnation_id,
                                             zk_migration_ready=False, listeners=listeners, features=features)

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._should_send():
                if await self._send_once():
                    break
                delay = self.resend_backoff.backoff_ms(self.failures - 1)
                await asyncio.sleep(delay / 1000)

    async def _send_once(self) -> bool:
        self.attempts += 1
        try:
            async with asyncio.timeout(self.request_timeout_ms / 1000 + 1):
                response = await self.raft.send_to_leader(self.request(), self.request_timeout_ms)
        except (NoLeader, NotLeader, TransportError, TimeoutError, OSError) as exc:
            return self._failed(f"{type(exc).__name__}: {exc}")
        if response.error_code != Errors.NONE:
            return self._failed(f"{Errors.for_code(response.error_code).name} ({response.error_message})")
        self.acknowledged = True
        self.failures = 0
        log.info("controller %d: the active controller acknowledged our registration (incarnation %s)",
                 self.raft.node_id, uuid_to_kafka(self.incarnation_id))
        return True

    def _failed(self, why: str) -> bool:
        self.failures += 1
        log.info("controller %d: registration failed (%s); retrying after a backoff", self.raft.node_id, why)
        return False
