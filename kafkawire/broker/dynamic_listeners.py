"""Broker listeners added or removed by a dynamic config change, and a changed
``sasl.mechanism.inter.broker.protocol``, applied as Kafka 4.3.1 applies them.

The change was checked when it was accepted (kafkawire.metadata.dynamic_reconfiguration, Kafka's
DynamicListenerConfig.validateReconfiguration and KafkaConfig's checks: the inter-broker and the
advertised listeners kept, the controller listeners not among a broker-only node's, each
listener with a security protocol, an existing listener's protocol and settings unchanged). Once
it is in the committed metadata, DynamicListenerConfig.reconfigure's work is done here: the
listeners now configured (``listeners`` over the node's server.properties, overridden by the
dynamic cluster default and then this broker's own dynamic configs), compared by name with the
ones before (a listener's host or port changed under the same name is not rebound, as Kafka's
comparison is by name too), the removed ones close first (SocketServer.removeListeners: their
acceptor stops, their connections close, their connection count leaves the quotas), then each
added one opens (addListeners: its settings, its ``listener.name.<name>.ssl.*`` / ``sasl.*`` /
``principal.builder.class``, read from the same configs). A listener added before the broker
serves opens once it is unfenced (Kafka starts a new acceptor once request processing is
enabled); one that cannot be opened (its port taken, its key store unreadable) is logged and the
broker goes on, as Kafka logs a reconfiguration that fails.

What is not done, as in Kafka 4.3.1: the broker does not register again. Its
BrokerLifecycleManager keeps the listeners it registered at start (every registration it sends,
a re-registration too, carries them), so the controller's registration, and so the Metadata and
DescribeCluster answers, keep the listeners of the start: a request on an added listener is
served, but its Metadata lists no broker with an endpoint on it (a partition's leader then is
LISTENER_NOT_FOUND, from version 6), and a removed listener stays advertised (its port refuses
connections). After a restart too: the listeners of server.properties open and register first,
and the dynamic change is applied after, as here.

``sasl.mechanism.inter.broker.protocol``: the connections this broker opens to other brokers
(replica fetchers, transaction markers, KIP-890 verification, the share persister) use the new
mechanism, with the inter-broker listener's JAAS entry for it, from their next connection; the
open ones keep theirs. A mechanism that cannot be used (no JAAS entry for it, no username) is
logged and the current one stays, as Kafka logs a reconfiguration that fails after validation.
(A difference, documented in docs/differences.md: Kafka's client channel builders take the
mechanism when they are built, so its running replica fetcher threads and transaction marker
channel keep the old mechanism until they are made again.)

    listeners = DynamicListeners(broker)      # broker: its config, servers, serving, inter_broker_clients
    listeners.on_metadata(image)              # after each publish of the committed image
"""
from __future__ import annotations

import asyncio
import logging

from kafkawire.metadata.dynamic_reconfiguration import merged
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs
from kafkawire.net.config import ConfigError, Endpoint, parse_listeners
from kafkawire.net.config_values import parse_security_protocol_map
from kafkawire.net.sasl import SaslClient
from kafkawire.net.security import SASL_DEFAULTS, inter_broker_client_security, resolve_listener_security
from kafkawire.net.server import KafkaServer

__all__ = ["DynamicListeners", "listener_server"]

log = logging.getLogger(__name__)

MECHANISM = "sasl.mechanism.inter.broker.protocol"
CLOSE_TIMEOUT_MS = 1000          # a removed listener's requests in flight get this long to finish


def listener_server(broker, endpoint: Endpoint, security) -> KafkaServer:
    """A KafkaServer for one of ``broker``'s listeners (not bound yet), serving its APIs within its
    connection quotas: the listeners of server.properties at start, and the ones added here."""
    c, quotas = broker.config, broker.connection_quotas
    server = KafkaServer(broker.handlers(), host=endpoint.host or "0.0.0.0", port=endpoint.port,
                         listener_name=endpoint.listener_name, security=security, scram_lookup=broker.scram_lookup,
                         token_lookup=broker.delegation_token_apis.credentials,
                         max_request_bytes=c.socket_request_max_bytes, connections_max_idle_ms=c.connections_max_idle_ms,
                         failed_authentication_delay_ms=c.connection_failed_authentication_delay_ms,
                         admission=quotas.limits, connection_quotas=quotas,
                         unstable_api_versions=c.unstable_api_versions_enable)
    server.api_versions_features = broker.api_versions_features
    server.request_metrics = broker.request_metrics     # one RequestMetrics for all listeners, as Kafka's
    server.connection_closed_listeners.append(broker.telemetry.connection_closed)
    return server


