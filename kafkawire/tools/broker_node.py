"""A broker-only node (``process.roles=broker``): Kafka's BrokerServer on SharedServer's raft
client, which on such a node is an observer of the controller quorum.

    node = BrokerOnlyNode(load_server_config("broker.properties"))
    await node.start()          # raft following the quorum, the broker listening and registering
    ...
    await node.stop()           # the broker's controlled shutdown, then raft

What it assembles, as Kafka's broker does:

* the ``__cluster_metadata-0`` log under metadata.log.dir, followed by a RaftDriver as an
  OBSERVER: no controller listener of its own, so no endpoints and no votes; it finds the
  leader through controller.quorum.bootstrap.servers (or controller.quorum.voters) on the
  first controller.listener.names entry and fetches from it (KafkaRaftClient with
  canBecomeVoter false: fetched records are not fsynced, an observer that can never vote
  need not; controller.quorum.auto.join.enable is refused by the configuration check);
* a MetadataLoader (kafkawire.controller.loader) as the driver's state machine: the image of
  the COMMITTED records only, replayed as the controller replays them; it also gives the
  records of the metadata snapshots the driver writes (Kafka's broker snapshots too);
* kafkawire.broker's Broker on the listeners, reading that image, registering with the active
  controller and heartbeating over the network (BrokerRegistration, BrokerHeartbeat to the
  leader's controller listener: RaftDriver.send_to_leader), and forwarding admin requests
  there; with authorizer.class.name, a StandardAuthorizer over the image's ACLs.

With ``metric.reporters`` naming kafkawire.metrics.PrometheusReporter, the node serves its raft
metrics (an observer's KafkaRaftMetrics) and the broker's (kafkawire.broker.metrics) on the
Prometheus endpoint, as a combined node does.

As a combined node, it writes its raft metrics (the observer's) to
``METADATA_LOG_DIR/kafkawire-raft-metrics.json`` every second and at stop, and ``max_versions``
(``server-start --max-api-versions``) caps the versions its listeners advertise and serve.
"""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import os

from kafkawire.broker import Broker, BrokerStartError
from kafkawire.broker.metrics import broker_families
from kafkawire.controller.broker_config_keys import broker_config_keys
from kafkawire.controller.describe_configs import describe_configs
from kafkawire.controller.loader import MetadataLoader
from kafkawire.feature_versions import KRAFT_VERSION
from kafkawire.net import background
from kafkawire.net.authorizer import StandardAuthorizer
from kafkawire.net.config import ConfigError, ServerConfig
from kafkawire.net.metrics_http import EndpointStartError, MetricsEndpoint, start_metrics_endpoint
from kafkawire.raft.contract import StateMachineFatal
from kafkawire.raft.node.controller_node import (METADATA_PARTITION_DIR, NodeStartError,
                                                 controller_client_options, raft_config_from, raft_network_client,
                                                 read_node_meta, scram_credential, write_raft_metrics)
from kafkawire.raft.node.disk_store import DiskLogStore
from kafkawire.raft.node.driver import RaftDriver
from kafkawire.raft.node.metrics import RaftMetrics
from kafkawire.raft.node.prometheus import raft_families
from kafkawire.tools.metric_reporters import watch_metric_reporters

__all__ = ["BrokerOnlyNode"]

log = logging.getLogger(__name__)


