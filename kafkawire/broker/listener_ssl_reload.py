"""A listener's key store and trust store changed at runtime, applied as Kafka 4.3.1 applies
them (KIP-226: the channel builder's SslFactory.reconfigure): once the change is in the
committed metadata, new connections on the listener use the new stores; the connections
already open keep the TLS session they have.

What is watched, per SSL or SASL_SSL listener of the broker, and for its clients towards the
other brokers' inter-broker listener (replica fetchers, transaction markers and verification,
the share persister: Kafka registers their client channel builders as reconfigurable too): the
listener's values of SslConfigs.RECONFIGURABLE_CONFIGS (key store and trust store type,
location, passwords and PEM contents; the other ssl.* keys of an existing listener cannot be
changed dynamically), each the listener-prefixed key, else the plain one, over the node's
server.properties overridden by the dynamic cluster default and then this broker's dynamic
configs. As Kafka's DefaultSslEngineFactory.shouldBeRebuilt, a context is built again when a
value differs from the one it was built with, or when a store file it read has been modified
since; and, as Kafka, only when a config record of this broker or of the cluster default has
arrived (a ``kafka-configs --alter`` with the same location makes the broker reread a key store
rewritten in place, KAFKA-14136; a file rewritten with no alter is not picked up, since no
check of it has run). A record is noticed by the identity of the resource's config map, which
the image replaces at each record of a broker resource, one that changes no value included
(kafkawire.metadata.image ``_config``), or by its content.

The change was checked when it was accepted (kafkawire.metadata.dynamic_reconfiguration); a
context that still cannot be built (a file replaced since) is logged, and the listener keeps
its current one, as Kafka logs a reconfiguration that fails after validation.

The node's clients towards the controllers (the raft client, the channel to the active
controller: registration, heartbeats, forwarding, AlterPartition) are watched the same way when
their listener is SSL or SASL_SSL (``watch_controller_clients``, for their next connection; the
open ones keep their session), each change checked first, as SslFactory checks a client
channel builder's (no handshake: Kafka's client builders are not keystoreVerifiableUsingTruststore).

A node's controller listeners are watched the same way (kafkawire.tools.server_start), with
``check_changes``: nothing checked a change of their stores when it was accepted (a broker checks
only its own listeners, as Kafka's broker, whose DynamicBrokerConfig is not its controller's), so
it is checked here, as the controller's DynamicBrokerConfig validates each reconfigurable before
it reconfigures it: a store of another subject, fewer SubjectAltNames, a key store added or
removed (kafkawire.metadata.dynamic_ssl_reconfiguration.check) is logged and not taken.

    reloader = ListenerSslReload(static_props, node_id)
    reloader.on_metadata(image, servers, network_clients)      # after each publish
"""
from __future__ import annotations

import dataclasses
import logging
import os
import ssl

from kafkawire.metadata.dynamic_reconfiguration import merged
from kafkawire.metadata.dynamic_broker_config_table import DYNAMIC
from kafkawire.metadata.dynamic_ssl_reconfiguration import SSL_RECONFIGURABLE, SslRefused, check
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs
from kafkawire.net.config import ConfigError
from kafkawire.net.security import SslSettings, client_ssl_context, server_ssl_context, ssl_settings

__all__ = ["ListenerSslReload"]

log = logging.getLogger(__name__)

_FILES = ("ssl.keystore.location", "ssl.truststore.location")


def _modified_times(settings: SslSettings) -> tuple:
    """The store files' modification times (None: no such file, or not readable now)."""
    times = []
    for key in _FILES:
        path = settings.get(key)
        try:
            times.append(None if path is None else os.stat(path).st_mtime_ns)
        except OSError:
            times.append(None)
    return tuple(times)


