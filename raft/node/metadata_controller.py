"""The state machine a `server-start` node runs on raft: a small metadata controller that
writes the records Kafka's QuorumController writes for the same events, so the log that
`dump-log`, the metadata shell and Spark read is a realistic `__cluster_metadata`.

What it does, and the Kafka behaviour each step copies:

* Activation (ActivationRecordsGenerator): a new active controller whose committed metadata
  has no metadata.version appends the bootstrap records of `bootstrap.checkpoint` (the
  FeatureLevelRecords `storage format` wrote), in one atomic batch.
* Controller registration (ControllerRegistrationManager / ClusterControlManager): every node
  sends ControllerRegistration to the active controller once it knows one and its current
  registration (this process's incarnation id) is not in the committed metadata; the active
  controller appends RegisterControllerRecord and answers. Failed attempts are retried.
* Brokers: BrokerRegistration appends RegisterBrokerRecord (fenced, epoch = the record's
  offset, as Kafka's broker epochs are); BrokerHeartbeat with wantFence=false from a fenced
  broker whose metadata offset reached the registration appends UnfenceBrokerRecord.
* NoOpRecord every metadata.max.idle.interval.ms (500 ms) while active.
* Every other node answers the controller RPCs with NOT_CONTROLLER.

State is the committed metadata replayed into kafkawire.metadata's MetadataImage (the same
image kafka-metadata-shell shows). Topics (CreateTopics) are not served: there is no schema
for them in schemas/ yet.
"""
from __future__ import annotations

import asyncio
import logging
import os
import uuid

from kafkawire import messages
from kafkawire.metadata.frame import decode_metadata_record, encode_metadata_record
from kafkawire.metadata.image import MetadataImage
from kafkawire.protocol.error_codes import Errors
from kafkawire.storage.snapshot import BOOTSTRAP_FILE_NAME, SnapshotReader

from .errors import NotLeader

log = logging.getLogger("kafkawire.controller")

IDLE_INTERVAL_MS = 500             # metadata.max.idle.interval.ms
REGISTRATION_RETRY_MS = 1000
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
METADATA_VERSION = "metadata.version"
REGISTER_BROKER_RECORD_VERSION = 3   # Kafka 3.7-IV2 through 4.1: log dirs, no cordoned dirs


def _frame(name: str, version: int = 0, **fields) -> bytes:
    return encode_metadata_record(messages.by_name(name)(**fields), version)


def read_bootstrap_records(metadata_log_dir: str) -> list[bytes]:
    """The data records of `bootstrap.checkpoint`, or none when the file is absent."""
    path = os.path.join(metadata_log_dir, BOOTSTRAP_FILE_NAME)
    if not os.path.exists(path):
        return []
    return [bytes(r.value) for r in SnapshotReader(path).records()]


