"""The second half of Kafka 4.3.1's DynamicBrokerConfig.validate, after validateConfigs
(kafkawire.metadata.dynamic_broker_configs): the broker's KafkaConfig rebuilt with the change
(its cross-key checks) and the validateReconfiguration of the reconfigurable components a KRaft
broker registers, with Kafka's messages (the broker answers each with INVALID_REQUEST).

"The current config" is what Kafka's broker would hold with the same settings: the node's
server.properties (Kafka's staticBrokerConfigs) overridden by the dynamic cluster default and
then this broker's own dynamic configs, as the metadata image holds them. kafkawire's broker has
no request-handler or network thread pools to resize, and runs one log cleaner thread; it
answers as a Kafka broker configured as it is would, so that a change Kafka takes is taken and
one Kafka refuses is refused, whatever kafkawire does with the value.

The rebuilt KafkaConfig (its GroupCoordinatorConfig: a group type's assignment interval within
its bounds; then KafkaConfig.validateValues, in its order, the messages of Scala's ``require``
starting "requirement failed: "): log.roll.ms at least 1, log.roll.jitter.ms at least 0,
log.retention.ms -1 or at least 1, log.cleaner.dedupe.buffer.size over log.cleaner.threads
above 1 MiB (threads 0: Java's "/ by zero"), the listeners parsed against the effective
listener.security.protocol.map (itself parsed as Csv.parseCsvMap parses it, each protocol
named), the controller listeners among the listeners (combined mode) or not among them and
mapped (broker only), a broker listener advertised, the inter-broker listener mapped and
advertised, the advertised listeners among the listeners, cordoned.log.dirs within log.dirs, no
advertised 0.0.0.0, the inter-broker SASL mechanism among the inter-broker listener's enabled
ones, max.connections.per.ip 0 only with overrides.

Then, when a watched config changed, each component's check in the order a KRaft broker
registers them; a refusal is wrapped as Kafka wraps it:
``Invalid value org.apache.kafka.common.config.ConfigException: <why> for configuration Invalid
dynamic configuration`` (Kafka's ConfigException(name, value) given the cause as the value):
- the channel to the controllers: its client channel builder on the first controller listener;
- per data-plane listener, its connection quota (max.connections and
  max.connection.creation.rate with the listener's prefix override: more than 0), its
  network threads (num.network.threads: at most double, at least half the current) and, for an
  SSL or SASL_SSL listener, its channel builder's check of a changed key or trust store
  (kafkawire.metadata.dynamic_ssl_reconfiguration);
- DynamicMetricsReporters: each class of a changed metric.reporters loads
  (kafkawire.metadata.dynamic_metric_reporters);
- BrokerDynamicThreadPool: num.io.threads, num.replica.fetchers,
  num.recovery.threads.per.data.dir, background.threads at most double, at least half;
- DynamicLogConfig: log.local.retention.ms/bytes against log.retention.ms/bytes, cordoned.log.dirs;
- DynamicListenerConfig: the advertised listeners kept, the existing listeners' protocol and
  their non-reconfigurable listener configs unchanged;
- DynamicRemoteLogConfig: the remote log manager's four thread pools at most double, at least half;
- the LogCleaner (when log.cleaner.enable): log.cleaner.threads at most double, at least half.

    check({"num.io.threads": "17"}, static={...}, default={}, broker={}, per_broker=True)
    # raises ConfigValueError("Invalid value org.apache...: ... double the current value 8 ...")
"""
from __future__ import annotations

import functools
import ipaddress
import re

from .config_def import INT_MAX, INT_MIN, ConfigValueError
from .dynamic_broker_config_table import ALL_NAMES, DYNAMIC, DYNAMIC_SECURITY, RECONFIGURABLE, STATIC_DEFAULTS
from . import dynamic_metric_reporters, dynamic_ssl_reconfiguration
from .dynamic_broker_configs import parse_value
from .java_text import java_hashset_order
from .scala_text import scala_set, scala_set_order

__all__ = ["check", "merged"]

_WRAPPED = "Invalid value org.apache.kafka.common.config.ConfigException: {} for configuration Invalid dynamic configuration"
_REMOTE_THREADS = ("remote.log.reader.threads", "remote.log.manager.copier.thread.pool.size",
                   "remote.log.manager.expiration.thread.pool.size", "remote.log.manager.follower.thread.pool.size")
