"""Kafka's ConfigDef, the part its dynamic configs share: a key's type, default and validator,
and ConfigDef's messages for a value that does not parse or is out of range ("Invalid value X
for configuration N: ..."). The topic configs (kafkawire.controller.topic_configs) and the group
configs (kafkawire.metadata.group_configs) are tables of ``ConfigKey``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["INT_MIN", "INT_MAX", "LONG_MIN", "LONG_MAX", "ConfigValueError", "ConfigKey", "invalid",
           "parse_number", "parse_type", "check_range", "number_text"]

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


class ConfigValueError(ValueError):
    """ConfigException / InvalidConfigurationException: the message is Kafka's."""


@dataclass(frozen=True)
class ConfigKey:
    type: str                       # INT, LONG, DOUBLE, BOOLEAN, STRING, LIST
    default: str | None
    at_least: float | None = None
    at_most: float | None = None
    one_of: tuple[str, ...] = ()    # ValidString.in / ValidList.in
    throttled_replicas: bool = False


def invalid(name: str, value, reason: str) -> ConfigValueError:
    return ConfigValueError(f"Invalid value {value} for configuration {name}: {reason}")


def parse_number(name: str, value: str, kind: str, low: int, high: int):
    text = value.strip()
    # Integer.parseInt's digits: ASCII only, no "_" (Python's int() takes both)
    if not _JAVA_INTEGER.fullmatch(text):
        raise invalid(name, value, f"Not a number of type {kind}")
    number = int(text, 10)
    if not low <= number <= high:
        raise invalid(name, value, f"Not a number of type {kind}")
    return number


def parse_type(name: str, key: ConfigKey, value: str):
    """ConfigDef.parseType: ``value`` (as written) as the key's type, or ConfigValueError."""
    if key.type == "INT":
        parsed = parse_number(name, value, "INT", INT_MIN, INT_MAX)
    elif key.type == "LONG":
        parsed = parse_number(name, value, "LONG", LONG_MIN, LONG_MAX)
    elif key.type == "DOUBLE":
        try:
            parsed = float(value.strip())
        except ValueError:
            raise invalid(name, value, "Not a number of type DOUBLE") from None
    elif key.type == "BOOLEAN":
        text = value.strip().lower()
        if text not in ("true", "false"):
            raise invalid(name, value, "Expected value to be either true or false")
        parsed = text == "true"
    elif key.type == "LIST":
        text = value.strip()
        parsed = [] if not text else [part.strip() for part in text.split(",")]
    else:
        parsed = value.strip()
    return parsed


def check_range(name: str, key: ConfigKey, parsed) -> None:
    """Range.atLeast / between and ValidString.in, with ConfigDef's messages."""
    if key.type in ("INT", "LONG", "DOUBLE"):
        if key.at_least is not None and parsed < key.at_least:
            raise invalid(name, parsed, f"Value must be at least {number_text(key.at_least)}")
        if key.at_most is not None and parsed > key.at_most:
            raise invalid(name, parsed, f"Value must be no more than {number_text(key.at_most)}")
    elif key.type == "STRING" and key.one_of and parsed not in key.one_of:
        raise invalid(name, parsed, f"String must be one of: {', '.join(key.one_of)}")


def number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