class MetadataController:
    def __init__(self, raft, *, cluster_id: str, listeners, supported_features: dict[str, tuple[int, int]],
                 bootstrap_records: list[bytes], idle_interval_ms: int = IDLE_INTERVAL_MS):
        self.raft = raft
        self.node_id = raft.node_id
        self.cluster_id = cluster_id
        self.listeners = list(listeners)                # (name, host, port, security protocol name)
        self.supported_features = dict(supported_features)
        self.bootstrap_records = list(bootstrap_records)
        self.idle_interval_ms = idle_interval_ms
        self.incarnation_id = uuid.uuid4()
        self.image = MetadataImage()
        self.applied_offset = -1
        # Record frames that rebuild the image, by what they describe (the snapshot's content).
        self._live: dict[tuple, bytes] = {}
        self._other: list[bytes] = []                   # records of kinds this controller does not compact
        self._leader_changed = asyncio.Event()
        self._activating = False

    # --- the raft side --------------------------------------------------------------------------
    def on_committed(self, base_offset: int, epoch: int, append_time_ms: int, records: list[bytes]) -> None:
        for i, value in enumerate(records):
            record = decode_metadata_record(value)
            self.image.apply(record.message)
            self._remember(record, value)
            self.applied_offset = base_offset + i

    def on_snapshot_loaded(self, snapshot_id, records: list[bytes]) -> None:
        self.image = MetadataImage()
        self._live, self._other = {}, []
        for value in records:
            record = decode_metadata_record(value)
            self.image.apply(record.message)
            self._remember(record, value)
        self.applied_offset = snapshot_id.offset - 1

    def on_leader_change(self, leader_id, epoch: int) -> None:
        self._leader_changed.set()

    def snapshot_records(self) -> list[bytes]:
        order = {"feature": 0, "controller": 1, "broker": 2, "broker_state": 3}
        live = sorted(self._live.items(), key=lambda kv: (order[kv[0][0]], kv[0][1:]))
        return [value for _, value in live] + list(self._other)

    def _remember(self, record, value: bytes) -> None:
        m = record.message
        name = type(m).NAME
        if name == "NoOpRecord":
            return
        if name == "FeatureLevelRecord":
            self._live[("feature", m.name)] = value
        elif name == "RegisterControllerRecord":
            self._live[("controller", m.controller_id)] = value
        elif name == "RegisterBrokerRecord":
            self._live[("broker", m.broker_id)] = value
            self._live.pop(("broker_state", m.broker_id), None)
        elif name in ("UnfenceBrokerRecord", "FenceBrokerRecord"):
            self._live[("broker_state", m.id)] = value
        else:
            self._other.append(value)

    # --- requests (KafkaServer handlers) ---------------------------------------------------------------
    def handlers(self) -> dict:
        return {70: self._controller_registration, 62: self._broker_registration, 63: self._broker_heartbeat}

    async def _append(self, records: list[bytes]) -> int:
        return await self.raft.append(records)

    async def _controller_registration(self, ctx, request):
        response = messages.by_name("ControllerRegistrationResponse")
        if not self.raft.is_leader():
            return response(error_code=int(Errors.NOT_CONTROLLER))
        record = _frame("RegisterControllerRecord", controller_id=request.controller_id,
                        incarnation_id=request.incarnation_id, zk_migration_ready=request.zk_migration_ready,
                        end_points=[_endpoint("RegisterControllerRecord", "ControllerEndpoint", l)
                                    for l in request.listeners],
                        features=[_feature("RegisterControllerRecord", "ControllerFeature", f)
                                  for f in request.features])
        try:
            await self._append([record])
        except NotLeader as exc:
            return response(error_code=int(Errors.NOT_CONTROLLER), error_message=str(exc))
        log.info("registered controller %d (incarnation %s)", request.controller_id, request.incarnation_id)
        return response()

    async def _broker_registration(self, ctx, request):
        response = messages.by_name("BrokerRegistrationResponse")
        if not self.raft.is_leader():
            return response(error_code=int(Errors.NOT_CONTROLLER))
        if request.cluster_id != self.cluster_id:
            return response(error_code=int(Errors.INCONSISTENT_CLUSTER_ID))
        if self.image.metadata_version is None:
            return response(error_code=int(Errors.NOT_CONTROLLER))   # not activated yet: retriable
        # Kafka's broker epoch is the offset of the registration record: the next offset, since
        # nothing else is proposed between here and the append (no await in between).
        epoch = self.raft.next_offset()
        record = encode_metadata_record(messages.by_name("RegisterBrokerRecord")(
            broker_id=request.broker_id, incarnation_id=request.incarnation_id, broker_epoch=epoch,
            end_points=[_endpoint("RegisterBrokerRecord", "BrokerEndpoint", l) for l in request.listeners],
            features=[_feature("RegisterBrokerRecord", "BrokerFeature", f) for f in request.features],
            rack=request.rack, fenced=True, log_dirs=list(getattr(request, "log_dirs", []) or [])),
            REGISTER_BROKER_RECORD_VERSION)
        try:
            await self._append([record])
        except NotLeader:
            return response(error_code=int(Errors.NOT_CONTROLLER))
        log.info("registered broker %d with epoch %d", request.broker_id, epoch)
        return response(broker_epoch=epoch)

    async def _broker_heartbeat(self, ctx, request):
        response = messages.by_name("BrokerHeartbeatResponse")
        if not self.raft.is_leader():
            return response(error_code=int(Errors.NOT_CONTROLLER))
        broker = self.image.brokers.get(request.broker_id)
        if broker is None or broker.epoch != request.broker_epoch:
            return response(error_code=int(Errors.STALE_BROKER_EPOCH))
        caught_up = request.current_metadata_offset >= broker.epoch
        fenced = broker.fenced
        if fenced and caught_up and not request.want_fence:
            try:
                await self._append([_frame("UnfenceBrokerRecord", id=broker.id, epoch=broker.epoch)])
                fenced = False
            except NotLeader:
                return response(error_code=int(Errors.NOT_CONTROLLER))
        elif not fenced and request.want_fence:
            try:
                await self._append([_frame("FenceBrokerRecord", id=broker.id, epoch=broker.epoch)])
                fenced = True
            except NotLeader:
                return response(error_code=int(Errors.NOT_CONTROLLER))
        return response(is_caught_up=caught_up, is_fenced=fenced, should_shut_down=request.want_shut_down)

    # --- the background work ------------------------------------------------------------------------
    async def run(self) -> None:
        await asyncio.gather(self._keep_registered(), self._while_active())

    def _registered(self) -> bool:
        mine = self.image.controllers.get(self.node_id)
        return mine is not None and mine.incarnation_id == self.incarnation_id

    async def _keep_registered(self) -> None:
        request_cls = messages.by_name("ControllerRegistrationRequest")
        while True:
            if self._registered() or self.raft.leader().leader_id is None:
                await asyncio.sleep(REGISTRATION_RETRY_MS / 1000)
                continue
            request = request_cls(
                controller_id=self.node_id, incarnation_id=self.incarnation_id, zk_migration_ready=False,
                listeners=[_request_listener(name, host, port, protocol) for name, host, port, protocol in self.listeners],
                features=[_request_feature(name, low, high) for name, (low, high) in sorted(self.supported_features.items())])
            try:
                response = await self.raft.send_to_leader(request)
                if response.error_code != Errors.NONE:
                    log.info("controller registration: %s", Errors.for_code(response.error_code).name)
            except asyncio.CancelledError:
                raise
            except Exception as exc:        # NoLeader or a transport error: the leader may be moving
                log.debug("controller registration failed: %s", exc)
            await asyncio.sleep(REGISTRATION_RETRY_MS / 1000)

    async def _while_active(self) -> None:
        while True:
            if not self.raft.is_leader():
                self._leader_changed.clear()
                await self._leader_changed.wait()
                continue
            try:
                if self.image.metadata_version is None and self.bootstrap_records:
                    await self._append(self.bootstrap_records)
                    log.info("activated: wrote %d bootstrap records", len(self.bootstrap_records))
                else:
                    await self._append([_frame("NoOpRecord")])
            except NotLeader:
                continue
            await asyncio.sleep(self.idle_interval_ms / 1000)