def _with_reconfigured(current: SslSettings, props: dict, listener: str) -> SslSettings:
    """``current`` with the listener's RECONFIGURABLE_CONFIGS values taken from ``props`` (the
    others as they were: SslFactory.createNewSslEngineFactory copies only those)."""
    fresh = ssl_settings(props, listener)
    values, keys = dict(current.values), dict(current.keys)
    for key in SSL_RECONFIGURABLE:
        values[key] = fresh.values.get(key)
        if key in fresh.keys:
            keys[key] = fresh.keys[key]
        else:
            keys.pop(key, None)
    return SslSettings(values, keys)


def _refusal(old: SslSettings, new: SslSettings, props: dict, listener: str) -> str | None:
    """SslFactory.validateReconfiguration of the change from ``old`` to ``new`` (each value unset
    read as Kafka's default, as the channel builder reads it), else None."""
    def values(settings):
        return {k: settings.get(k) if settings.get(k) is not None else DYNAMIC[k].default for k in SSL_RECONFIGURABLE}

    def flag(name):
        text = props.get(f"listener.name.{listener.lower()}.{name}", props.get(name, "false"))
        return text.strip().lower() == "true"
    try:
        check(values(old), values(new), allow_dn_changes=flag("ssl.allow.dn.changes"),
              allow_san_changes=flag("ssl.allow.san.changes"))
    except SslRefused as exc:
        return str(exc)
    return None


class _Built:
    """The settings a context was built from, and the store files' modification times then."""

    def __init__(self, settings: SslSettings):
        self.settings = settings
        self.modified = _modified_times(settings)

    def stale(self, settings: SslSettings) -> bool:
        """DefaultSslEngineFactory.shouldBeRebuilt."""
        return settings != self.settings or _modified_times(settings) != self.modified


