"""One KRaft controller process: a ServerConfig turned into a running node.

    node = ControllerNode(load_server_config("controller.properties"))
    await node.start()          # listening, raft running
    ...
    await node.stop()           # graceful: a leader resigns first (EndQuorumEpoch)

What it assembles: the `__cluster_metadata-0` directory under metadata.log.dir as a
DiskLogStore, the RaftDriver over a RaftCore configured from the controller.quorum.* keys,
a NetworkClient for the raft RPCs it sends, a KafkaServer on each controller listener
answering the raft RPCs, the admin RPCs (DescribeQuorum, Add/Remove/UpdateRaftVoter,
UpdateFeatures) and, for ordinary Kafka clients, the metadata log as the read-only topic
`__cluster_metadata`; and the state machine on top, when a factory is given (the
StateMachine of kafkawire.raft.contract: `kafkawire server-start` gives the metadata
controller's, test-raft-server a workload; the node imports neither).

As Kafka does, the node refuses to start on a directory that `storage format` did not
prepare (no meta.properties, or one for another node), naming the file.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from typing import TypeVar

from kafkawire import feature_versions
from kafkawire.messages.describe_cluster_response import DescribeClusterBroker, DescribeClusterResponse
from kafkawire.metadata.acl_index import AclIndex
from kafkawire.metadata.features_answer import finalized_levels, set_features
from kafkawire.metadata.image import MetadataImage
from kafkawire.net.admin_authorization import authorize_admin_apis
from kafkawire.net.admission import AdmissionLimits, ConnectionQuotas, DynamicAdmissionLimits
from kafkawire.net.client_quotas import IpConnectionRates
from kafkawire.net.authentication import sasl_handlers
from kafkawire.net.authorizer import (CONTROLLER_API_OPERATIONS, StandardAuthorizer, authorizing_create_topics,
                                     authorizing_create_delegation_token, authorizing_handler,
                                     authorizing_list_offsets, authorizing_metadata)
from kafkawire.net import background
from kafkawire.net.client import NetworkClient
from kafkawire.net.config import ConfigError, ServerConfig
from kafkawire.net.envelope import ENVELOPE, envelope_handler
from kafkawire.net.install_aware_log import InstallAwareLog
from kafkawire.net.metadata_topic import MetadataTopic, NodeEndpoint
from kafkawire.net.metrics_http import EndpointStartError, start_metrics_endpoint
from kafkawire.net.request_metrics import RequestMetrics
from kafkawire.net.sasl import SCRAM_MECHANISM_TYPES
from kafkawire.net.security import client_options
from kafkawire.net.server import KafkaServer
from kafkawire.net.token_credentials import TokenCredentials
from kafkawire.protocol.handler import ApiHandler
from kafkawire.storage.state_files import MetaProperties, StateFileError, read_meta_properties, uuid_to_kafka
from kafkawire.raft.config import RaftConfig
from kafkawire.raft.contract import NodeFailed, StateMachine, StateMachineFactory, StateMachineFatal
from kafkawire.raft.types import Endpoints
from kafkawire.raft.voters import VoterSet

from .disk_store import DiskLogStore
from .gc_pauses import log_long_pauses, stop_logging_long_pauses
from .driver import RaftDriver
from .metrics import RaftMetrics
from .prometheus import MetricsEndpoint, node_families

log = logging.getLogger(__name__)

METADATA_PARTITION_DIR = "__cluster_metadata-0"
METRICS_FILE = "kafkawire-raft-metrics.json"
# The RPCs the raft core answers itself (Fetch is shared with consumers, see _fetch).
RAFT_APIS = {52: "Vote", 53: "BeginQuorumEpoch", 54: "EndQuorumEpoch", 55: "DescribeQuorum",
             57: "UpdateFeatures", 59: "FetchSnapshot", 80: "AddRaftVoter", 81: "RemoveRaftVoter",
             82: "UpdateRaftVoter"}
FETCH = 1
DESCRIBE_CLUSTER = 60
CREATE_TOPICS = 19
CREATE_DELEGATION_TOKEN = 38
METADATA, LIST_OFFSETS = 3, 2
_NO_ACLS = AclIndex()            # what the authorizer reads while no state machine keeps an image
CONTROLLER_ENDPOINT_TYPE = 2     # DescribeClusterRequest.EndpointType: 1 brokers, 2 controllers (KIP-919)


class NodeStartError(RuntimeError):
    """The node cannot start: the reason names the file or key."""


def raft_config_from(server: ServerConfig, directory_id, cluster_id: str) -> RaftConfig:
    listener = server.controller_listener_names[0]
    endpoints = Endpoints(tuple((e.listener_name, e.host or "localhost", e.port)
                                for e in server.controller_endpoints))
    static = None
    if server.controller_quorum_voters:
        static = VoterSet.static({v.node_id: Endpoints(((listener, v.host, v.port),))
                                  for v in server.controller_quorum_voters})
    return RaftConfig(
        node_id=server.node_id, directory_id=directory_id, cluster_id=cluster_id, listener=listener,
        endpoints=endpoints, static_voters=static,
        bootstrap_servers=tuple(server.controller_quorum_bootstrap_servers),
        election_timeout_ms=server.controller_quorum_election_timeout_ms,
        election_backoff_max_ms=server.controller_quorum_election_backoff_max_ms,
        fetch_timeout_ms=server.controller_quorum_fetch_timeout_ms,
        request_timeout_ms=server.controller_quorum_request_timeout_ms,
        retry_backoff_ms=server.controller_quorum_retry_backoff_ms,
        append_linger_ms=server.controller_quorum_append_linger_ms,
        append_queue_max_ms=server.kafkawire_quorum_append_queue_max_ms,
        auto_join=server.controller_quorum_auto_join_enable)


def controller_client_options(config: ServerConfig) -> dict:
    """NetworkClient options for the node's connections to controllers: TLS and SASL as the first
    controller listener's security protocol and sasl.mechanism.controller.protocol say."""
    return client_options(config.raft_client_security())