_LISTENER = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})      # SecurityProtocol
# DynamicBrokerConfig.brokerConfigSynonyms (without listener overrides), what overrideProps drops
_SYNONYMS = (("log.roll.ms", "log.roll.hours"), ("log.roll.jitter.ms", "log.roll.jitter.hours"),
             ("log.retention.ms", "log.retention.minutes", "log.retention.hours"))
_FLUSH_SYNONYMS = ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")     # only from the first
_MIB = 1024 * 1024


class _Refused(Exception):
    """A reconfigurable component's ConfigException: wrapped as "Invalid dynamic configuration"."""


def merged(static: dict[str, str], *overrides: dict[str, str]) -> dict[str, str]:
    """DynamicBrokerConfig.overrideProps: ``static`` overridden by each of ``overrides`` in turn,
    a key's synonyms dropped first (log.roll.ms replaces a static log.roll.hours)."""
    props = dict(static)
    for override in overrides:
        for name, value in override.items():
            for synonym in _synonyms(name):
                props.pop(synonym, None)
            props[name] = value
    return props


def _synonyms(name: str) -> tuple[str, ...]:
    if name == _FLUSH_SYNONYMS[0]:
        return _FLUSH_SYNONYMS
    return next((names for names in _SYNONYMS if name in names), (name,))


def check(props: dict[str, str], *, static: dict[str, str], default: dict[str, str], broker: dict[str, str],
          per_broker: bool, tls_handshake=None) -> None:
    """DynamicBrokerConfig.validate after validateConfigs: ``props`` the resource's configs after
    the change (already checked by dynamic_broker_configs.validate), ``static`` the node's
    server.properties, ``default`` and ``broker`` the stored dynamic cluster default and this
    broker's dynamic configs (as DynamicBrokerConfig.fromPersistentProps keeps them);
    ``tls_handshake``: kafkawire.net.ssl_rotation.handshake_refusal (None: not made)."""
    current = _Config(merged(static, default, broker))
    new = _Config(merged(static, default, props) if per_broker else merged(static, props, broker))
    new.validate_values()
    changed = {n for n, v in new.props.items() if current.props.get(n) != v} | (current.props.keys() - new.props.keys())
    if not changed:
        return
    try:
        _check_components(current, new, changed, tls_handshake)
    except _Refused as exc:
        raise ConfigValueError(_WRAPPED.format(exc)) from None


def _check_components(current: _Config, new: _Config, changed: set[str], tls_handshake) -> None:
    """The components in the order a KRaft broker registers them: the Reconfigurables (each
    data-plane listener's connection quota, then its acceptor) before the BrokerReconfigurables;
    first the channel to the controllers' client channel builder (no handshake), made before them."""
    for listener in current.controller_listener_names()[:1]:
        _check_channel_builder(current, new, listener, None)
    for listener in current.data_plane_listener_names():
        _check_listener_quota(current, new, listener)
        _check_network_threads(current, new, listener)
        _check_channel_builder(current, new, listener, tls_handshake)
    if "metric.reporters" in changed:
        refused = dynamic_metric_reporters.refusal(new.get("metric.reporters"), sorted(
            n for n, v in new.props.items() if current.props.get(n) != v))
        if refused is not None:
            raise _Refused(refused)
    if changed & RECONFIGURABLE["thread_pool"]:
        _check_thread_counts(current, new, [n for n in _values_order() if n in RECONFIGURABLE["thread_pool"]])
    if changed & RECONFIGURABLE["log"]:
        _check_log_config(new)
    if changed & RECONFIGURABLE["listener"]:
        _check_listeners(current, new)
    if changed & RECONFIGURABLE["remote_log"]:
        _check_thread_counts(current, new, [n for n in _values_order() if n in _REMOTE_THREADS])
    if current.get("log.cleaner.enable") and changed & RECONFIGURABLE["cleaner"]:
        _check_cleaner_threads(current.get("log.cleaner.threads"), new.get("log.cleaner.threads"))


def _check_listener_quota(current: _Config, new: _Config, listener: str) -> None:
    """ConnectionQuotas.ListenerConnectionQuota.validateReconfiguration."""
    watched = RECONFIGURABLE["listener_quota"]
    if all(current.for_listener(listener, n) == new.for_listener(listener, n) for n in watched):
        return
    for name in ("max.connections", "max.connection.creation.rate"):
        value = new.for_listener(listener, name)
        if value <= 0:
            raise _Refused(f"Invalid {name} {value}")


