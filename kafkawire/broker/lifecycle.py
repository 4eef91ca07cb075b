"""The broker's registration and heartbeats with the active controller: Kafka's
BrokerLifecycleManager, as far as one combined node needs it.

    lifecycle = BrokerLifecycle(send, registration=..., metadata_offset=lambda: offset,
                                ready_to_unfence=lambda: logs_opened, heartbeat_interval_ms=2000)
    task = asyncio.ensure_future(lifecycle.run())
    await lifecycle.unfenced.wait()

The states are Kafka's: STARTING (registered, heartbeats every 10 ms with wantFence until the
controller says the broker caught up with the metadata as of its registration), RECOVERY
(ready to unfence once ``ready_to_unfence()`` holds, i.e. the logs of the partitions it leads
are open; heartbeats with wantFence=false at once, then every ``broker.heartbeat.interval.ms``)
and RUNNING (unfenced). A failed request (no controller known, a transport error, an error
answer) is retried after a backoff of 100 ms doubling up to the heartbeat interval; a
registration the controller refuses for a reason that will not pass (INCONSISTENT_CLUSTER_ID,
INVALID_REGISTRATION, UNSUPPORTED_VERSION) stops the broker, as Kafka's broker halts.

A graceful stop first runs Kafka's controlled shutdown (``controlled_shutdown``: heartbeats with
wantShutDown until the controller answers shouldShutDown). Every heartbeat carries the failed
log directories (``offline_log_dirs()``: OfflineLogDirs, KIP-858); ``heartbeat_soon`` sends one at
once when a directory fails. Past STARTING (caught up with the metadata) they also carry the
cordoned directories (``cordoned_log_dirs()``: CordonedLogDirs, KIP-1066; None leaves the field
out, below metadata.version 4.3-IV0), as Kafka's broker sends them from its catch-up on;
``heartbeat_soon`` sends one at once when they change.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Awaitable, Callable

from kafkawire.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kafkawire.messages.broker_registration_request import BrokerRegistrationRequest, Feature, Listener
from kafkawire.net.client import TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.contract import NoLeader, NotLeader

__all__ = ["BrokerLifecycle", "Registration", "RegistrationRefused", "SECURITY_PROTOCOL_IDS"]

log = logging.getLogger(__name__)

SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
STARTING, RECOVERY, RUNNING = "STARTING", "RECOVERY", "RUNNING"
PENDING_CONTROLLED_SHUTDOWN = "PENDING_CONTROLLED_SHUTDOWN"
CONTROLLED_SHUTDOWN_POLL_MS = 50     # Kafka's first heartbeat after the shutdown began comes this soon
STARTING_HEARTBEAT_MS = 10           # Kafka's broker heartbeats this often until it caught up
# After a failed registration or heartbeat: 100 ms doubling up to broker.heartbeat.interval.ms,
# no jitter, so never past the interval. Not net/backoff.py's ExponentialBackoff: Kafka's
# BrokerLifecycleManager has no exponential backoff here (it waits the heartbeat interval after
# a failure), so there is no Kafka formula to mirror.
FIRST_BACKOFF_MS = 100
REQUEST_TIMEOUT_MS = 5000
_FATAL = {Errors.INCONSISTENT_CLUSTER_ID, Errors.INVALID_REGISTRATION, Errors.UNSUPPORTED_VERSION}

Send = Callable[[object, int], Awaitable[object]]


class RegistrationRefused(RuntimeError):
    """The active controller refused the registration for a reason retrying will not change."""


@dataclass(frozen=True)
class Registration:
    """What the broker registers: its id, cluster, incarnation, listeners (name, host, port,
    security protocol), supported features (name -> (min, max)), rack and log directory ids."""
    broker_id: int
    cluster_id: str
    incarnation_id: uuid.UUID
    listeners: tuple
    features: dict
    log_dirs: tuple
    rack: str | None = None
    previous_broker_epoch: int = -1      # what the last clean stop left in .kafka_cleanshutdown (KIP-966)

    def request(self) -> BrokerRegistrationRequest:
        return BrokerRegistrationRequest(
            broker_id=self.broker_id, cluster_id=self.cluster_id, incarnation_id=self.incarnation_id,
            listeners=[Listener(name=name, host=host, port=port, security_protocol=SECURITY_PROTOCOL_IDS[protocol])
                       for name, host, port, protocol in self.listeners],
            features=[Feature(name=name, min_supported_version=low, max_supported_version=high)
                      for name, (low, high) in sorted(self.features.items())],
            rack=self.rack, is_migrating_zk_broker=False, log_dirs=list(self.log_dirs),
            previous_broker_epoch=self.previous_broker_epoch)


class BrokerLifecycle:
    """Registration, then heartbeats, through ``send`` (the node's send-to-active-controller)."""

    def __init__(self, send: Send, *, registration: Registration, metadata_offset: Callable[[], int],
                 ready_to_unfence: Callable[[], bool], heartbeat_interval_ms: int = 2000,
                 on_state: Callable[[str], None] | None = None, offline_log_dirs: Callable[[], list] = list,
                 cordoned_log_dirs: Callable[[], list | None] = lambda: None):
        self.send = send
        self.registration = registration
        self.metadata_offset = metadata_offset
        self.ready_to_unfence = ready_to_unfence
        self.heartbeat_interval_ms = max(heartbeat_interval_ms, 1)
        self.on_state = on_state or (lambda state: None)
        self.offline_log_dirs = offline_log_dirs
        self.cordoned_log_dirs = cordoned_log_dirs
        self.state = STARTING
        self.broker_epoch = -1
        self.failures = 0
        self.unfenced = asyncio.Event()
        self._wake = asyncio.Event()

    def poke(self) -> None:
        """The metadata moved or the logs opened: heartbeat now if that may unfence us."""
        if self.state != RUNNING:
            self._wake.set()

    def heartbeat_soon(self) -> None:
        """A log directory failed or the cordoned ones changed: the controller hears of it with the
        next heartbeat, sent now."""
        self._wake.set()

    async def run(self) -> None:
        while self.broker_epoch < 0:
            await self._register_once()
        while True:
            delay_ms = await self._heartbeat_once()
            self._wake.clear()
            try:
                async with asyncio.timeout(delay_ms / 1000):
                    await self._wake.wait()
            except asyncio.TimeoutError:
                pass

    def _backoff_ms(self) -> int:
        return min(FIRST_BACKOFF_MS * 2 ** min(self.failures - 1, 16), max(self.heartbeat_interval_ms, FIRST_BACKOFF_MS))

    async def _call(self, request):
        """The controller's answer, or None after a failure (logged, backed off)."""
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_MS / 1000 + 1):
                response = await self.send(request, REQUEST_TIMEOUT_MS)
        except (NoLeader, NotLeader, TransportError, TimeoutError, OSError) as exc:
            return await self._failed(type(request).__name__, f"{type(exc).__name__}: {exc}")
        if response.error_code != Errors.NONE:
            name = Errors.for_code(response.error_code).name
            if response.error_code in _FATAL:
                raise RegistrationRefused(f"the active controller refused {type(request).__name__}: {name}")
            return await self._failed(type(request).__name__, name)
        self.failures = 0
        return response

    async def _failed(self, what: str, why: str):
        self.failures += 1
        log.info("broker %d: %s failed (%s); retrying after a backoff", self.registration.broker_id, what, why)
        self._wake.clear()           # a metadata change (a leader elected) cuts the backoff short
        try:
            async with asyncio.timeout(self._backoff_ms() / 1000):
                await self._wake.wait()
        except asyncio.TimeoutError:
            pass
        return None

    async def _register_once(self) -> None:
        response = await self._call(self.registration.request())
        if response is None:
            return
        self.broker_epoch = response.broker_epoch
        log.info("broker %d: registered with broker epoch %d (previous broker epoch %d)", self.registration.broker_id,
                 self.broker_epoch, self.registration.previous_broker_epoch)

    async def _heartbeat_once(self) -> int:
        """One heartbeat; how long to wait before the next."""
        ready = self.state != STARTING and self.ready_to_unfence()
        request = self._heartbeat(want_fence=not ready, want_shut_down=False)
        response = await self._call(request)
        if response is None:
            return 0
        if self.state == STARTING:
            if response.is_caught_up:
                self._enter(RECOVERY)
                return 0
            return STARTING_HEARTBEAT_MS
        if self.state == RECOVERY and not response.is_fenced:
            self._enter(RUNNING)
            self.unfenced.set()
        elif self.state == RECOVERY and not ready:
            return STARTING_HEARTBEAT_MS
        return self.heartbeat_interval_ms

    async def controlled_shutdown(self, timeout_ms: int = 5000) -> bool:
        """Kafka's controlled shutdown: heartbeats with wantShutDown until the active controller
        answers shouldShutDown (it has moved this broker's leadership and fenced it, so a restart
        registers at once instead of waiting for the session to expire); False when it did not
        answer so within ``timeout_ms``."""
        if self.broker_epoch < 0:
            return False
        self._enter(PENDING_CONTROLLED_SHUTDOWN)
        deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
        while asyncio.get_running_loop().time() < deadline:
            request = self._heartbeat(want_fence=False, want_shut_down=True)
            try:
                async with asyncio.timeout(max(deadline - asyncio.get_running_loop().time(), 0.01)):
                    response = await self.send(request, REQUEST_TIMEOUT_MS)
            except (NoLeader, NotLeader, TransportError, TimeoutError, OSError) as exc:
                log.info("broker %d: controlled shutdown heartbeat failed: %s", self.registration.broker_id, exc)
                return False
            if response.error_code == Errors.NONE and response.should_shut_down:
                log.info("broker %d: the controller has allowed us to shut down", self.registration.broker_id)
                return True
            await asyncio.sleep(CONTROLLED_SHUTDOWN_POLL_MS / 1000)
        return False

    def _heartbeat(self, *, want_fence: bool, want_shut_down: bool) -> BrokerHeartbeatRequest:
        cordoned = None if self.state == STARTING else self.cordoned_log_dirs()
        return BrokerHeartbeatRequest(broker_id=self.registration.broker_id, broker_epoch=self.broker_epoch,
                                      current_metadata_offset=self.metadata_offset(), want_fence=want_fence,
                                      want_shut_down=want_shut_down, offline_log_dirs=list(self.offline_log_dirs()),
                                      cordoned_log_dirs=None if cordoned is None else list(cordoned))

    def _enter(self, state: str) -> None:
        log.info("broker %d: %s -> %s", self.registration.broker_id, self.state, state)
        self.state = state
        self.on_state(state)
