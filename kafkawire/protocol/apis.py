"""The API table: every API key we have a request and a response for, with its versions.

It is derived from the generated messages, so it cannot drift from what we can encode; it is
what an ApiVersions response advertises. The messages are those of the installed registry
(kafkawire.protocol.registry); this module never imports generated code.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .message import Message
from .registry import installed

API_VERSIONS_KEY = 18


@dataclass(frozen=True)
class Api:
    key: int
    name: str                 # "Fetch", as Kafka's ApiKeys names it
    min_version: int
    max_version: int
    # Generated Message subclasses; type[Any], as each has its own fields, unknown to mypy here.
    request: type[Any]
    response: type[Any]

    def __str__(self) -> str:
        return f"{self.name}({self.key}): {self.min_version} to {self.max_version}"


@lru_cache(maxsize=None)
def api_table(package: str | None = None) -> dict[int, Api]:
    """The table of the installed registry, or of the generated package named ``package``."""
    registry = installed() if package is None else importlib.import_module(package).REGISTRY
    requests: dict[int, type[Message]] = {}
    responses: dict[int, type[Message]] = {}
    for name, _, kind, key in registry.index:
        if key is None:       # a data or metadata-record schema without an API key
            continue
        if kind == "request":
            requests[key] = registry.by_name(name)
        elif kind == "response":
            responses[key] = registry.by_name(name)
    table = {}
    for key in sorted(set(requests) & set(responses)):
        req, resp = requests[key], responses[key]
        if req.VALID_VERSIONS is None or resp.VALID_VERSIONS is None:
            continue
        low = max(req.VALID_VERSIONS[0], resp.VALID_VERSIONS[0])
        high = min(req.VALID_VERSIONS[1], resp.VALID_VERSIONS[1])
        if low <= high:
            table[key] = Api(key, req.NAME[: -len("Request")], low, high, req, resp)
    return table


def api_versions_response(error_code: int = 0, *, throttle_time_ms: int = 0, include_unstable: bool = True):
    """An ApiVersionsResponse advertising every API in the table."""
    response_cls = api_table()[API_VERSIONS_KEY].response
    entry_cls = next(f.struct for f in response_cls._FIELDS if f.py_name == "api_keys")
    keys = []
    for api in api_table().values():
        high = api.max_version
        if not include_unstable and api.request.LATEST_VERSION_UNSTABLE:
            high -= 1
        keys.append(entry_cls(api_key=api.key, min_version=api.min_version, max_version=high))
    return response_cls(error_code=error_code, api_keys=keys, throttle_time_ms=throttle_time_ms)