def _check_network_threads(current: _Config, new: _Config, listener: str) -> None:
    """DataPlaneAcceptor.validateReconfiguration: the listener's processors are its current
    num.network.threads."""
    name = "num.network.threads"
    _thread_count(name, new.for_listener(listener, name), current.for_listener(listener, name))


def _check_channel_builder(current: _Config, new: _Config, listener: str, tls_handshake) -> None:
    """The listener's SslChannelBuilder or SaslChannelBuilder (SASL_SSL)."""
    try:
        dynamic_ssl_reconfiguration.check_listener(current, new, listener, tls_handshake)
    except dynamic_ssl_reconfiguration.SslRefused as exc:
        raise _Refused(str(exc)) from None


def _check_thread_counts(current: _Config, new: _Config, names: list[str]) -> None:
    """DynamicThreadPool.validateReconfiguration, DynamicRemoteLogConfig.validateReconfiguration."""
    for name in names:
        _thread_count(name, new.get(name), current.get(name))


def _thread_count(name: str, new: int, old: int) -> None:
    if new == old:
        return
    why = f"Dynamic thread count update validation failed for {name}={new}"
    if new <= 0:
        raise _Refused(f"{why}, value should be at least 1")
    if new < old // 2:
        raise _Refused(f"{why}, value should be at least half the current value {old}")
    if new > old * 2:
        raise _Refused(f"{why}, value should not be greater than double the current value {old}")


def _check_cleaner_threads(old: int, new: int) -> None:
    """LogCleaner.validateReconfiguration (its current threads: the current config's)."""
    if new < 1:
        raise _Refused("Log cleaner threads should be at least 1")
    if new < old // 2:
        raise _Refused(f"Log cleaner threads cannot be reduced to less than half the current value {old}")
    if new > old * 2:
        raise _Refused(f"Log cleaner threads cannot be increased to more than double the current value {old}")


def _check_log_config(new: _Config) -> None:
    """DynamicLogConfig.validateReconfiguration: local retention within retention, cordoned dirs."""
    for kind, retention, local in (("ms", new.retention_ms(), new.get("log.local.retention.ms")),
                                   ("bytes", new.get("log.retention.bytes"), new.get("log.local.retention.bytes"))):
        limited = retention != -1 if kind == "ms" else retention > -1
        retention_name = "log.retention.ms" if kind == "ms" else "log.retention.bytes"
        if limited and local != -2:
            if local == -1:
                raise _Refused(f"Invalid value -1 for configuration log.local.retention.{kind}: Value must not be -1 "
                               f"as {retention_name} value is set as {retention}.")
            if local > retention:
                raise _Refused(f"Invalid value {local} for configuration log.local.retention.{kind}: Value must not "
                               f"be more than {retention_name} property value: {retention}")
    cordoned, log_dirs = new.get("cordoned.log.dirs"), new.log_dirs()
    if "*" in cordoned:          # AbstractKafkaConfig.cordonedLogDirs: "*" is every log directory
        cordoned = list(log_dirs)
    for directory in cordoned:
        if directory not in log_dirs:
            raise _Refused(f"Invalid value [{', '.join(cordoned)}] for configuration cordoned.log.dirs: Invalid entry "
                           f"in cordoned.log.dirs: {directory}. All cordoned log dirs must be entries of log.dirs or "
                           f"log.dir.")


def _check_listeners(current: _Config, new: _Config) -> None:
    """DynamicListenerConfig.validateReconfiguration."""
    new_names = [name for name, _, _ in new.listeners()]
    old_advertised = [name for name, _, _ in current.advertised_broker_listeners()]
    if not set(old_advertised) <= set(new_names):
        raise _Refused(f"Advertised listeners '{scala_set(old_advertised)}' must be a subset of listeners "
                       f"'{scala_set(new_names)}'")
    old_names = [name for name, _, _ in current.listeners()]
    old_protocols, new_protocols = current.protocols(), new.protocols()
    kept = set(old_names)
    for name in [n for n in scala_set_order(new_names) if n in kept]:     # newListeners.intersect(old)
        if current.immutable_listener_configs(name) != new.immutable_listener_configs(name):
            raise _Refused(f"Configs cannot be updated dynamically for existing listener ListenerName({name}), "
                           f"restart broker or create a new listener for update")
        if old_protocols.get(name) != new_protocols.get(name):
            raise _Refused(f"Security protocol cannot be updated for existing listener ListenerName({name})")