class DynamicListeners:
    """The broker's listeners and inter-broker SASL mechanism as its dynamic configs say."""

    def __init__(self, broker):
        self.broker = broker
        config = broker.config
        self.static = dict(config.properties)
        self.node = str(config.node_id)
        self.controller_names = set(config.controller_listener_names)
        self.protocols = dict(config.listener_security_protocol_map)      # the effective static map
        # Kafka's oldConfig.listeners: the broker listeners as last configured, by name
        self.listeners: dict[str, Endpoint] = {e.listener_name: e for e in config.listeners
                                               if e.listener_name not in self.controller_names}
        self.mechanism = self.static.get(MECHANISM, SASL_DEFAULTS[MECHANISM]).strip()
        self.inter_broker_sasl = None      # () -> SaslClient of a mechanism set dynamically (None: the static one)
        self._seen: tuple | None = None     # the broker's and the cluster default's dynamic configs last applied
        self._changes: asyncio.Task | None = None     # the listener changes under way, one after the other
        self.failures = 0                  # listener changes that could not be applied (logged)

    def on_metadata(self, image) -> None:
        if image is None:
            return
        configs = tuple(dict(image.configs.get((BROKER_RESOURCE, name)) or {}) for name in (self.node, ""))
        if configs == self._seen:
            return
        self._seen = configs
        props = merged(self.static, dynamic_broker_configs(image, ""), dynamic_broker_configs(image, self.node))
        self._reconfigure_listeners(props)
        self._reconfigure_mechanism(props)

    # -- listeners --

    def _reconfigure_listeners(self, props: dict) -> None:
        try:
            protocols = self.protocols
            if "listener.security.protocol.map" in props:
                protocols = parse_security_protocol_map("listener.security.protocol.map",
                                                        props["listener.security.protocol.map"])
            endpoints = parse_listeners("listeners", props.get("listeners", ""), protocols)
        except ConfigError as exc:          # checked when accepted: only a stored record nobody checked
            log.error("broker %s: the dynamic listeners are not applied: %s", self.node, exc)
            return
        wanted = {e.listener_name: e for e in endpoints if e.listener_name not in self.controller_names}
        removed = [e for name, e in self.listeners.items() if name not in wanted]
        added = [e for name, e in wanted.items() if name not in self.listeners]
        self.listeners = wanted
        if not removed and not added:
            return
        log.info("broker %s: listeners changed dynamically: removing %s, adding %s", self.node,
                 [str(e) for e in removed] or "none", [str(e) for e in added] or "none")
        previous = self._changes
        self._changes = asyncio.ensure_future(self._apply(previous, removed, added, props))

    async def _apply(self, previous, removed: list[Endpoint], added: list[Endpoint], props: dict) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        for endpoint in removed:
            await self._step(self._remove(endpoint), f"closing listener {endpoint}")
        for endpoint in added:
            await self._step(self._add(endpoint, props), f"opening listener {endpoint}")

    async def _step(self, change, what: str) -> None:
        """One listener's change; what fails is logged and the next one is made (as Kafka logs a
        reconfiguration that fails)."""
        try:
            await change
        except asyncio.CancelledError:
            raise
        except Exception:
            self.failures += 1
            log.exception("broker %s: %s failed", self.node, what)

    async def _remove(self, endpoint: Endpoint) -> None:
        """SocketServer.removeListeners: its acceptor and its connections closed."""
        broker, name = self.broker, endpoint.listener_name
        for server in [s for s in broker.servers if s.listener_name == name]:
            broker.servers.remove(server)
            if broker.connection_quotas is not None:
                broker.connection_quotas.listeners.discard(name)     # ConnectionQuotas.removeListener
            await server.close(timeout_ms=CLOSE_TIMEOUT_MS)
            broker.ssl_reload.forget(server)
            log.info("broker %s: listener %s closed", self.node, endpoint)

    async def _add(self, endpoint: Endpoint, props: dict) -> None:
        """SocketServer.addListeners: an acceptor for the new listener, accepting once the broker serves."""
        broker = self.broker
        try:
            security = resolve_listener_security(props, endpoint.listener_name, endpoint.security_protocol)
            server = listener_server(broker, endpoint, security)
        except ConfigError as exc:
            self.failures += 1
            log.error("broker %s: listener %s is not opened: %s", self.node, endpoint, exc)
            return
        await broker.serving.wait()     # Kafka starts a new acceptor once request processing is enabled
        broker.servers.append(server)
        try:
            await server.start()
        except OSError as exc:
            self.failures += 1
            broker.servers.remove(server)
            await server.close(timeout_ms=0)
            log.error("broker %s: listener %s is not opened: cannot bind: %s", self.node, endpoint,
                      exc.strerror or exc)
            return
        log.info("broker %s: listener %s://%s:%d opened", self.node, endpoint.listener_name, server.host, server.port)

    async def close(self) -> None:
        """Stop the changes under way (the broker closes its servers next)."""
        if self._changes is not None:
            self._changes.cancel()
            await asyncio.gather(self._changes, return_exceptions=True)

    # -- the inter-broker SASL mechanism --

    def _reconfigure_mechanism(self, props: dict) -> None:
        mechanism = props.get(MECHANISM, SASL_DEFAULTS[MECHANISM]).strip()
        if mechanism == self.mechanism:
            return
        listener = self.broker.config.inter_broker_listener
        protocol = self.protocols.get(listener or "", "PLAINTEXT")
        if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
            self.mechanism = mechanism          # no SASL towards other brokers: nothing to change
            return
        try:
            security = inter_broker_client_security(props, listener, protocol)
        except ConfigError as exc:
            log.error("broker %s: the connections to other brokers keep SASL mechanism %s: %s", self.node,
                      self.mechanism, exc)
            return
        name, username, password = security.mechanism, security.username, security.password

        def sasl() -> SaslClient:
            return SaslClient(name, username, password)
        self.mechanism, self.inter_broker_sasl = mechanism, sasl
        for client in self.broker.inter_broker_clients:
            client.sasl = sasl              # its next connection; the open ones stay
        log.info("broker %s: the next connections to other brokers authenticate with SASL mechanism %s",
                 self.node, mechanism)