# KafkaRaftManager builds its NetworkClient with these fixed reconnect backoffs, whatever the
# configuration says: a peer that starts late is retried at least every 0.5 s (+20% jitter).
RAFT_RECONNECT_BACKOFF_MS = 50
RAFT_RECONNECT_BACKOFF_MAX_MS = 500


def raft_network_client(config: ServerConfig, client_options: dict) -> NetworkClient:
    """The client for the raft RPCs this node sends, set up as Kafka's raft client is."""
    return NetworkClient(client_id=f"raft-client-{config.node_id}",
                         request_timeout_ms=config.controller_quorum_request_timeout_ms,
                         reconnect_backoff_ms=RAFT_RECONNECT_BACKOFF_MS,
                         reconnect_backoff_max_ms=RAFT_RECONNECT_BACKOFF_MAX_MS,
                         max_response_bytes=max(config.socket_request_max_bytes, 8 * 1024 * 1024 + 1024),
                         **client_options)


def read_node_meta(config: ServerConfig) -> MetaProperties:
    """metadata.log.dir's meta.properties, checked as a KRaft node needs it (version 1, this
    node.id, a cluster.id); NodeStartError naming the file otherwise."""
    path = os.path.join(config.metadata_log_dir, "meta.properties")
    if not os.path.exists(path):
        raise NodeStartError(f"no meta.properties in {config.metadata_log_dir}: format the directory first "
                             f"(kafkawire storage format --config ... --cluster-id ...)")
    try:
        meta = read_meta_properties(path)
    except (StateFileError, OSError) as exc:
        raise NodeStartError(f"{path}: {exc}") from None
    if meta.version != 1:
        raise NodeStartError(f"{path}: version {meta.version}; a KRaft node needs version 1")
    if meta.node_id != config.node_id:
        raise NodeStartError(f"{path}: node.id {meta.node_id} does not match node.id {config.node_id} "
                             "in the configuration")
    if meta.cluster_id is None:       # read_meta_properties already refuses a version 1 without it
        raise NodeStartError(f"meta.properties in {config.metadata_log_dir} has no cluster.id")
    return meta


def scram_credential(image: MetadataImage | None, mechanism: str, user: str):
    """The committed SCRAM credential of ``user`` (UserScramCredentialRecord) in ``image``, as
    (salt, stored key, server key, iterations) for SASL/SCRAM; None when there is none."""
    mechanism_type = SCRAM_MECHANISM_TYPES.get(mechanism)
    if image is None or mechanism_type is None:
        return None
    credential = image.scram.get(mechanism_type, {}).get(user)
    if credential is None:
        return None
    return bytes(credential.salt), bytes(credential.stored_key), bytes(credential.server_key), \
        credential.iterations


_Part = TypeVar("_Part")


