"""The value types of server.properties (ConfigDef.parseType and the validators kafkawire.net.config's
keys use): each parser takes ``(key, raw)`` and returns the value or raises ConfigError naming the
key, the value and the rule; and the endpoint, voter and listener parsers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kafkawire.metadata.dynamic_metric_reporters import (CLIENT_TELEMETRY_EXPORTER, JMX_REPORTER, METRIC_REPORTERS,
                                                          PROMETHEUS_REPORTER)
from kafkawire.net.admission import parse_per_ip_overrides

__all__ = ["ConfigError", "Endpoint", "QuorumVoter", "parse_listeners", "parse_voters", "parse_host_ports",
           "parse_security_protocol_map", "java_int", "PROMETHEUS_REPORTER", "CLIENT_TELEMETRY_EXPORTER"]

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1

# SocketServerConfigs.LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT: every SecurityProtocol mapped to
# itself (Kafka builds the string from a HashMap; the order here is the one its docs print).
DEFAULT_SECURITY_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# SocketServerConfigs.URI_PARSE_REGEXP, and the host/port pattern of Kafka's Utils.getHost/getPort.
_LISTENER_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")
_HOST_PORT_RE = re.compile(r"^\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$")
_LIST_SPLIT = re.compile(r"\s*,\s*")


class ConfigError(ValueError):
    """A value that breaks a rule: ``key: 'value' <rule>``; or a rule across keys."""

    def __init__(self, key: str, value, rule: str):
        self.key, self.value, self.rule = key, value, rule
        shown = "(unset)" if value is None else repr(value)
        super().__init__(f"{key}: {shown} {rule}")


@dataclass(frozen=True)
class Endpoint:
    """One entry of listeners / advertised.listeners. ``host`` None means every interface."""
    listener_name: str
    security_protocol: str
    host: str | None
    port: int

    def __str__(self):
        host = self.host or ""
        if ":" in host:
            host = f"[{host}]"
        return f"{self.listener_name}://{host}:{self.port}"


@dataclass(frozen=True)
class QuorumVoter:
    node_id: int
    host: str
    port: int


# --- value types (ConfigDef.parseType) -----------------------------------------------------------

def _short(key, raw):
    """A Java short of at least 1 (offsets.topic.replication.factor)."""
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        raise ConfigError(key, raw, "is not a number of type SHORT") from None
    if not -32768 <= value <= 32767:
        raise ConfigError(key, raw, "is out of range for type SHORT")
    if value < 1:
        raise ConfigError(key, raw, "must be at least 1")
    return value


def _int(key, raw, low=None, kind="INT"):
    """A Java int (or long with kind="LONG"), optionally at least ``low`` (ConfigDef.Range.atLeast)."""
    type_low, type_high = (INT_MIN, INT_MAX) if kind == "INT" else (LONG_MIN, LONG_MAX)
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        raise ConfigError(key, raw, f"is not a number of type {kind}") from None
    if not type_low <= value <= type_high:
        raise ConfigError(key, raw, f"is out of range for type {kind}")
    if low is not None and value < low:
        raise ConfigError(key, raw, f"must be at least {low}")
    return value


java_int = _int       # for the modules that read more keys (kafkawire.net.security)


def _int_between(key, raw, low, high):
    """A Java int within [low, high] (ConfigDef.Range.between), worded as Kafka's Range."""
    value = _int(key, raw, low)
    if value > high:
        raise ConfigError(key, raw, f"must be no more than {high}")
    return value


def _gzip_level(key, raw):
    """GZIP's levelValidator: 1 to 9, or -1 (Deflater.DEFAULT_COMPRESSION)."""
    value = _int(key, raw)
    if value != -1 and not 1 <= value <= 9:
        raise ConfigError(key, raw, "must be between 1 and 9 or equal to -1")
    return value


def _long(key, raw, low=None):
    return _int(key, raw, low, "LONG")


def _double(key, raw, low=None, high=None):
    """A Java double, optionally within [low, high] (ConfigDef.Range.between)."""
    try:
        value = float(raw.strip())
    except ValueError:
        raise ConfigError(key, raw, "is not a number of type DOUBLE") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(key, raw, f"must be between {low} and {high}" if high is not None else f"must be at least {low}")
    return value