def _endpoint(record: str, struct: str, listener):
    cls = getattr(__import__(messages.by_name(record).__module__, fromlist=[struct]), struct)
    return cls(name=listener.name, host=listener.host, port=listener.port, security_protocol=listener.security_protocol)


def _feature(record: str, struct: str, feature):
    cls = getattr(__import__(messages.by_name(record).__module__, fromlist=[struct]), struct)
    return cls(name=feature.name, min_supported_version=feature.min_supported_version,
               max_supported_version=feature.max_supported_version)


def _request_listener(name, host, port, protocol):
    from kafkawire.messages.controller_registration_request import Listener
    return Listener(name=name, host=host, port=port, security_protocol=SECURITY_PROTOCOLS.get(protocol, 0))


def _request_feature(name, low, high):
    from kafkawire.messages.controller_registration_request import Feature
    return Feature(name=name, min_supported_version=low, max_supported_version=high)


def supported_features() -> dict[str, tuple[int, int]]:
    """What this controller registers as supported: metadata.version from 3.3-IV3 (the first
    KRaft production level) to the latest we format with, kraft.version 0-1, and the other
    features up to their level in that release."""
    from tools.storage import LATEST_PRODUCTION, default_feature_levels, metadata_version
    _, latest = metadata_version(LATEST_PRODUCTION)
    features = {METADATA_VERSION: (7, latest), "kraft.version": (0, 1)}
    for name, level in default_feature_levels(latest).items():
        features.setdefault(name, (0, level))
    return features


def controller_factory(driver, server_config, meta) -> MetadataController:
    listeners = [(e.listener_name, e.host or "localhost", e.port, e.security_protocol)
                 for e in server_config.controller_endpoints]
    return MetadataController(driver, cluster_id=meta.cluster_id, listeners=listeners,
                              supported_features=supported_features(),
                              bootstrap_records=read_bootstrap_records(server_config.metadata_log_dir))
