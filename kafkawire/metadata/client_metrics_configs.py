"""Kafka 4.3's client metrics subscriptions (KIP-714, ClientMetricsConfigs): the CLIENT_METRICS
config resource ``kafka-client-metrics --alter --name S --metrics ... --interval ... --match ...``
writes, validated by the controller as Kafka's ControllerConfigurationValidator validates it.

A subscription's configs: ``metrics`` (a list of metric name prefixes, ``*`` for all),
``interval.ms`` (the push interval, 100 ms to one hour) and ``match`` (a list of
``<client selector>=<regular expression>``). The broker hands them to the clients that push
telemetry when it takes client telemetry (kafkawire.broker.client_metrics, docs/broker.md).

One difference: a match's regular expression is checked with Python's ``re``, not Java's Pattern,
so an expression only one of the two accepts (Java's ``\\p{Alpha}`` classes, ``(?<name>...)``
groups or ``[a&&b]`` intersections; Python's ``(?P<name>...)``) is judged differently.
"""
from __future__ import annotations

import re

from .config_def import ConfigKey, ConfigValueError, parse_type

__all__ = ["CLIENT_METRICS_KEYS", "SubscriptionError", "validate_subscription"]

CLIENT_METRICS_KEYS: dict[str, ConfigKey] = {          # ClientMetricsConfigs' ConfigDef, in its order
    "metrics": ConfigKey("LIST", ""),
    "interval.ms": ConfigKey("INT", str(5 * 60 * 1000)),
    "match": ConfigKey("LIST", ""),
}
_SELECTORS = frozenset(("client_instance_id", "client_id", "client_software_name", "client_software_version",
                        "client_source_address", "client_source_port"))
_MIN_INTERVAL_MS, _MAX_INTERVAL_MS = 100, 3_600_000


class SubscriptionError(ValueError):
    """InvalidRequestException: a name or value ClientMetricsConfigs refuses as a bad request."""


def validate_subscription(name: str, configs: dict[str, str], hashmap_order) -> None:
    """ClientMetricsConfigs.validate of a subscription's configs after a change: SubscriptionError
    (INVALID_REQUEST) or ConfigValueError (INVALID_CONFIG), with Kafka's messages.
    ``hashmap_order(names)``: Java's HashMap order, in which Kafka meets an unknown name."""
    if not name:
        raise SubscriptionError("Subscription name can't be empty")
    for key in hashmap_order(configs):
        if key not in CLIENT_METRICS_KEYS:
            raise SubscriptionError(f"Unknown client metrics configuration: {key}")
    parsed = {}
    for key, config_key in CLIENT_METRICS_KEYS.items():           # ConfigDef.parse, in definition order
        if key in configs:
            parsed[key] = value = parse_type(key, config_key, configs[key])
            if config_key.type == "LIST":
                _check_list(key, value)
    interval = parsed.get("interval.ms")
    if interval is not None and not _MIN_INTERVAL_MS <= interval <= _MAX_INTERVAL_MS:
        raise SubscriptionError(f"Invalid value {interval} for interval.ms, interval must be between 100 and "
                                "3600000 (1 hour)")
    for pattern in parsed.get("match", ()):
        _check_match(pattern)


def _check_list(key: str, values: list[str]) -> None:
    """ValidList.anyNonDuplicateValues(isEmptyAllowed=true, isNullAllowed=false), after
    ConfigDef.parseValue dropped the duplicates (with a WARN in Kafka), so none is refused."""
    if any(not value for value in values):
        raise ConfigValueError(f"Configuration '{key}' values must not be empty.")


def _java_split_on_equals(text: str) -> list[str]:
    """String.split("="): trailing empty parts dropped."""
    parts = text.split("=")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _check_match(pattern: str) -> None:
    """ClientMetricsConfigs.parseMatchingPatterns, for one pattern."""
    parts = _java_split_on_equals(pattern)
    illegal = ConfigValueError(f"Illegal client matching pattern: {pattern}")
    if len(parts) != 2 or parts[0].strip() not in _SELECTORS:
        raise illegal
    try:
        re.compile(parts[1].strip())
    except re.error:
        raise illegal from None