class BrokerOnlyNode:
    """A ``process.roles=broker`` node: a raft observer, the committed image it loads, and the
    broker serving it (see the module docstring). ``start`` raises NodeStartError, with the
    reason, for a node that cannot run."""

    def __init__(self, config: ServerConfig, *, fsync: bool = True, metrics_interval_ms: int = 1000,
                 max_versions: dict[int, int] | None = None):
        if config.is_controller or not config.is_broker:
            raise NodeStartError(f"process.roles={','.join(config.process_roles)}: a broker-only node has "
                                 "process.roles=broker")
        self.config = config
        self.fsync = fsync
        self.metrics_interval_ms = metrics_interval_ms
        self.max_versions = dict(max_versions or {})    # API key -> highest version to advertise
        self._metrics_task: asyncio.Task | None = None
        self.driver: RaftDriver | None = None
        self.loader = MetadataLoader()
        self.broker: Broker | None = None
        self.cluster_id: str | None = None
        self.authorizer: StandardAuthorizer | None = None
        self.metrics_endpoint: MetricsEndpoint | None = None
        self.metric_reporters_reload = None        # metric.reporters changed dynamically
        self._loaded = False

    @property
    def servers(self) -> list:
        """The node's own listeners besides the broker's: none (no controller listener)."""
        return []

    async def start(self) -> None:
        c = self.config
        meta = read_node_meta(c)
        self.cluster_id = cluster_id = meta.cluster_id
        assert cluster_id is not None, "read_node_meta refuses a meta.properties without cluster.id"
        try:
            client = raft_network_client(c, controller_client_options(c))
            client_security = c.raft_client_security()
            settings = c.authorizer_settings()
        except ConfigError as exc:
            raise NodeStartError(str(exc)) from None
        # An observer that never votes: no endpoints (no controller listener), no fsync of what it fetches.
        raft_config = dataclasses.replace(raft_config_from(c, meta.directory_id, cluster_id), can_become_voter=False)
        store = DiskLogStore(os.path.join(c.metadata_log_dir, METADATA_PARTITION_DIR),
                             segment_bytes=c.metadata_log_segment_bytes, fsync=self.fsync,
                             segment_ms=c.metadata_log_segment_ms)
        self.driver = driver = RaftDriver(
            raft_config, store, client, state_machine=self.loader,
            snapshot_min_bytes=c.metadata_log_max_record_bytes_between_snapshots,
            snapshot_interval_ms=c.metadata_log_max_snapshot_interval_ms,
            retention_bytes=c.metadata_max_retention_bytes, retention_ms=c.metadata_max_retention_ms)
        driver.metrics = RaftMetrics(c.node_id, samples=c.metrics_num_samples, window_ms=c.metrics_sample_window_ms)
        if settings is not None:
            self.authorizer = StandardAuthorizer(settings, lambda: self.loader.image.acl_index, self._metadata_loaded)
        try:
            driver.start()
        except StateMachineFatal as exc:       # the latest snapshot holds what the loader refuses
            raise NodeStartError(str(exc)) from None
        self.broker = self._make_broker(meta.directory_id)
        if client_security is not None and client_security.ssl is not None:
            # a key or trust store changed dynamically: for the next connections to the controllers
            self.broker.ssl_reload.watch_controller_clients(c.controller_listener_names[0], client_security.ssl,
                                                            driver.controller_clients)
        try:
            await self.broker.start()
        except BrokerStartError as exc:
            raise NodeStartError(f"cannot start the broker: {exc}") from None
        driver.hw_listeners.append(self.broker.on_metadata)
        await self._start_metrics_endpoint()
        loader = self.loader
        watch_metric_reporters(self, self.broker, lambda: loader.image, driver.hw_listeners)
        self._metrics_task = background.start(self._publish_metrics(), f"node {c.node_id}: publishing metrics",
                                              logger=log)
        log.info("broker-only node %d (cluster %s) following the controller quorum on %s", c.node_id, cluster_id,
                 raft_config.listener)

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
        listener, driver, broker = self.config.kafkawire_metrics_prometheus_listener, self.driver, self.broker
        if self.metrics_endpoint is not None or driver is None or broker is None:
            return
        self.metrics_endpoint = endpoint = await start_metrics_endpoint(
            listener, lambda: itertools.chain(raft_families(driver), broker_families(broker)))
        log.info("node %d: metrics on http://%s:%d/metrics", self.config.node_id, listener[0] or "0.0.0.0",
                 endpoint.port)

    async def close_metrics_endpoint(self) -> None:
        """Stop the Prometheus endpoint (a dynamic metric.reporters removed the reporter)."""
        endpoint, self.metrics_endpoint = self.metrics_endpoint, None
        if endpoint is not None:
            await endpoint.close()
            log.info("node %d: metrics endpoint closed", self.config.node_id)

    async def _publish_metrics(self) -> None:
        """The raft metrics file, as ControllerNode writes it (kafkawire.raft.node.controller_node)."""
        while True:
            await asyncio.sleep(self.metrics_interval_ms / 1000)
            self._write_metrics()

    def _write_metrics(self) -> None:
        if self.driver is not None:
            write_raft_metrics(self.driver, self.config.metadata_log_dir)

    def _make_broker(self, directory_id) -> Broker:
        driver, loader, c = self.driver, self.loader, self.config
        assert driver is not None and self.cluster_id is not None
        features = dict(loader.supported_features)
        features[KRAFT_VERSION] = (driver.config.kraft_version_min, driver.config.kraft_version_max)
        static, known = dict(c.static_settings), broker_config_keys()
        try:
            return Broker(c, cluster_id=self.cluster_id, directory_id=directory_id,
                          image=lambda: loader.image, metadata_offset=lambda: loader.applied_offset,
                          send_to_controller=driver.send_to_leader, supported_features=features,
                          scram_lookup=lambda mechanism, user: scram_credential(loader.image, mechanism, user),
                          kraft_version=driver.kraft_version, authorizer=self.authorizer,
                          metadata_loaded=self._metadata_loaded, max_versions=self.max_versions,
                          describe_configs=lambda request: describe_configs(
                              c.node_id, loader.image, request, static=static, broker_keys=known))
        except BrokerStartError as exc:
            raise NodeStartError(f"cannot start the broker: {exc}") from None

    def _metadata_loaded(self) -> bool:
        """Whether the committed metadata was applied once up to the high watermark (Kafka's
        loader's initial catch-up: the authorizer serves only super users before, and the broker
        does not ask to be unfenced)."""
        if not self._loaded and self.driver is not None:
            high_watermark = self.driver.high_watermark()
            self._loaded = high_watermark > 0 and self.driver.applied_offset >= high_watermark
        return self._loaded

    async def stop(self, *, graceful: bool = True) -> None:
        """Stop the broker (``graceful``: after its controlled shutdown), then raft."""
        if self._metrics_task is not None:
            self._metrics_task.cancel()
            await asyncio.gather(self._metrics_task, return_exceptions=True)
        if self.metric_reporters_reload is not None:
            await self.metric_reporters_reload.close()     # no endpoint opened after this close
        await self.close_metrics_endpoint()
        if self.broker is not None:
            await self.broker.stop(graceful=graceful)
        driver = self.driver
        if driver is not None:
            await driver.client.close()
            await driver.close()
            self._write_metrics()
        log.info("node %d stopped", self.config.node_id)
