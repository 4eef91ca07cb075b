"""The broker role of a combined node (``process.roles=broker,controller``): its listeners, its
registration with the quorum, and the partitions it leads.

    broker = Broker(config, cluster_id=..., directory_id=meta.directory_id, image=lambda: published.image,
                    metadata_offset=lambda: published.offset,
                    send_to_controller=raft.send_to_leader, supported_features={...})
    await broker.start()          # registering; the listeners serve once it is unfenced (``serving``)
    broker.on_metadata()          # after each publish of the committed image: leadership, logs, heartbeats
    await broker.stop()

What it reads of the node: the committed metadata image (``image()``: in a combined node the
controller's committed image as last published, kafkawire.broker.metadata_publisher, which
Kafka's broker would load from the same raft log; never the records the active controller
applied ahead of their commit), the offset of its last record (``metadata_offset()``),
a way to send a request to the active controller (the admin requests are forwarded there,
kafkawire.broker.forwarding) and the DescribeConfigs answer from the image (``describe_configs``,
Kafka's ConfigHelper; kafkawire.controller.describe_configs). The node and the controller are not
imported (kafkawire.tools.server_start joins them).

Partitions: after each metadata change, every partition of the image whose leader is this
broker gets its log opened (``log.dirs/<topic>-<partition>``, kafkawire.broker.partition) and
its leader epoch updated; a partition no longer assigned here (reassigned away, or its topic
deleted) is closed, renamed and removed later (kafkawire.broker.log_deletion), as Kafka's
ReplicaManager.applyDelta deletes it (opening, leading and closing the logs:
kafkawire.broker.hosted_partitions). Before the first logs open, the partition directories the
image does not assign here are set aside ``-stray`` (kafkawire.broker.stray_logs). A partition
whose replicas include this broker and whose leader is another one is followed
(kafkawire.broker.replica_roles: its log kept or opened, its leader's replica fetcher copying
it); a follower made leader keeps its log. The
broker asks to be unfenced only once the metadata it registered against is applied and these
logs are open (and, given ``metadata_loaded``, once its image was loaded up to the high watermark,
and its authorizer loaded the ACLs), as Kafka's broker waits for its log manager; its listeners
process requests only once it is unfenced, as Kafka's BrokerServer enables request processing
last (see ``_run_lifecycle``).

Log directories (``log.dirs``, kafkawire.broker.log_dirs): each has its meta.properties and
directory id, all registered; a new log goes where LogDirs.place says, and a replica whose log is
not in the directory the metadata names is assigned to its real one with AssignReplicasToDirs
(kafkawire.broker.dir_assignments). AlterReplicaLogDirs moves a replica between them
(kafkawire.broker.alter_log_dirs). With ``authorizer.class.name`` set, the node's StandardAuthorizer
(``authorizer``, reading the ACLs of the same image) checks every broker API as Kafka's
KafkaApis does (kafkawire.broker.authorization); a broker given none is refused at start.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import uuid
import weakref
from typing import Callable

from kafkawire.metadata.features_answer import finalized_levels, set_features
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.net.admin_authorization import allowed
from kafkawire.net.admission import AdmissionLimits, ConnectionQuotas, DynamicAdmissionLimits
from kafkawire.net.authentication import sasl_handlers
from kafkawire.net.authorizer import CLUSTER_NAME, RESOURCE_CLUSTER, Op
from kafkawire.net.client_quotas import IpConnectionRates
from kafkawire.net.config import ConfigError, ServerConfig
from kafkawire.net.request_metrics import RequestMetrics
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.handler import ApiHandler
from kafkawire.storage.state_files import delete_clean_shutdown, read_clean_shutdown_epoch, write_clean_shutdown

from .authorization import authorize_broker_handlers
from .config_apis import ConfigApis
from .delegation_token_apis import DelegationTokenApis
from .delete_records import DeleteRecordsApi
from .describe_producers import DescribeProducersApi
from .describe_topic_partitions import DescribeTopicPartitionsApi
from .fetch import FetchApi
from .forwarding import ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS, Forwarder, forwarded_handlers
from .group_apis import GroupApis
from .image_admin_apis import ImageAdminApis
from .dynamic_listeners import DynamicListeners, listener_server
from .listener_ssl_reload import ListenerSslReload
from .lifecycle import RECOVERY, STARTING, BrokerLifecycle, Registration
from .log_dir_apis import LogDirApis
from .log_config import TopicConfigs
from .log_deletion import LogDeleter
from .log_dirs import LogDirs, LogDirsError, assigned_directory
from .cordoned_dirs import CordonedDirs
from .dir_assignments import DirAssignments
from .alter_log_dirs import AlterLogDirsApi
from .log_dir_copy import find_future_logs
from .log_dir_failure import BrokerHalted, fail_log_dir, skips_creation, state_file_failure
from .state_writes import StateWrites
from .stray_logs import mark_stray_logs
from .telemetry_apis import client_telemetry
from .log_manager import LogManager
from .metrics import BrokerTopicStats
from .metadata_apis import MetadataApis
from .hosted_partitions import HostedPartitions
from .partition import LeaderPartition
from .produce import ProduceApi
from .replica_roles import ReplicaRoles
from .replica_selector import SelectorError, replica_selector
from .producer_ids import InitProducerIdApi, ProducerIdBlocks
from .quotas import BrokerQuotas
from .replication_quotas import FOLLOWER, LEADER, ReplicationQuota
from .replication import Replication
from .txn_markers import MIN_VERSION as WRITE_TXN_MARKERS_MIN_VERSION, WRITE_TXN_MARKERS, TxnMarkersApi
from .txn_apis import TxnApis
from .share_coordinator_apis import ShareCoordinatorApis

__all__ = ["Broker", "BrokerStartError"]

log = logging.getLogger(__name__)
PRODUCE, FETCH, LIST_OFFSETS, METADATA, DESCRIBE_CONFIGS, DESCRIBE_CLUSTER = 0, 1, 2, 3, 32, 60
DESCRIBE_CONFIGS_MIN_VERSION = 1         # Kafka 4.x's broker serves DescribeConfigs v1-v4
INIT_PRODUCER_ID = 22
DELETE_RECORDS = 21
DESCRIBE_PRODUCERS = 61


class BrokerStartError(RuntimeError):
    """The broker role cannot start: the reason names the key or file."""


class Broker(HostedPartitions):
    """The broker part of a combined node: listeners serving the data APIs, the lifecycle with the
    active controller, and a LeaderPartition per partition the committed metadata says it leads."""

    def __init__(self, config: ServerConfig, *, cluster_id: str, directory_id: uuid.UUID | None,
                 image: Callable, metadata_offset: Callable[[], int], send_to_controller,
                 supported_features: dict, scram_lookup=None, describe_configs=None,
                 kraft_version: Callable[[], int] = lambda: 0, authorizer=None,
                 metadata_loaded: Callable[[], bool] = lambda: True, max_versions: dict[int, int] | None = None):
        try:
            # one log directory keeps the id the node read; several each have their own meta.properties
            known = {config.log_dirs[0] if len(set(config.log_dirs)) == 1 else config.metadata_log_dir: directory_id}
            self.log_dirs = LogDirs.load(config.log_dirs, node_id=config.node_id, cluster_id=cluster_id, known=known)
            if config.authorizer_settings() is not None and authorizer is None:
                raise BrokerStartError("authorizer.class.name is set, but the broker was given no authorizer "
                                       "(the node's StandardAuthorizer)")
            config.inter_broker_security()      # its mechanism and JAAS entry: refused now, not at a fetch
            # as Kafka's ReplicaManager instantiates it: a bad name stops the start; FetchApi uses it
            self.replica_selector = replica_selector(config.replica_selector_class)
        except (ConfigError, SelectorError, LogDirsError) as exc:
            raise BrokerStartError(str(exc)) from None
        self.config = config
        self.node_id = config.node_id
        self.cluster_id = cluster_id
        self.log_dir = self.log_dirs.online_paths[0]   # the first one online (the one of a single-directory broker)
        self.cordoned_dirs = CordonedDirs(self)      # cordoned.log.dirs (KIP-1066)
        self.directory_id = directory_id
        self.image = image
        self.metadata_offset = metadata_offset
        self.send_to_controller = send_to_controller
        self.supported_features = dict(supported_features)
        self.kraft_version = kraft_version          # the raft log's finalized kraft.version level
        # Whether the image has once caught up with the raft log's high watermark (Kafka's loader
        # publishes nothing before, and its broker waits for that first publish before it asks to
        # be unfenced); a combined node's committed image is published as it commits.
        self.metadata_loaded = metadata_loaded
        self.scram_lookup = scram_lookup
        self.max_versions = dict(max_versions or {})    # --max-api-versions: API key -> highest advertised
        self.describe_configs = describe_configs      # request -> DescribeConfigsResponse, from the image
        self.partitions: dict[tuple[str, int], LeaderPartition] = {}
        self.topic_stats = BrokerTopicStats()    # BrokerTopicMetrics' meters (kafkawire.broker.metrics)
        self.request_metrics = RequestMetrics()  # kafka.network's RequestMetrics of its listeners' requests
        self.appends = 0                        # batches appended so far (fetches wait for it to move)
        self._appended = asyncio.Event()
        self._logs_ready = False
        self._clean_epoch: int | None = None      # the broker epoch of .kafka_cleanshutdown at start
        self._strays_marked = False             # the start's stray scan (kafkawire.broker.stray_logs) done
        self.servers: list[KafkaServer] = []
        self.serving = asyncio.Event()            # the listeners process requests (set once unfenced)
        self.lifecycle: BrokerLifecycle | None = None
        self.task: asyncio.Task | None = None     # the lifecycle (registration, heartbeats), then serving
        self._halted: asyncio.Future | None = None     # fails the task with BrokerHalted (halt())
        self.metadata_apis = MetadataApis(self)
        # producer_byte_rate, consumer_byte_rate and request_percentage from the image (kafkawire.broker.quotas)
        self.quotas = BrokerQuotas(self)
        # leader/follower.replication.throttled.rate over the throttled replicas (kafkawire.broker.replication_quotas)
        window = (config.replication_quota_window_num, config.replication_quota_window_size_seconds)
        self.leader_quota = ReplicationQuota(LEADER, self.image, config.node_id, *window)
        self.follower_quota = ReplicationQuota(FOLLOWER, self.image, config.node_id, *window)
        self.fetch_api = FetchApi(self)
        self.topic_configs = TopicConfigs(config)     # topic configs resolved, per topic per image
        # epoch checkpoints and producer snapshots, off the loop; one failing takes its directory offline
        self.state_writes = StateWrites(on_failure=lambda *failed: state_file_failure(self, *failed))
        self.produce_api = ProduceApi(self)
        self.replication = Replication(self)          # the leader side: followers, ISR, high watermark, acks=all
        self.group_apis = GroupApis(self)
        self.log_dir_apis = LogDirApis(self)
        self.forwarder = Forwarder(send_to_controller)
        self.config_apis = ConfigApis(self.node_id, self.forwarder, may_alter_loggers=self._may_alter_loggers,
                                      stored_configs=lambda name: self.image().configs.get((BROKER_RESOURCE, name), {}),
                                      static_settings=dict(config.properties))
        # Delegation tokens: Describe from the image, the others checked and forwarded; the
        # listeners' SCRAM tokenauth logins (kafkawire.broker.delegation_token_apis)
        self.delegation_token_apis = DelegationTokenApis(self)
        self.producer_ids = ProducerIdBlocks(
            self.node_id, send=send_to_controller,
            broker_epoch=lambda: self.lifecycle.broker_epoch if self.lifecycle is not None else -1)
        self.init_producer_id_api = InitProducerIdApi(self.producer_ids,
                                                      transaction_max_timeout_ms=config.transaction_max_timeout_ms)
        self.log_manager = LogManager(self)      # retention and the log directory's checkpoints
        self.log_deleter = LogDeleter(self.log_dirs.online_paths, lambda: self.topic_configs.broker_value(
            self.image(), "log.segment.delete.delay.ms", config.log_segment_delete_delay_ms),
            self.log_manager.pending, self.log_manager.clock, on_failure=self.fail_log_dir)
        self.delete_records_api = DeleteRecordsApi(self)
        self.describe_producers_api = DescribeProducersApi(self)
        # Answered from the image: DescribeTopicPartitions, DescribeClientQuotas, DescribeUserScramCredentials,
        # ListConfigResources (the other admin APIs go to the controller, kafkawire.broker.forwarding).
        self.describe_topic_partitions_api = DescribeTopicPartitionsApi(self)
        self.image_admin_apis = ImageAdminApis(self)
        # Client telemetry (KIP-714), served only with a telemetry exporter (kafkawire.broker.telemetry_apis)
        self.telemetry = client_telemetry(config, image)
        # The node's StandardAuthorizer (the ACLs of the same image), or None: everything allowed.
        self.authorizer = authorizer
        # Transactions (kafkawire.broker.txn_markers): the markers' entry point for the transaction
        # coordinator, the callbacks told of each marker written, and the produce path's KIP-890
        # verification (an async callable the coordinator sets; None: no verification).
        self.txn_markers = TxnMarkersApi(self)
        self.txn_marker_listeners: list = []
        self.txn_verifier = None
        self.txn_verification_enabled = None   # () -> transaction.partition.verification.enable now
        # The transaction coordinator (__transaction_state); it sets txn_verifier (KIP-890's check
        # of transactional produce batches) and its setting, and adds its listener to txn_marker_listeners.
        self.txn_apis = TxnApis(self)
        self.txn_apis.install()
        # The share coordinator (__share_group_state): the share-partitions' delivery state.
        self.share_coordinator_apis = ShareCoordinatorApis(self)
        # The partitions followed here and their replica fetchers (kafkawire.broker.replica_roles).
        self.replica_roles = ReplicaRoles(self)
        # A key or trust store changed dynamically: new connections of the listeners and of the
        # clients towards other brokers (each client made registers here) use it (KIP-226).
        client_security = config.inter_broker_security()
        self.ssl_reload = ListenerSslReload(dict(config.properties), config.node_id, None if (
            client_security is None or client_security.ssl is None) else (self.replica_roles.listener, client_security.ssl))
        self.inter_broker_clients: weakref.WeakSet = weakref.WeakSet()
        self.connection_quotas: ConnectionQuotas | None = None      # the listeners' (set at start)
        self.dynamic_listeners = DynamicListeners(self)   # listeners and inter-broker SASL mechanism changed live
        # Where each replica's log is, told to the controller (KIP-858), and AlterReplicaLogDirs.
        self.dir_assignments = DirAssignments(
            self.node_id, send=send_to_controller, image=image,
            broker_epoch=lambda: self.lifecycle.broker_epoch if self.lifecycle is not None else -1)
        self.alter_log_dirs = AlterLogDirsApi(self)
        self.offline_partitions: dict[tuple[str, int], uuid.UUID] = {}    # replicas of failed directories

    # -- the listeners --

    def handlers(self) -> dict[int, ApiHandler]:
        """The broker's APIs, behind KafkaApis' ACL checks when there is an authorizer
        (kafkawire.broker.authorization), and behind the client quotas (kafkawire.broker.quotas)."""
        handlers = self._handlers()
        if self.authorizer is not None:
            handlers = authorize_broker_handlers(handlers, self.authorizer, self)
        handlers = self.quotas.wrap(handlers)     # client quotas (kafkawire.broker.quotas)
        return {key: dataclasses.replace(handler, max_version=self.max_versions[key]) if key in self.max_versions
                else handler for key, handler in handlers.items()}

    def _handlers(self) -> dict[int, ApiHandler]:
        own = {} if self.describe_configs is None else {DESCRIBE_CONFIGS: ApiHandler(
            self._describe_configs, min_version=DESCRIBE_CONFIGS_MIN_VERSION)}
        return {
            **sasl_handlers(),      # Kafka's broker advertises them on every listener, SASL or not
            **own,
            # v0-2 refused, as Kafka 4 does, but v0 advertised as Kafka's broker does (KAFKA-18659)
            PRODUCE: ApiHandler(self.produce_api.produce, min_version=3, advertised_min_version=0),
            FETCH: ApiHandler(self.fetch_api.fetch, min_version=4),
            LIST_OFFSETS: ApiHandler(self.fetch_api.list_offsets, min_version=1),
            METADATA: ApiHandler(self.metadata_apis.metadata),
            DESCRIBE_CLUSTER: ApiHandler(self.metadata_apis.describe_cluster),
            DELETE_RECORDS: ApiHandler(self.delete_records_api.delete_records),
            DESCRIBE_PRODUCERS: ApiHandler(self.describe_producers_api.describe_producers),
            WRITE_TXN_MARKERS: ApiHandler(self.txn_markers.handle, min_version=WRITE_TXN_MARKERS_MIN_VERSION),
            **self.group_apis.handlers(),
            **self.txn_apis.handlers(),
            **self.share_coordinator_apis.handlers(),
            **self.log_dir_apis.handlers(),
            **self.alter_log_dirs.handlers(),
            **self.describe_topic_partitions_api.handlers(),
            **self.image_admin_apis.handlers(),
            **self.delegation_token_apis.handlers(),
            **self.telemetry.handlers(),
            **forwarded_handlers(self.forwarder, {ALTER_CONFIGS: self.config_apis.alter_configs,
                                                  INCREMENTAL_ALTER_CONFIGS: self.config_apis.incremental_alter_configs}),
        }

    def _authorizer_loaded(self) -> bool:
        """Whether the authorizer (if any) has loaded the ACLs: Kafka's broker opens its listeners
        only once its authorizer's futures completed (BrokerServer's authorizerFutures), so no
        request meets an authorizer that is not ready."""
        return self.authorizer is None or self.authorizer.loaded()

    def _may_alter_loggers(self, ctx) -> bool:
        """ConfigAdminManager's check of a BROKER_LOGGER change: ALTER_CONFIGS on the cluster."""
        return self.authorizer is None or allowed(self.authorizer, ctx, Op.ALTER_CONFIGS, RESOURCE_CLUSTER,
                                                  CLUSTER_NAME)

    async def _describe_configs(self, ctx, request):
        return self.describe_configs(request)

    def broker_listener_names(self) -> list[str]:
        return [e.listener_name for e in self.config.listeners
                if e.listener_name not in self.config.controller_listener_names]

    async def start(self) -> None:
        """Register and heartbeat; the listeners serve requests only once the broker is unfenced
        (``serving``), as Kafka's BrokerServer.startup enables request processing last."""
        c = self.config
        names = self.broker_listener_names()
        if not names:
            raise BrokerStartError(f"listeners={','.join(str(e) for e in c.listeners)}: the broker role needs a "
                                   "listener that is not in controller.listener.names")
        # max.connections* and the connection creation rates (broker-wide, and the image's ip quotas);
        # the inter-broker listener is exempt from the broker-wide ones, as Kafka's protectedListener
        # (each also set dynamically for this broker or every broker)
        self.connection_quotas = ConnectionQuotas(DynamicAdmissionLimits(self.image, c.node_id, AdmissionLimits.of(c)),
                                                  ip_rates=IpConnectionRates(self.image),
                                                  protected_listener=c.inter_broker_listener)
        for name in names:
            await self._listener(name)
        # LogManager's clean-shutdown marker: its broker epoch registers (a clean restart keeps this
        # broker in its partitions' ELRs, KIP-966), and it goes now, so a crash reads as unclean.
        epochs = [read_clean_shutdown_epoch(path) for path in self.log_dirs.online_paths]
        self._clean_epoch = None if None in epochs else epochs[0]      # clean only if every directory was
        for path in self.log_dirs.online_paths:
            delete_clean_shutdown(path)
        self.lifecycle = BrokerLifecycle(
            self.send_to_controller, registration=self._registration(), metadata_offset=self.metadata_offset,
            ready_to_unfence=lambda: self._logs_ready and self.metadata_loaded() and self._authorizer_loaded(),
            heartbeat_interval_ms=c.broker_heartbeat_interval_ms, on_state=self._on_lifecycle_state,
            offline_log_dirs=self.log_dirs.offline_ids, cordoned_log_dirs=self.cordoned_dirs.heartbeat_ids)
        self.task = asyncio.ensure_future(self._run_lifecycle())
        # moves cut short by a stop or a crash: resumed once their replicas are hosted
        self.alter_log_dirs.futures.resumable.update(find_future_logs(self.log_dirs.online_paths))
        self.log_deleter.schedule_leftovers()
        self.log_manager.start()
        self.replication.start()
        self.dir_assignments.start()
        self.share_coordinator_apis.start()
        log.info("broker %d registering; its listeners %s serve requests once it has caught up with the metadata "
                 "and is unfenced", self.node_id,
                 ", ".join(f"{s.listener_name}://{s.host}:{s.port}" for s in self.servers))

    async def _listener(self, name: str) -> None:
        """The listener's server, not serving yet. One on port 0 is bound now, as Kafka's Acceptor
        opens an ephemeral port at once (its port is registered); one on a fixed port is opened
        only when request processing is enabled, so that an open port means a ready broker."""
        endpoint = self.config.listener(name)
        try:
            server = listener_server(self, endpoint, self.config.security_of(name))
            if not endpoint.port:
                await server.bind()
        except ConfigError as exc:
            raise BrokerStartError(f"listener {endpoint}: {exc}") from None
        except OSError as exc:
            raise BrokerStartError(f"listener {endpoint}: cannot bind: {exc.strerror or exc}") from None
        self.servers.append(server)

    async def _run_lifecycle(self) -> None:
        """The lifecycle (registration, heartbeats) and, once it unfenced the broker, request
        processing on the listeners (SocketServer.enableRequestProcessing): before, Kafka's
        listeners accept nothing, so no request is answered from an image that has not caught up
        with the controller (Metadata naming this broker the leader of a partition it lost while
        it was down). Raises what stops the broker: a refused registration, a port that cannot be
        bound."""
        lifecycle = asyncio.ensure_future(self.lifecycle.run())
        unfenced = asyncio.ensure_future(self.lifecycle.unfenced.wait())
        halted = self._halted = asyncio.get_running_loop().create_future()      # set by halt()
        try:
            await asyncio.wait([lifecycle, unfenced, halted], return_when=asyncio.FIRST_COMPLETED)
            if not lifecycle.done() and not halted.done():
                await self._enable_request_processing()
            await asyncio.wait([lifecycle, halted], return_when=asyncio.FIRST_COMPLETED)
            if halted.done():
                halted.result()         # raises BrokerHalted
            await lifecycle
        finally:
            for task in (lifecycle, unfenced, halted):
                task.cancel()
            await asyncio.gather(lifecycle, unfenced, return_exceptions=True)

    async def _enable_request_processing(self) -> None:
        for server in self.servers:
            try:
                await server.start()
            except OSError as exc:
                raise BrokerStartError(f"listener {server.listener_name}://{server.host}:{server.port}: cannot bind: "
                                       f"{exc.strerror or exc}") from None
        self.serving.set()
        log.info("broker %d caught up and unfenced: serving requests on %s", self.node_id,
                 ", ".join(f"{s.listener_name}://{s.host}:{s.port}" for s in self.servers))

    def api_versions_features(self, response) -> None:
        """DefaultApiVersionManager: the features this broker supports (the ones it registers),
        the levels the image finalized, and the image's offset as their epoch."""
        set_features(response, self.supported_features, finalized_levels(self.image(), self.kraft_version()),
                     self.metadata_offset())

    def _registration(self) -> Registration:
        """The advertised broker listeners (a wildcard host is this machine's name, a port 0 the
        bound one), as Kafka's broker registers them."""
        bound = {s.listener_name: s.port for s in self.servers}
        advertised = {e.listener_name: e for e in self.config.advertised_listeners}
        listeners = []
        for name in self.broker_listener_names():
            e = advertised.get(name) or self.config.listener(name)
            host = e.host if e.host not in (None, "", "0.0.0.0", "::") else socket.getfqdn()
            listeners.append((name, host, e.port or bound[name], e.security_protocol))
        return Registration(broker_id=self.node_id, cluster_id=self.cluster_id, incarnation_id=uuid.uuid4(),
                            listeners=tuple(listeners), features=self.supported_features,
                            log_dirs=self.log_dirs.ids(),
                            rack=self.config.broker_rack,
                            previous_broker_epoch=-1 if self._clean_epoch is None else self._clean_epoch)

    def _on_lifecycle_state(self, state: str) -> None:
        if state == RECOVERY:
            self.on_metadata()
            self._logs_ready = True

    # -- metadata --

    def on_metadata(self) -> None:
        """The committed metadata moved: open the logs of the partitions led here, follow those
        assigned here and led elsewhere (Partition.makeLeader / makeFollower), close the others."""
        if self.lifecycle is None:
            return
        self.lifecycle.poke()
        self.cordoned_dirs.on_metadata()
        image = self.image()
        self.ssl_reload.on_metadata(image, self.servers, self.inter_broker_clients)
        self.dynamic_listeners.on_metadata(image)
        if image is None or self.lifecycle.state == STARTING:
            return
        if not self._strays_marked:         # before the first log opens, as Kafka's LogManager.startup
            for path in self.log_dirs.online_paths:
                mark_stray_logs(path, image, self.node_id)
            self._strays_marked = True
        led, followed = set(), {}
        for topic in image.topics_by_name.values():
            for index, registration in topic.partitions.items():
                key = (topic.name, index)
                if self.offline_replica(key, topic.id, registration):
                    continue
                if registration.leader == self.node_id:
                    led.add(key)
                    self._take_from_followers(key, topic.id)
                    self._lead(image, topic, index, registration.leader_epoch)
                elif self.node_id in registration.replicas:
                    followed[key] = (topic, index, registration)
        for key in [k for k in self.partitions if k not in led]:
            partition = self.partitions.pop(key, None)     # None: closed, its directory failed meanwhile
            if partition is None:
                continue
            if key in followed and followed[key][0].id == partition.topic_id:     # makeFollower keeps the log
                registration = followed[key][2]
                self.replica_roles.make_follower(partition, registration.leader, registration.leader_epoch)
            else:          # no longer a replica here, or its topic deleted: applyDelta's deletes
                self.log_deleter.delete(partition)
        self.replica_roles.apply(image, followed)
        for name in [t for t in self.topic_stats.topics if t not in image.topics_by_name]:
            self.topic_stats.remove_topic(name)      # a deleted topic's meters go with it
        self.alter_log_dirs.futures.on_metadata()     # future logs of replicas gone dropped, found ones resumed
        self._assign_directories(image)
        self.replication.on_metadata(image)
        self.group_apis.on_metadata()
        self.txn_apis.on_metadata()
        self.share_coordinator_apis.on_metadata()

    def offline_replica(self, key, topic_id, registration) -> bool:
        """A replica whose log was in a failed directory, or that the metadata assigns to one or to
        one unknown here while one failed, is neither led nor followed here (HostedPartition.Offline;
        createLogInAssignedDirectoryId): kafkawire.broker.log_dir_failure.skips_creation."""
        return skips_creation(self, key, topic_id, assigned_directory(registration, self.node_id))

    def fail_log_dir(self, path: str, reason, *, message: str | None = None) -> None:
        """A log directory failed (an I/O error writing its files): kafkawire.broker.log_dir_failure."""
        fail_log_dir(self, path, reason, message=message)

    def halt(self, reason: BrokerHalted) -> None:
        """Stop the broker (its task ends with ``reason``), as Kafka's Exit.halt(1)."""
        log.critical("broker %d: %s", self.node_id, reason)
        if self._halted is not None and not self._halted.done():
            self._halted.set_exception(reason)

    # -- appends and the fetches waiting for them --

    def data_appended(self) -> None:
        self.appends += 1
        self._appended.set()
        self._appended = asyncio.Event()

    async def wait_for_appends(self, seen: int, timeout: float) -> None:
        """Until a batch is appended after ``seen`` (``appends`` then), or ``timeout`` seconds."""
        if self.appends != seen:
            return
        try:
            async with asyncio.timeout(timeout):
                await self._appended.wait()
        except asyncio.TimeoutError:
            pass

    @property
    def unfenced(self) -> bool:
        return self.lifecycle is not None and self.lifecycle.unfenced.is_set()

    async def stop(self, *, graceful: bool = True) -> None:
        """Stop; ``graceful``: after Kafka's controlled shutdown (while the controller still runs)."""
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if graceful and self.lifecycle is not None and self.lifecycle.state != STARTING:
            await self.lifecycle.controlled_shutdown()
        self.metadata_apis.close()
        self.group_apis.close()
        self.txn_apis.close()
        self.share_coordinator_apis.close()
        self.producer_ids.close()
        self.dir_assignments.close()
        self.replication.close()             # waiting acks=all answers go out before the listeners close
        await self.dynamic_listeners.close()
        for server in self.servers:
            await server.close(timeout_ms=1000)
        await self.replica_roles.stop_fetchers()
        await self.alter_log_dirs.futures.stop()     # a copy under way resumes at the next start
        self.log_manager.shutdown()          # the followed replicas' high watermarks checkpointed too
        if self._logs_ready or self._clean_epoch is not None:   # its logs were loaded, or were clean
            for path in self.log_dirs.online_paths:
                try:
                    write_clean_shutdown(path, self.lifecycle.broker_epoch if self.lifecycle else -1)
                except OSError as exc:
                    log.warning("writing the clean shutdown marker in %s: %s", path, exc)
        await self.replica_roles.close()
        for partition in self.partitions.values():
            self.close_partition(partition)
        self.partitions.clear()
        self.state_writes.close()
        log.info("broker %d stopped", self.node_id)
