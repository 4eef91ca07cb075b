"""The API table: every API key we have a request and a response for, with its versions.

It is derived from the generated messages, so it cannot drift from what we can encode; it is
what an ApiVersions response advertises.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Api:
    key: int
    name: str                 # "Fetch", as Kafka's ApiKeys names it
    min_version: int
    max_version: int
    request: type
    response: type

    def __str__(self) -> str:
        return f"{self.name}({self.key}): {self.min_version} to {self.max_version}"


@lru_cache(maxsize=None)
def api_table(package: str = "kafkawire.messages") -> dict[int, Api]:
    import importlib
    registry = importlib.import_module(package).REGISTRY
    requests, responses = {}, {}
    for name, _, kind, key in registry.index:
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
    from kafkawire.messages.api_versions_response import ApiVersion, ApiVersionsResponse
    keys = []
    for api in api_table().values():
        high = api.max_version
        if not include_unstable and api.request.LATEST_VERSION_UNSTABLE:
            high -= 1
        keys.append(ApiVersion(api_key=api.key, min_version=api.min_version, max_version=high))
    return ApiVersionsResponse(error_code=error_code, api_keys=keys, throttle_time_ms=throttle_time_ms)