class _Config:
    """A KafkaConfig's values from its string properties: the dynamic keys as the dynamic ConfigDef
    parses them (their values have passed it), the few static keys read here with KafkaConfig's
    defaults."""

    def __init__(self, props: dict[str, str]):
        self.props = props

    def get(self, name: str):
        text = self.props.get(name)
        if name in DYNAMIC:
            key = DYNAMIC[name]
            if text is None:
                text = key.default
            return None if text is None else parse_value(name, key, text)
        if text is None:
            text = STATIC_DEFAULTS[name]
        if text is None:
            return None
        if name == "log.cleaner.enable":
            return text.strip().lower() == "true"
        if name in ("log.roll.hours", "log.roll.jitter.hours", "log.retention.minutes", "log.retention.hours") or (
                name.endswith(".assignment.interval.ms")):
            return _static_int(name, text)
        if name in ("advertised.listeners", "controller.listener.names", "process.roles", "log.dirs"):
            return [] if not text.strip() else [p.strip() for p in re.split(r"\s*,\s*", text.strip())]
        return text.strip()

    def for_listener(self, listener: str, name: str):
        """KafkaConfig.valuesWithPrefixOverride(listener prefix).get(name)."""
        override = f"listener.name.{listener.lower()}.{name}"
        if override in self.props:
            return parse_value(override, DYNAMIC[name], self.props[override])
        return self.get(name)

    def listener_text(self, listener: str, name: str) -> str | None:
        """A dynamic STRING or PASSWORD key's value for the listener (its prefixed override, else
        the key, else the default), trimmed as ConfigDef parses it."""
        text = self.props.get(f"listener.name.{listener.lower()}.{name}", self.props.get(name, DYNAMIC[name].default))
        return None if text is None else text.strip()

    def listener_flag(self, listener: str, name: str) -> bool:
        """A static BOOLEAN key for the listener (ssl.allow.dn.changes: false unless set)."""
        text = self.props.get(f"listener.name.{listener.lower()}.{name}", self.props.get(name, "false"))
        return text.strip().lower() == "true"

    def retention_ms(self) -> int:
        """KafkaConfig.logRetentionTimeMillis."""
        millis = self.get("log.retention.ms")
        if millis is None:
            minutes = self.get("log.retention.minutes")
            millis = minutes * 60_000 if minutes is not None else self.get("log.retention.hours") * 3_600_000
        return -1 if millis < 0 else millis

    def log_dirs(self) -> list[str]:
        return self.get("log.dirs") or [self.get("log.dir")]

    def controller_listener_names(self) -> list[str]:
        return self.get("controller.listener.names") or []

    def protocols(self) -> dict[str, str]:
        """KafkaConfig.effectiveListenerSecurityProtocolMap (a listener name -> its protocol)."""
        return dict(self._protocols)

    @functools.cached_property
    def _protocols(self) -> dict[str, str]:
        protocols = _protocol_map(self.get("listener.security.protocol.map") or "")
        if "listener.security.protocol.map" not in self.props:
            names = self.controller_listener_names() + [_listener_name(e) for e in self.get("listeners")]
            if not any(_is_ssl_or_sasl(n) for n in names):
                protocols.update({n.upper(): "PLAINTEXT" for n in self.controller_listener_names()})
        return protocols

    def listeners(self) -> list[tuple[str, str | None, int]]:
        return self._listeners

    @functools.cached_property
    def _listeners(self) -> list[tuple[str, str | None, int]]:
        return _endpoints(self.get("listeners"), self._protocols)

    def data_plane_listener_names(self) -> list[str]:
        controller = set(self.controller_listener_names())
        return [name for name, _, _ in self.listeners() if name not in controller]

    def inter_broker_listener(self) -> str:
        """KafkaConfig.interBrokerListenerName: inter.broker.listener.name, else the listener named
        as security.inter.broker.protocol."""
        name = self.get("inter.broker.listener.name")
        if name is None:
            return self.get("security.inter.broker.protocol").upper()
        if name.upper() not in self.protocols():
            raise ConfigValueError(f"Listener with name {name.upper()} defined in inter.broker.listener.name not "
                                   f"found in listener.security.protocol.map.")
        return name.upper()

    def advertised_controller_names(self) -> set[str]:
        """The names of KafkaConfig.effectiveAdvertisedControllerListeners that advertised.listeners
        gives (the others are the listeners'). Its advertised 0.0.0.0 check is not made here: a
        dynamic change touches neither advertised.listeners nor controller.listener.names, and
        Kafka's broker does not start with one."""
        advertised = self.get("advertised.listeners")
        endpoints = [] if advertised is None else _endpoints(advertised, self.protocols(), False)
        return {name for name, _, _ in endpoints if name in {n.upper() for n in self.controller_listener_names()}}

    def advertised_broker_listeners(self) -> list[tuple[str, str | None, int]]:
        """KafkaConfig.effectiveAdvertisedBrokerListeners."""
        advertised = self.get("advertised.listeners")
        endpoints = self.listeners() if advertised is None else _endpoints(advertised, self.protocols(), False)
        controller = set(self.controller_listener_names())
        return [e for e in endpoints if e[0] not in controller]

    def immutable_listener_configs(self, listener: str) -> dict[str, str]:
        """DynamicListenerConfig's immutableListenerConfigs: the listener's prefixed configs but the
        reconfigurable ones."""
        return self._immutable_by_listener.get(listener.lower(), {})

    @functools.cached_property
    def _immutable_by_listener(self) -> dict[str, dict[str, str]]:
        """listener name (lower case, as its config prefix) -> its prefixed configs but the
        reconfigurable ones, in one pass over the configs."""
        skipped = DYNAMIC_SECURITY | RECONFIGURABLE["listener_quota"] | RECONFIGURABLE["network_threads"]
        grouped: dict[str, dict[str, str]] = {}
        for name, value in self.props.items():
            if name.startswith("listener.name."):
                listener, dot, rest = name[len("listener.name."):].partition(".")
                if dot and rest not in skipped:
                    grouped.setdefault(listener, {})[rest] = value
        return grouped

    def validate_values(self) -> None:
        """The KafkaConfig constructor's checks a dynamic key takes part in, in its order:
        GroupCoordinatorConfig's (a group type's assignment interval within its bounds), then
        KafkaConfig.validateValues'."""
        for kind in ("consumer", "share", "streams"):
            name = f"group.{kind}.assignment.interval.ms"
            low, high = (f"group.{kind}.{bound}.assignment.interval.ms" for bound in ("min", "max"))
            if self.get(high) >= self.get(low):            # else the static bounds fail first, unchanged
                if self.get(name) < self.get(low):
                    raise ConfigValueError(f"{name} must be greater than or equal to {low}")
                if self.get(name) > self.get(high):
                    raise ConfigValueError(f"{name} must be less than or equal to {high}")
        roll = self.get("log.roll.ms")
        _require((roll if roll is not None else 3_600_000 * self.get("log.roll.hours")) >= 1,
                 "log.roll.ms must be greater than or equal to 1")
        jitter = self.get("log.roll.jitter.ms")
        _require((jitter if jitter is not None else 3_600_000 * self.get("log.roll.jitter.hours")) >= 0,
                 "log.roll.jitter.ms must be greater than or equal to 0")
        retention = self.retention_ms()
        _require(retention >= 1 or retention == -1, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
        threads = self.get("log.cleaner.threads")
        if threads == 0:
            raise ConfigValueError("/ by zero")            # Java's long division by an int 0
        _require(_java_div(self.get("log.cleaner.dedupe.buffer.size"), threads) > _MIB,
                 "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
        self._validate_listeners()
        self._validate_connection_limits()

    def _validate_listeners(self) -> None:
        advertised = [name for name, _, _ in self.advertised_broker_listeners()]
        roles = self.get("process.roles") or []
        listener_names = [name for name, _, _ in self.listeners()]
        if roles == ["broker"]:
            controller_names = self.controller_listener_names()
            _require(not any(n in listener_names for n in controller_names),
                     "controller.listener.names must not contain a value appearing in the 'listeners' configuration "
                     "when running KRaft with just the broker role")
            protocols = self.protocols()
            for name in controller_names:
                if name.upper() not in protocols:
                    raise ConfigValueError(
                        f"Controller listener with name {name.upper()} defined in controller.listener.names not found "
                        f"in listener.security.protocol.map  (an explicit security mapping for each controller "
                        f"listener is required if listener.security.protocol.map is non-empty, or if there are "
                        f"security protocols other than PLAINTEXT in use)")
        if "controller" in roles:
            advertised_controllers = self.advertised_controller_names()
            _require(any(n in listener_names or n in advertised_controllers for n in self.controller_listener_names()),
                     "controller.listener.names must contain at least one value appearing in the 'listeners' "
                     "configuration when running the KRaft controller role")
            _require(all(n in listener_names for n in self.controller_listener_names()),
                     "controller.listener.names must only contain values appearing in the 'listeners' "
                     "configuration when running the KRaft controller role")
        if "broker" in roles:
            _require(bool(advertised), "There must be at least one broker advertised listener. Perhaps all listeners "
                                       "appear in controller.listener.names?")
            inter_broker = self.inter_broker_listener()
            shown = ",".join(scala_set_order(advertised))
            _require(inter_broker in advertised, f"inter.broker.listener.name must be a listener name defined in "
                                                 f"advertised.listeners. The valid options based on currently "
                                                 f"configured listeners are {shown}")
            _require(set(advertised) <= set(listener_names),
                     f"advertised.listeners listener names must be equal to or a subset of the ones defined in "
                     f"listeners. Found {shown}. The valid options based on the current configuration are "
                     f"{','.join(scala_set_order(listener_names))}")
            self._validate_cordoned_log_dirs()
        _require(all(host != "0.0.0.0" for _, host, _ in self.advertised_broker_listeners()),
                 "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.")
        inter_broker = self.inter_broker_listener()
        if self.protocols().get(inter_broker) in ("SASL_PLAINTEXT", "SASL_SSL"):
            enabled = self.for_listener(inter_broker, "sasl.enabled.mechanisms") or []
            _require(self.get("sasl.mechanism.inter.broker.protocol") in enabled,
                     "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is "
                     "used for inter-broker communication")

    def _validate_cordoned_log_dirs(self) -> None:
        cordoned = self.get("cordoned.log.dirs")
        if "*" in cordoned:
            _require(len(cordoned) == 1, "When cordoned.log.dirs is set to *, it must not contain other values")
        else:
            missing = [d for d in cordoned if d not in self.log_dirs()]
            _require(not missing, f"All entries in cordoned.log.dirs must be present in log.dirs or log.dir. "
                                  f"Missing entries : {', '.join(missing)}")

    def _validate_connection_limits(self) -> None:
        """KafkaConfig.maxConnectionsPerIpOverrides (the map parsed, each count an Integer) read
        by the zero check and then by the host pattern check."""
        name = "max.connections.per.ip.overrides"
        overrides = _csv_map(name, self.get(name) or "")
        for count in overrides.values():
            if re.fullmatch(r"[+-]?[0-9]+", count) is None or not INT_MIN <= int(count) <= INT_MAX:
                raise ConfigValueError(f'For input string: "{count}"')          # Integer.parseInt
        if self.get("max.connections.per.ip") == 0:
            _require(bool(overrides), "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides "
                                      "property is set.")
        invalid = [host for host in overrides if re.fullmatch(r"[0-9a-zA-Z\-%._:]*", host) is None]
        if invalid:                                 # Utils.validHostPattern; an IllegalArgumentException
            raise ConfigValueError(f"{name} contains invalid addresses : {','.join(invalid)}")


def _static_int(name: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ConfigValueError(f"Invalid value {text} for configuration {name}: Not a number of type INT") from None


def _require(condition: bool, message: str) -> None:
    """Scala's require: an IllegalArgumentException whose message Kafka's broker answers."""
    if not condition:
        raise ConfigValueError(f"requirement failed: {message}")


def _java_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _csv_map(name: str, text: str) -> dict[str, str]:
    """AbstractKafkaConfig.getMap (Csv.parseCsvMap) with its message, in the HashMap's order."""
    parsed: dict[str, str] = {}
    if text:
        entries = re.split(r"\s*,\s*", text)
        while len(entries) > 1 and entries[-1] == "":           # String.split drops trailing empty strings
            entries.pop()
        if entries == [""] and text:                          # all of them when the text is separators only
            entries = []
        for entry in entries:
            if ":" not in entry:                              # substring(0, lastIndexOf(":")) fails
                raise ConfigValueError(f"Error parsing configuration property '{name}': begin 0, end -1, length "
                                       f"{len(entry)}")
            key, _, value = entry.rpartition(":")
            parsed[key.strip()] = value.strip()
    return {key: parsed[key] for key in java_hashset_order(parsed)}


def _protocol_map(text: str) -> dict[str, str]:
    """AbstractKafkaConfig.getMap (Csv.parseCsvMap) then each listener name normalised and its
    protocol named, in the parsed HashMap's order, with Kafka's messages."""
    parsed = _csv_map("listener.security.protocol.map", text)
    protocols: dict[str, str] = {}
    for name in parsed:
        protocol = parsed[name]
        if protocol.upper() not in _PROTOCOLS:
            raise ConfigValueError(f"Invalid security protocol `{protocol}` defined in listener.security.protocol.map")
        if name.upper() in protocols:
            raise ConfigValueError(f"Duplicate key ListenerName({name.upper()}) (attempted merging values "
                                   f"{protocols[name.upper()]} and {protocol.upper()})")
        protocols[name.upper()] = protocol.upper()
    return protocols


def _listener_name(entry: str) -> str:
    return entry.split("://", 1)[0].upper()


def _is_ssl_or_sasl(name: str) -> bool:
    return name.upper() in ("SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _endpoints(entries: list[str], protocols: dict[str, str], distinct_ports: bool = True):
    """AbstractKafkaConfig.listenerListToEndPoints: (name, host or None, port) of each entry, each
    name once and (for ``listeners``) each port once but for an IPv4 and an IPv6 host."""
    shown = f"[{', '.join(entries)}]"
    endpoints = []
    try:
        for entry in entries:
            match = _LISTENER.fullmatch(entry)
            if match is None:
                raise ConfigValueError(f"Unable to parse {entry} to a broker endpoint")
            name = match.group(1).upper()
            if name not in protocols:
                raise ConfigValueError(f"No security protocol defined for listener {name}")
            port = int(match.group(3))
            if not INT_MIN <= port <= INT_MAX:
                raise ConfigValueError(f'For input string: "{match.group(3)}"')       # Integer.parseInt
            endpoints.append((name, match.group(2) or None, port))
        if len({e[0] for e in endpoints}) != len(endpoints):
            raise ConfigValueError(f"Each listener must have a different name, listeners: {shown}")
        if distinct_ports:
            _check_ports(endpoints, shown)
    except ConfigValueError as exc:
        raise ConfigValueError(f"Error creating broker listeners from '{shown}': {exc}") from None
    return endpoints


def _check_ports(endpoints: list[tuple[str, str | None, int]], shown: str) -> None:
    """AbstractKafkaConfig.validate: listeners sharing a port (0 aside), by port in the HashMap
    order Collectors.groupingBy leaves them."""
    by_port: dict[int, list[tuple[str, str | None, int]]] = {}
    for endpoint in endpoints:
        if endpoint[2] != 0:
            by_port.setdefault(endpoint[2], []).append(endpoint)
    for port in _java_int_hashmap_order(list(by_port)):
        group = by_port[port]
        if len(group) < 2:
            continue
        with_ip = [e for e in group if e[1] is not None and _ip_version(e[1]) is not None]
        without_ip = [e for e in group if e not in with_ip]
        if len(without_ip) > 1:
            raise ConfigValueError(f"Each listener must have a different port, listeners: {shown}")
        if not with_ip:
            continue
        if len(with_ip) == 2:
            message = (f"If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, "
                       f"listeners: {shown}, port: {port}")
            if {_ip_version(with_ip[0][1]), _ip_version(with_ip[1][1])} != {4, 6} or without_ip:
                raise ConfigValueError(message)
            continue
        raise ConfigValueError(f"Each listener must have a different port unless exactly one listener has an IPv4 "
                               f"address and the other IPv6 address, listeners: {shown}, port: {port}")


def _ip_version(host: str) -> int | None:
    """4 or 6 for a host that is an IP address (commons-validator's InetAddressValidator), else None."""
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def _java_int_hashmap_order(keys: list[int]) -> list[int]:
    """A HashMap<Integer, _>'s iteration order of ``keys`` (Integer.hashCode is the value)."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2
    return sorted(keys, key=lambda k: (k ^ (k >> 16)) & (capacity - 1))


@functools.cache
def _values_order() -> tuple[str, ...]:
    """The iteration order of a KafkaConfig's values() (a java.util.HashMap of every key): by
    hash bucket of a table sized for them."""
    return tuple(java_hashset_order(sorted(ALL_NAMES)))