class ListenerSslReload:
    """The broker's listeners' TLS contexts and its inter-broker clients' one, rebuilt after a
    dynamic change of their stores (see the module docstring)."""

    def __init__(self, static_props: dict, node_id: int, inter_broker: tuple[str, SslSettings] | None = None,
                 *, check_changes: bool = False):
        """``static_props``: server.properties as read; ``inter_broker``: the inter-broker
        listener's name and the SslSettings the broker's clients towards it start with (None:
        not SSL); ``check_changes``: check a change before taking it (a controller listener's)."""
        self.check_changes = check_changes
        self.static = dict(static_props)
        self.node = str(node_id)
        self._configs: tuple = (None, None)     # the resources' config maps last seen (identity)
        self._contents: tuple = (None, None)    # ... and what they held (a map changed in place)
        self._servers: dict[int, _Built] = {}     # id(server) -> what its context was built from
        self._client = None if inter_broker is None else (inter_broker[0], _Built(inter_broker[1]))
        self.client_context = None               # the inter-broker clients' current context, once rebuilt
        self._controller = None                  # (listener, _Built, its clients now): watch_controller_clients
        self.reloads = 0                          # contexts swapped so far

    def watch_controller_clients(self, listener: str, settings: SslSettings, clients) -> None:
        """Also rebuild the context of the node's clients towards the controllers (the raft client,
        the channel to the active controller) on ``listener``, the first controller listener,
        which start with ``settings``; ``clients()``: those clients now. Each change is checked
        first, whoever accepted it: Kafka's DynamicBrokerConfig validates a reconfigurable (here
        NodeToControllerChannelManager's client channel builder) before it reconfigures it."""
        self._controller = (listener, _Built(settings), clients)

    def on_metadata(self, image, servers, clients=()) -> None:
        """After a publish: rebuild what a config record of this broker or the cluster default
        made stale. ``servers``: the broker's KafkaServers; ``clients``: its NetworkClients
        towards the inter-broker listener."""
        for server in servers:          # what each listener's context was built from, from its start
            if server.ssl_context is not None and id(server) not in self._servers:
                self._servers[id(server)] = _Built(server.security.ssl)
        if image is None:
            return
        configs = tuple(image.configs.get((BROKER_RESOURCE, name)) for name in (self.node, ""))
        contents = tuple(None if c is None else dict(c) for c in configs)
        if all(a is b for a, b in zip(configs, self._configs)) and contents == self._contents:
            return
        self._configs, self._contents = configs, contents
        props = merged(self.static, dynamic_broker_configs(image, ""), dynamic_broker_configs(image, self.node))
        for server in servers:
            if server.ssl_context is not None:
                self._reload_server(server, props)
        if self._client is not None:
            self._reload_clients(props, clients)
        if self._controller is not None:
            self._reload_controller_clients(props)

    def forget(self, server) -> None:
        """A listener removed (kafkawire.broker.dynamic_listeners): its entry goes, so that a
        server made later at the same id is recorded as built."""
        self._servers.pop(id(server), None)

    def _reload_server(self, server, props: dict) -> None:
        built = self._servers[id(server)]
        settings = _with_reconfigured(built.settings, props, server.listener_name)
        if not built.stale(settings):
            return
        refusal = _refusal(built.settings, settings, props, server.listener_name) if self.check_changes else None
        if refusal is not None:
            log.error("listener %s: the changed key or trust store is refused, the current one stays: %s",
                      server.listener_name, refusal)
            return
        security = dataclasses.replace(server.security, ssl=settings)
        try:
            context = server_ssl_context(security)
        except (ConfigError, ssl.SSLError) as exc:
            log.error("listener %s: the changed key or trust store is not used, the current one stays: %s",
                      server.listener_name, exc)
            return
        server.security, server.ssl_context = security, context       # for the next accepted connection
        self._servers[id(server)] = _Built(settings)
        self.reloads += 1
        log.info("listener %s: new connections use the changed key store %s and trust store %s",
                 server.listener_name, settings.get("ssl.keystore.location") or "(PEM)",
                 settings.get("ssl.truststore.location") or "(PEM or default)")

    def _reload_clients(self, props: dict, clients) -> None:
        listener, built = self._client
        rebuilt = self._rebuilt_client_context(built, props, listener, "other brokers", check_first=False)
        if rebuilt is not None:
            self._client, self.client_context = (listener, rebuilt[0]), rebuilt[1]
            for client in clients:
                client.ssl_context = rebuilt[1]   # its next connection; the open ones stay

    def _reload_controller_clients(self, props: dict) -> None:
        listener, built, clients = self._controller
        rebuilt = self._rebuilt_client_context(built, props, listener, "the controllers", check_first=True)
        if rebuilt is not None:
            self._controller = (listener, rebuilt[0], clients)
            for client in clients():
                client.ssl_context = rebuilt[1]   # its next connection; the open ones stay

    def _rebuilt_client_context(self, built: _Built, props: dict, listener: str, towards: str,
                                *, check_first: bool) -> tuple[_Built, ssl.SSLContext] | None:
        """The client context of the connections to ``towards`` on ``listener`` rebuilt, when
        ``props`` made what it was ``built`` from stale, and what it is now built from (counted
        in ``reloads``; the caller hands it to the clients). None when nothing changed, or when
        the change is refused (checked first when ``check_first``) or cannot be built: that is
        logged, and the clients keep their current context."""
        settings = _with_reconfigured(built.settings, props, listener)
        if not built.stale(settings):
            return None
        refusal = _refusal(built.settings, settings, props, listener) if check_first else None
        if refusal is not None:
            log.error("the connections to %s on listener %s keep the current key and trust stores: "
                      "the changed ones are refused: %s", towards, listener, refusal)
            return None
        try:
            context = client_ssl_context(settings)
        except (ConfigError, ssl.SSLError) as exc:
            log.error("the connections to %s on listener %s keep the current key and trust stores: %s",
                      towards, listener, exc)
            return None
        self.reloads += 1
        log.info("the next connections to %s on listener %s use the changed key store %s and trust store %s",
                 towards, listener, settings.get("ssl.keystore.location") or "(PEM or none)",
                 settings.get("ssl.truststore.location") or "(PEM or default)")
        return _Built(settings), context