def _bool(key, raw):
    text = raw.strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise ConfigError(key, raw, "is not a BOOLEAN: expected value to be either true or false")


def _list(raw) -> tuple[str, ...]:
    text = raw.strip()
    return tuple(_LIST_SPLIT.split(text)) if text else ()


def _string(raw):
    return raw.strip()


def _regex(key, raw) -> str:
    """A regular expression (JmxReporter.compilePredicate refuses one that does not compile)."""
    try:
        re.compile(raw)
    except re.error as exc:
        raise ConfigError(key, raw, f"is not a valid regular expression: {exc}") from None
    return raw


def _per_ip_overrides(key, raw):
    try:
        return tuple(parse_per_ip_overrides(raw).items())
    except ValueError as e:
        raise ConfigError(key, raw, f"is not a list of host:count: {e}") from None


# --- structured values ------------------------------------------------------------------------

def parse_voters(key: str, raw: str) -> tuple[QuorumVoter, ...]:
    """controller.quorum.voters: ``id@host:port,...`` (QuorumConfig.parseVoterConnections)."""
    voters, seen = [], set()
    for entry in _list(raw):
        parts = entry.split("@")
        if len(parts) != 2:
            raise ConfigError(key, entry, "is not ID@HOST:PORT")
        try:
            node_id = int(parts[0], 10)
        except ValueError:
            raise ConfigError(key, entry, "is not ID@HOST:PORT: the id is not an integer") from None
        m = _HOST_PORT_RE.match(parts[1])
        if not m:
            raise ConfigError(key, entry, "is not ID@HOST:PORT")
        port = int(m.group(2))
        if port > 65535:
            raise ConfigError(key, entry, f"is not ID@HOST:PORT: port {port} is above 65535")
        if node_id in seen:
            raise ConfigError(key, entry, f"names voter {node_id} twice")
        seen.add(node_id)
        voters.append(QuorumVoter(node_id, m.group(1), port))
    return tuple(voters)


def parse_host_ports(key: str, raw: str) -> tuple[tuple[str, int], ...]:
    """controller.quorum.bootstrap.servers: ``host:port,...`` (QuorumConfig.parseBootstrapServer)."""
    out = []
    for entry in _list(raw):
        m = _HOST_PORT_RE.match(entry)
        if not m or not m.group(1):
            raise ConfigError(key, entry, "is not HOST:PORT")
        out.append((m.group(1), int(m.group(2))))
    return tuple(out)