class ControllerNode:
    """A KRaft controller process (``kafkawire server-start``): the raft core on Kafka's on-disk log,
    its listeners, the raft client and a state machine (the metadata controller by default), from
    a ServerConfig. Raises NodeStartError for a config it cannot run (not a controller, ...).
    """
    def __init__(self, config: ServerConfig, *, state_machine_factory: StateMachineFactory | None = None,
                 fsync: bool = True,
                 metrics_interval_ms: int = 1000, max_versions: dict[int, int] | None = None):
        if not config.is_controller:
            raise NodeStartError(f"process.roles={','.join(config.process_roles)}: kafkawire runs controllers "
                                 "only (process.roles=controller)")
        self.config = config
        self.state_machine_factory = state_machine_factory
        self.fsync = fsync
        self.metrics_interval_ms = metrics_interval_ms
        # API key -> highest version to advertise (for peers that know only older versions).
        self.max_versions = dict(max_versions or {})
        self.driver: RaftDriver | None = None
        self.servers: list[KafkaServer] = []
        self.controller_ssl_reload = None      # the controller listeners' stores watched (kafkawire.tools.server_start)
        self.metric_reporters_reload = None    # metric.reporters changed dynamically (kafkawire.tools.metric_reporters)
        self.state_machine: StateMachine | None = None
        self.topic: MetadataTopic | None = None
        self._tasks: list[asyncio.Task] = []
        self.meta: MetaProperties | None = None
        self.cluster_id: str | None = None       # meta.properties' cluster.id, from start on
        self._loaded = False
        self.authorizer: StandardAuthorizer | None = None     # made at start (authorizer.class.name)
        self.metrics_endpoint: MetricsEndpoint | None = None   # metric.reporters=...PrometheusReporter
        self.extra_metric_families: list = []    # more families for the endpoint (a combined node's broker's)
        # kafka.network RequestMetrics of the controller listeners' requests (ControllerServer's
        # RequestChannel); a combined node's broker counts its own listeners' in the same one
        self.request_metrics = RequestMetrics()
        self._gc_watch: int | None = None        # kafkawire.raft.node.gc_pauses, from start to stop

    def _started(self, part: _Part | None) -> _Part:
        """A part made by start() (driver, topic, meta.properties), or a clear error before it."""
        if part is None:
            raise RuntimeError(f"node {self.config.node_id} is not started")
        return part

    # --- start ---------------------------------------------------------------------------------------
    def _read_meta(self) -> MetaProperties:
        return read_node_meta(self.config)

    async def start(self) -> None:
        c = self.config
        if self._gc_watch is None:
            self._gc_watch = log_long_pauses(c.kafkawire_gc_freeze_after_ms)
        self.meta = meta = self._read_meta()
        self.cluster_id = cluster_id = meta.cluster_id
        assert cluster_id is not None, "read_node_meta refuses a meta.properties without cluster.id"
        raft_config = raft_config_from(c, meta.directory_id, cluster_id)
        store = DiskLogStore(os.path.join(c.metadata_log_dir, METADATA_PARTITION_DIR),
                             segment_bytes=c.metadata_log_segment_bytes, fsync=self.fsync,
                             segment_ms=c.metadata_log_segment_ms)
        try:
            client_options = controller_client_options(c)
            settings = c.authorizer_settings()
        except ConfigError as exc:
            raise NodeStartError(str(exc)) from None
        if settings is not None:
            self.authorizer = StandardAuthorizer(settings, self._acls, self._metadata_loaded)
        client = raft_network_client(c, client_options)
        self.driver = driver = RaftDriver(
            raft_config, store, client,
            snapshot_min_bytes=c.metadata_log_max_record_bytes_between_snapshots,
            snapshot_interval_ms=c.metadata_log_max_snapshot_interval_ms,
            retention_bytes=c.metadata_max_retention_bytes, retention_ms=c.metadata_max_retention_ms)
        driver.metrics = RaftMetrics(c.node_id, samples=c.metrics_num_samples, window_ms=c.metrics_sample_window_ms)
        if self.state_machine_factory is not None:
            self.state_machine = self.state_machine_factory(driver, c, meta)
            driver.state_machine = self.state_machine
        advertised = raft_config.endpoints.address(raft_config.listener) or ("127.0.0.1", 0)
        # Clients read the log through the install's view: a follower's install cuts it on the
        # driver's disk thread while the loop serves them.
        self.topic = MetadataTopic(InstallAwareLog(store.log, store.installing_at), cluster_id=cluster_id,
                                   node=NodeEndpoint(c.node_id, advertised[0], advertised[1]),
                                   high_watermark=driver.high_watermark,
                                   leader_epoch=lambda: max(driver.running.epoch, 0),
                                   active_controller=self._active_controller)
        driver.hw_listeners.append(self.topic.high_watermark_advanced)
        # one count across the listeners, as Kafka's; the ip connection_creation_rate quotas of its image
        # and the connection limits set dynamically for this node or every node
        quotas = ConnectionQuotas(DynamicAdmissionLimits(self._image, c.node_id, self._admission_limits()),
                                  ip_rates=IpConnectionRates(self._image))
        for name in c.controller_listener_names:
            endpoint = c.listener(name)
            if endpoint is None:
                raise NodeStartError(f"controller.listener.names has {name}, which is not in listeners")
            try:
                server = self._make_server(endpoint, name, quotas)
            except ConfigError as exc:
                raise NodeStartError(f"listener {endpoint}: {exc}") from None
            server.request_metrics = self.request_metrics      # one for all listeners, as Kafka's
            self._register(server)
            try:
                await server.bind()
            except OSError as exc:
                raise NodeStartError(f"listener {endpoint}: cannot bind: {exc.strerror or exc}") from None
            self.servers.append(server)
        await self._start_metrics_endpoint()
        try:
            driver.start()
        except StateMachineFatal as exc:       # the latest snapshot holds what the state machine refuses
            raise NodeStartError(str(exc)) from None
        for server in self.servers:
            await server.start()
        if self.state_machine is not None:
            self._tasks.append(background.start(self.state_machine.run(), f"node {c.node_id}: the state machine",
                                                logger=log, reported=(NodeFailed,)))
        self._tasks.append(background.start(self._publish_metrics(), f"node {c.node_id}: publishing metrics",
                                            logger=log))
        log.info("node %d (cluster %s, directory %s) listening on %s", c.node_id, cluster_id,
                 "none" if meta.directory_id is None else uuid_to_kafka(meta.directory_id), ", ".join(f"{s.listener_name}://{s.host}:{s.port}" for s in self.servers))

    async def _start_metrics_endpoint(self) -> None:
        """The Prometheus endpoint, when metric.reporters names kafkawire.metrics.PrometheusReporter."""
        if self.config.prometheus_listener is None:
            return
        try:
            await self.open_metrics_endpoint()
        except EndpointStartError as exc:
            raise NodeStartError(str(exc)) from None

    async def open_metrics_endpoint(self) -> None:
        """Start the Prometheus endpoint on kafkawire.metrics.prometheus.listener (at start, or when
        a dynamic metric.reporters adds the reporter); EndpointStartError when it cannot."""
        c = self.config
        if self.metrics_endpoint is not None:
            return
        listener = c.kafkawire_metrics_prometheus_listener
        families = node_families(self._started(self.driver), self.state_machine, c, self.extra_metric_families,
                                 requests=self.request_metrics)
        self.metrics_endpoint = endpoint = await start_metrics_endpoint(listener, families)
        log.info("node %d: metrics on http://%s:%d/metrics", c.node_id, listener[0] or "0.0.0.0", endpoint.port)

    async def close_metrics_endpoint(self) -> None:
        """Stop the Prometheus endpoint (a dynamic metric.reporters removed the reporter)."""
        endpoint, self.metrics_endpoint = self.metrics_endpoint, None
        if endpoint is not None:
            await endpoint.close()
            log.info("node %d: metrics endpoint closed", self.config.node_id)

    def _admission_limits(self) -> AdmissionLimits:
        c = self.config
        return AdmissionLimits.of(c)

    def _make_server(self, endpoint, name: str, quotas: ConnectionQuotas) -> KafkaServer:
        c = self.config
        return KafkaServer({}, host=endpoint.host or "0.0.0.0", port=endpoint.port, listener_name=name,
                           security=c.security_of(name), scram_lookup=self._scram_credential,
                           # Delegation token logins (SCRAM tokenauth=true), from the committed image, as
                           # Kafka's controller fills its token cache (DelegationTokenPublisher).
                           token_lookup=TokenCredentials(c.delegation_token_secret_key, self._delegation_tokens),
                           max_request_bytes=c.socket_request_max_bytes,
                           connections_max_idle_ms=c.connections_max_idle_ms,
                           failed_authentication_delay_ms=c.connection_failed_authentication_delay_ms,
                           admission=quotas.limits, connection_quotas=quotas)

    def _register(self, server: KafkaServer) -> None:
        driver, topic = self._started(self.driver), self._started(self.topic)
        raft = ApiHandler(driver.handle_request)
        for key in RAFT_APIS:
            server.register(key, raft)
        for key, handler in sasl_handlers().items():       # Kafka's controller advertises them everywhere
            server.register(key, handler)
        for key, handler in topic.handlers().items():
            server.register(key, handler)
        if self.state_machine is not None:
            for key, handler in self.state_machine.handlers().items():
                server.register(key, handler)
        if self.state_machine is not None:
            # Forwarded admin requests, run through whatever is registered (and authorizes) then.
            server.register(ENVELOPE, ApiHandler(envelope_handler(server._registry.get)))
        consumer_fetch = topic.handlers()[FETCH]

        async def fetch(ctx, request):
            # A replica sets its id (ReplicaState from v15, ReplicaId before); a consumer sends -1.
            replica = request.replica_state.replica_id if ctx.api_version >= 15 else request.replica_id
            if replica >= 0:
                return await driver.handle_request(ctx, request)
            return await consumer_fetch.handle(ctx, request)

        server.register(FETCH, ApiHandler(fetch, min_version=consumer_fetch.min_version))
        broker_view = topic.handlers()[DESCRIBE_CLUSTER]

        async def describe_cluster(ctx, request):
            if request.endpoint_type != CONTROLLER_ENDPOINT_TYPE:
                return await broker_view.handle(ctx, request)
            return self._describe_controllers(request, ctx.listener_name)

        server.register(DESCRIBE_CLUSTER, describe_cluster)
        for key, high in self.max_versions.items():
            registered = server._registry.get(key)
            if registered is not None:
                server.register(key, dataclasses.replace(registered.handler, max_version=high))
        if self.authorizer is not None:
            self._authorize_handlers(server, self.authorizer)
        server.api_versions_features = self._api_versions_features

    def _authorize_handlers(self, server: KafkaServer, authorizer: StandardAuthorizer) -> None:
        """Put Kafka's ControllerApis checks in front of the handlers (authorizer.class.name)."""
        for key, operation in CONTROLLER_API_OPERATIONS.items():
            registered = server._registry.get(key)
            if registered is not None:
                server.register(key, authorizing_handler(key, registered.handler, authorizer, operation))
        create_token = server._registry.get(CREATE_DELEGATION_TOKEN)
        if create_token is not None:
            server.register(CREATE_DELEGATION_TOKEN, authorizing_create_delegation_token(create_token.handler, authorizer))
        create_topics = server._registry.get(CREATE_TOPICS)
        if create_topics is not None:
            server.register(CREATE_TOPICS, authorizing_create_topics(create_topics.handler, authorizer))
        authorize_admin_apis(server, authorizer, self._image)   # per topic or resource
        # The read-only __cluster_metadata topic, beyond Kafka's controller: a broker's topic rules.
        for key, wrap in ((METADATA, authorizing_metadata), (LIST_OFFSETS, authorizing_list_offsets)):
            registered = server._registry.get(key)
            if registered is not None:
                server.register(key, wrap(registered.handler, authorizer))

    def _image(self) -> MetadataImage | None:
        """The state machine's committed metadata, if it keeps any."""
        return None if self.state_machine is None else self.state_machine.image

    def _acls(self) -> AclIndex:
        """The committed image's ACLs, indexed as the image keeps them (no copy per decision)."""
        image = self._image()
        return _NO_ACLS if image is None else image.acl_index

    def _metadata_loaded(self) -> bool:
        """Whether the committed metadata has been applied once up to the high watermark (Kafka's
        authorizer completes its initial load then; until then only super users are served)."""
        if not self._loaded:
            driver = self._started(self.driver)
            high_watermark = driver.high_watermark()
            self._loaded = high_watermark > 0 and driver.applied_offset >= high_watermark
        return self._loaded

    def _active_controller(self) -> NodeEndpoint | None:
        """The leader as clients of this listener reach it; None while no leader is known (or
        its endpoint on this listener is not)."""
        driver = self._started(self.driver)
        leader = driver.leader().leader_id
        if leader is None:
            return None
        if leader == self.config.node_id:
            return self._started(self.topic).node
        voter = next((v for v in driver.running.voters() if v.key.id == leader), None)
        address = None if voter is None else voter.endpoints.address(driver.config.listener)
        return None if address is None else NodeEndpoint(leader, address[0], address[1])

    def _delegation_tokens(self) -> dict:
        image = self._image()
        return {} if image is None else image.delegation_tokens

    def _scram_credential(self, mechanism: str, user: str):
        """The committed SCRAM credential of ``user`` (UserScramCredentialRecord), for SASL/SCRAM."""
        return scram_credential(self._image(), mechanism, user)

    def _describe_controllers(self, request, listener_name: str):
        """KIP-919: an admin client bootstrapping from controllers learns the controllers' endpoints
        on this listener and which one is active (ControllerApis.handleDescribeCluster). As in
        Kafka these are the registered controllers (ControllerRegistrationRecords: observers
        too, a voter not yet registered not); without the metadata state machine, the voters."""
        driver = self._started(self.driver)
        image = self._image()
        if image is not None:
            endpoints = {i: image.controllers[i].listeners.get(listener_name) for i in sorted(image.controllers)}
            controllers = [DescribeClusterBroker(broker_id=i, host=e.host, port=e.port)
                           for i, e in endpoints.items() if e is not None]
        else:
            controllers = []
            for voter in sorted(driver.running.voters(), key=lambda v: v.key.id):
                address = voter.endpoints.address(driver.config.listener)
                if address is not None:
                    controllers.append(DescribeClusterBroker(broker_id=voter.key.id, host=address[0],
                                                             port=address[1]))
        leader = driver.leader().leader_id
        return DescribeClusterResponse(endpoint_type=CONTROLLER_ENDPOINT_TYPE, cluster_id=self._started(self.cluster_id),
                                       controller_id=-1 if leader is None else leader, brokers=controllers,
                                       cluster_authorized_operations=-2147483648)

    def _api_versions_features(self, response) -> None:
        """Supported kraft.version range, and the finalized level once the log says (KIP-853);
        with the committed metadata, the controller's other features and their levels."""
        driver = self._started(self.driver)
        config = driver.config
        supported = {feature_versions.KRAFT_VERSION: (config.kraft_version_min, config.kraft_version_max)}
        if driver.core is None:
            set_features(response, supported, {}, -1)
            return
        machine = self.state_machine
        image = self._image() if machine is not None else None
        if machine is not None and image is not None:   # the committed metadata: metadata.version, the others
            for name, versions in machine.supported_features.items():
                supported.setdefault(name, versions)
        set_features(response, supported, finalized_levels(image, driver.core.kraft_version()),
                     max(driver.high_watermark() - 1, -1))

    # --- running -----------------------------------------------------------------------------------------
    async def _publish_metrics(self) -> None:
        while True:
            await asyncio.sleep(self.metrics_interval_ms / 1000)
            write_raft_metrics(self._started(self.driver), self.config.metadata_log_dir)

    @property
    def port(self) -> int:
        return self.servers[0].port

    async def stop(self, *, graceful: bool = True, timeout_ms: int = 5000) -> None:
        driver = self.driver
        if driver is not None and graceful and driver.failure is None and driver.core is not None:
            driver.begin_shutdown(timeout_ms)
            try:
                async with asyncio.timeout(timeout_ms / 1000 + 1):
                    await driver.shutdown_complete.wait()
            except asyncio.TimeoutError:
                log.warning("node %d: graceful shutdown did not finish in %d ms", self.config.node_id, timeout_ms)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self.servers:
            await server.close(timeout_ms=1000)
        await self.close_metrics_endpoint()
        if driver is not None:
            await driver.client.close()
            await driver.close()
            write_raft_metrics(driver, self.config.metadata_log_dir, warn=False)
        if self._gc_watch is not None:
            stop_logging_long_pauses(self._gc_watch)
            self._gc_watch = None
        log.info("node %d stopped", self.config.node_id)


def write_raft_metrics(driver, metadata_log_dir: str, *, warn: bool = True) -> None:
    """The node's raft metrics file (METRICS_FILE in its metadata log directory), as a controller
    or a broker-only node writes it each metrics interval and at stop; a failed write is a
    WARNING (``warn``), never the node's end."""
    path = os.path.join(metadata_log_dir, METRICS_FILE)
    try:
        driver.metrics.write(path)
    except OSError as exc:
        if warn:
            log.warning("cannot write %s: %s", path, exc)


__all__ = ["ControllerNode", "write_raft_metrics", "NodeStartError", "raft_config_from", "read_node_meta", "scram_credential", "ConfigError"]
