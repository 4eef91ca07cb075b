"""A dynamic broker config change checked as Kafka 4.3.1's broker checks it before forwarding
it to the controller (ConfigAdminManager.preprocess -> DynamicBrokerConfig.validate), with
Kafka's messages (the broker answers each with INVALID_REQUEST):

1. a KafkaConfig name that is not dynamic: "Cannot update these configs dynamically: [a, b]";
2. an SSL key set without a listener prefix: "These security configs can be dynamically updated
   only per-listener using the listener prefix: [...]";
3. each dynamic key's value parsed as its ConfigDef type and checked by its validator, in the
   dynamic ConfigDef's order (a ``listener.name.<l>.`` key as its base name): "Invalid value x
   for configuration n: Not a number of type INT", "...: Value must be at least 1", ...;
4. at the cluster default (an empty resource name), a per-broker key (listeners, SSL and SASL
   listener keys, ``listener.name.*`` but for max.connections, max.connection.creation.rate and
   num.network.threads): "Cannot update these configs at default cluster level, broker id must
   be specified: [...]".

The names and validators come from Kafka's jars (kafkawire.metadata.dynamic_broker_config_table,
generated). Names Kafka does not know (a plugin's own keys) pass, as in Kafka. A set prints in
Java's HashSet order (by String.hashCode bucket), as Kafka's message does.

Not checked here: a CLASS value's class (Kafka loads it; kafkawire has no classpath: documented in
docs/differences.md). The rest of DynamicBrokerConfig.validate, the checks of the KafkaConfig
rebuilt with the change and of the reconfigurable components (thread pools that may at most
double or halve, listeners that must keep the advertised ones, ...: "Invalid dynamic
configuration"), is kafkawire.metadata.dynamic_reconfiguration's.

    validate({"num.io.threads": "x"}, per_broker=True)   # raises ConfigValueError
"""
from __future__ import annotations

import re

from .config_def import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, ConfigValueError, invalid, parse_number
from .dynamic_broker_config_table import (ALL_NAMES, CLUSTER_LEVEL_LISTENER, DYNAMIC, DYNAMIC_SECURITY, LIST_DEFAULTS,
                                          PER_BROKER, DynamicKey)
from .java_text import java_double, java_hashset_order, java_split

__all__ = ["validate", "props_after", "parse_value", "ConfigValueError", "InvalidConfiguration"]

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


class InvalidConfiguration(ConfigValueError):
    """InvalidConfigurationException: answered INVALID_CONFIG (the others INVALID_REQUEST)."""

_LISTENER_KEY = re.compile(r"listener\.name\.[^.]*\.(.*)", re.DOTALL)
_NON_DYNAMIC = ALL_NAMES - DYNAMIC.keys()
_SHORT_MIN, _SHORT_MAX = -(1 << 15), (1 << 15) - 1


def validate(props: dict[str, str], per_broker: bool) -> None:
    """DynamicBrokerConfig.validateConfigs of the resource's configs after the change."""
    # resolveVariableConfigs comes first, and leaves out the config providers' own keys
    props = {n: v for n, v in props.items() if not n.startswith("config.providers")}
    _refuse_set([n for n in props if n in _NON_DYNAMIC], "Cannot update these configs dynamically")
    _refuse_set([n for n in props if n in DYNAMIC_SECURITY],
                "These security configs can be dynamically updated only per-listener using the listener prefix")
    _validate_values(props)
    if not per_broker:
        _refuse_set([n for n in props if _is_per_broker(n)],
                    "Cannot update these configs at default cluster level, broker id must be specified")


def props_after(current: dict[str, str], ops, per_broker: bool) -> dict[str, str]:
    """The resource's configs an IncrementalAlterConfigs would leave, as ConfigAdminManager builds
    them to check: the stored ones Kafka's broker would ignore dropped first
    (DynamicBrokerConfig.fromPersistentProps), then ``ops`` ((name, operation, value) in the
    request's order) applied (prepareIncrementalConfigs)."""
    props = {n: v for n, v in current.items() if _valid_alone(n, v)}
    for name in list(props):
        if name in _NON_DYNAMIC or name in DYNAMIC_SECURITY or (not per_broker and _is_per_broker(name)):
            del props[name]
    for name, operation, value in ops:
        if operation == SET:
            props[name] = value
        elif operation == DELETE:
            props.pop(name, None)
        else:
            props[name] = _list_change(props, name, operation, value)
    return props


def _valid_alone(name: str, value: str) -> bool:
    try:
        _validate_values({name: value})
    except ConfigValueError:
        return False
    return True