def parse_security_protocol_map(key: str, raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in _list(raw):
        name, sep, protocol = entry.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise ConfigError(key, entry, "is not LISTENER_NAME:SECURITY_PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(key, entry, f"names an unknown security protocol; known: {', '.join(SECURITY_PROTOCOLS)}")
        if name in out:
            raise ConfigError(key, raw, f"maps listener {name} more than once")
        out[name] = protocol
    return out


def parse_listeners(key: str, raw: str, protocols: dict[str, str]) -> tuple[Endpoint, ...]:
    """listeners / advertised.listeners (SocketServerConfigs.listenerListToEndPoints)."""
    out = []
    for entry in _list(raw):
        m = _LISTENER_RE.match(entry)
        if not m:
            raise ConfigError(key, entry, "is not NAME://HOST:PORT (unable to parse it to a broker endpoint)")
        name = m.group(1).upper()   # ListenerName.normalised
        port = int(m.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError(key, entry, f"has port {port}, outside 0..65535")
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(key, entry, f"has no security protocol for listener {name} in "
                                          f"listener.security.protocol.map")
        out.append(Endpoint(name, protocol, m.group(2) or None, port))
    return tuple(out)


# The reporters kafkawire has (kafkawire.metadata.dynamic_metric_reporters: JmxReporter accepted
# and reporting nothing; the Prometheus endpoint; the client telemetry exporter).
_REPORTERS = METRIC_REPORTERS
_HTTP_LISTENER_RE = re.compile(r"^http://\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$")


TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


def _one_of(key, raw, allowed):
    """ConfigDef.ValidString.in: one of ``allowed``, exactly (case-sensitive, as Kafka's)."""
    text = raw.strip()
    if text not in allowed:
        raise ConfigError(key, raw, f"must be one of {', '.join(allowed)}")
    return text


def _one_of_any_case(key, raw, allowed):
    """ConfigDef.CaseInsensitiveValidString.in: one of ``allowed`` in any case; the lower-case name."""
    text = raw.strip().lower()
    if text not in allowed:
        raise ConfigError(key, raw, f"must be one of {', '.join(allowed)} (in any case)")
    return text


MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


def _reporters(key, raw):
    names = _list(raw)
    for name in names:
        if name not in _REPORTERS:
            raise ConfigError(key, raw, f"names a class that could not be found: {name} "
                                        f"(kafkawire's reporters are {', '.join(_REPORTERS)})")
    return names


def _http_listener(key, raw):
    """``http://HOST:PORT``: (host or None for every interface, port)."""
    m = _HTTP_LISTENER_RE.match(raw.strip())
    if not m:
        raise ConfigError(key, raw, "is not http://HOST:PORT")
    port = int(m.group(2))
    if port > 65535:
        raise ConfigError(key, raw, f"has port {port}, outside 0..65535")
    return m.group(1) or None, port


def _roles(key, raw):
    roles = _list(raw)
    if not roles:
        raise ConfigError(key, raw, "must not be empty: give broker, controller or broker,controller")
    for role in roles:
        if role not in ("broker", "controller"):
            raise ConfigError(key, raw, f"has unknown role {role!r}; roles are broker and controller")
    if len(set(roles)) != len(roles):
        raise ConfigError(key, raw, "names a role twice")
    return roles


def _cleanup_policy(key, raw):
    """cleanup.policy's LIST, ValidList.in(compact, delete): empty is allowed (delete nothing)."""
    names = tuple(n for n in _list(raw))
    for name in names:
        if name not in ("compact", "delete"):
            raise ConfigError(key, raw, f"names {name!r}: must be compact or delete")
    return names


def _assignors(key, raw):
    """group.consumer.assignors: Kafka also takes class names of its own assignors; kafkawire
    serves its builtin ones, by name."""
    names = _names(key, raw, upper=False)
    for name in names:
        if name not in ("uniform", "range"):
            raise ConfigError(key, raw, f"names {name!r}: kafkawire offers the builtin assignors uniform and range")
    return names


SIMPLE_ASSIGNOR = "org.apache.kafka.coordinator.group.assignor.SimpleAssignor"
DEFAULT_STATE_PERSISTER = "org.apache.kafka.server.share.persister.DefaultStatePersister"
NO_OP_STATE_PERSISTER = "org.apache.kafka.server.share.persister.NoOpStatePersister"


def _share_assignors(key, raw):
    """group.share.assignors: a list without empty or repeated entries holding exactly one
    assignor (GroupCoordinatorConfig's require), Kafka's builtin ``simple`` by name or by class
    (the only one kafkawire has; Kafka would load any other class named)."""
    names = _names(key, raw, upper=False)
    if len(names) != 1:
        raise ConfigError(key, raw, f"must contain exactly one assignor, but found {len(names)}")
    if names[0] not in ("simple", SIMPLE_ASSIGNOR):
        raise ConfigError(key, raw, f"names {names[0]!r}: kafkawire offers only Kafka's builtin share group "
                                    f"assignor, simple ({SIMPLE_ASSIGNOR})")
    return ("simple",)


def _share_persister(key, raw):
    """group.share.persister.class.name (BrokerServer.createShareStatePersister): kafkawire keeps
    share-partition state as Kafka's DefaultStatePersister does (through the share coordinator);
    Kafka's no-op persister (this class, or an empty value) keeps none, and is not offered."""
    name = raw.strip()
    if name == DEFAULT_STATE_PERSISTER:
        return name
    if name in ("", NO_OP_STATE_PERSISTER):
        raise ConfigError(key, raw, f"asks for Kafka's no-op persister (share-partition state not kept); kafkawire "
                                    f"offers only {DEFAULT_STATE_PERSISTER}")
    raise ConfigError(key, raw, f"is an unknown persister: kafkawire offers only {DEFAULT_STATE_PERSISTER}")


def _names(key, raw, upper=True):
    names = tuple(n.upper() if upper else n for n in _list(raw))
    if not names or any(not n for n in names):
        raise ConfigError(key, raw, "must be a non-empty list without empty entries")
    if len(set(names)) != len(names):
        raise ConfigError(key, raw, "names a value twice")
    return names