def _list_change(props: dict[str, str], name: str, operation: int, value: str) -> str:
    if name not in ALL_NAMES:
        raise InvalidConfiguration(f"Unknown config name: {name}")
    verb = "append" if operation == APPEND else "subtract"
    if name not in LIST_DEFAULTS:
        raise InvalidConfiguration(f"Config value {verb} is not allowed for config key: {name}")
    old_text = props.get(name, LIST_DEFAULTS[name])
    if operation == APPEND:
        old = java_split(old_text) if old_text else []
        return ",".join(old + [v for v in java_split(value) if v not in old])
    remaining = java_split(old_text or "")
    for item in java_split(value):                      # List.diff: one occurrence per item
        if item in remaining:
            remaining.remove(item)
    return ",".join(remaining)


def _refuse_set(names: list[str], message: str) -> None:
    if names:
        raise ConfigValueError(f"{message}: [{', '.join(java_hashset_order(names))}]")


def _is_per_broker(name: str) -> bool:
    if name in PER_BROKER:
        return True
    match = _LISTENER_KEY.fullmatch(name)
    return match is not None and match.group(1) not in CLUSTER_LEVEL_LISTENER


def _validate_values(props: dict[str, str]) -> None:
    """DynamicBrokerConfig.validateConfigTypes: ConfigDef.parse of the dynamic keys."""
    base: dict[str, str] = {}
    for name, value in props.items():
        match = _LISTENER_KEY.fullmatch(name)
        base[match.group(1) if match else name] = value
    for name, key in DYNAMIC.items():                   # ConfigDef.parse goes in its keys' order
        if name in base:
            _check(name, key, _parse(name, key, base[name]))


def parse_value(name: str, key: DynamicKey, value: str):
    """ConfigDef.parseType of a dynamic key's value (raises ConfigValueError as Kafka words it)."""
    return _parse(name, key, value)


def _parse(name: str, key: DynamicKey, value: str):
    """ConfigDef.parseType."""
    text = value.strip()
    if key.type in ("INT", "LONG", "SHORT"):
        low, high = {"INT": (INT_MIN, INT_MAX), "LONG": (LONG_MIN, LONG_MAX), "SHORT": (_SHORT_MIN, _SHORT_MAX)}[key.type]
        return parse_number(name, value, key.type, low, high)
    if key.type == "DOUBLE":
        return _parse_double(name, value)
    if key.type == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise invalid(name, value, "Expected value to be either true or false")
        return text.lower() == "true"
    if key.type == "LIST":
        return [] if not text else [part.strip() for part in re.split(r"\s*,\s*", text)]
    return text                                         # STRING, PASSWORD, CLASS (not loaded here)


def _parse_double(name: str, value: str) -> float:
    text = value.strip()
    # Double.parseDouble: decimal or exponent forms, an optional d/f suffix, NaN and Infinity
    if re.fullmatch(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[dDfF]?)", text) is None:
        raise invalid(name, value, "Not a number of type DOUBLE")
    return float(text.rstrip("dDfF").replace("Infinity", "inf"))


def _shown(key: DynamicKey, parsed) -> str:
    return java_double(parsed) if key.type == "DOUBLE" else str(parsed)


def _check(name: str, key: DynamicKey, parsed) -> None:
    """The key's validator: Range, ValidString, ValidList, gzip's level rule."""
    if key.at_least is not None and parsed < key.at_least:
        raise invalid(name, _shown(key, parsed), f"Value must be at least {key.at_least}")
    if key.at_most is not None and parsed > key.at_most:
        raise invalid(name, _shown(key, parsed), f"Value must be no more than {key.at_most}")
    if key.other_rule is not None:
        _check_level_rule(name, key.other_rule, parsed)
    if key.type == "STRING" and key.one_of and parsed not in key.one_of:
        raise invalid(name, parsed, f"String must be one of: {', '.join(key.one_of)}")
    if key.type == "LIST":                              # every dynamic LIST key has a ValidList
        _check_list(name, key, parsed)


def _check_list(name: str, key: DynamicKey, values: list[str]) -> None:
    """ConfigDef.ValidList.ensureValid."""
    if not key.list_empty_allowed and not values:
        allowed = f"[{', '.join(key.one_of)}]" if key.one_of else "any non-empty value"
        raise ConfigValueError(f"Configuration '{name}' must not be empty. Valid values include: {allowed}")
    # no duplicate check: ConfigDef.parseValue drops a list's duplicates before its validator runs
    for value in values:
        if not value:
            raise ConfigValueError(f"Configuration '{name}' values must not be empty.")
        if key.one_of and value not in key.one_of:
            raise invalid(name, value, f"String must be one of: {', '.join(key.one_of)}")


def _check_level_rule(name: str, rule: str, level: int) -> None:
    """CompressionType.GZIP's level validator, described by the table as "[1,...,9] or -1"."""
    match = re.fullmatch(r"\[(-?\d+),\.\.\.,(-?\d+)\] or (-?\d+)", rule)
    if match is None:
        return                                          # a rule this module does not know: Kafka's alone
    low, high, default = (int(g) for g in match.groups())
    if level > high or (level < low and level != default):
        raise invalid(name, level, f"Value must be between {low} and {high} or equal to {default}")
