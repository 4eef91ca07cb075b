"""What a request handler is: the type shared by the server that calls handlers
(kafkawire.net.server) and everything that provides them (the raft node, the metadata
controller, the read-only metadata topic), kept below ``net`` so that providers need not
import the server.

A handler is ``async handler(ctx, request) -> response`` (``ctx`` a RequestContext), or an
ApiHandler wrapping one with a version range and an error-response builder. It may return
NO_RESPONSE (Produce with acks=0) or raise CloseConnection (what Kafka does when an acks=0
produce fails).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

__all__ = ["RequestContext", "Handler", "ApiHandler", "NO_RESPONSE", "CloseConnection", "Throttled",
           "top_level_error_response"]


class _NoResponse:
    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


class CloseConnection(Exception):
    """Raised by a handler to close the connection instead of answering (after earlier responses)."""


@dataclass(frozen=True)
class Throttled:
    """A handler's answer (a response, or NO_RESPONSE) after which the connection reads nothing
    for ``throttle_ms``: a client quota was exceeded, and as Kafka's broker does since KIP-219 the
    answer goes out at once while the channel stays muted for the throttle time."""
    response: Any
    throttle_ms: int


@dataclass(frozen=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    peer: tuple            # (host, port) of the client
    listener_name: str
    connection_id: str     # "local_host:port-peer_host:port-n", as Kafka names connections
    header: Any = None     # the decoded RequestHeader
    principal: str = "User:ANONYMOUS"      # KafkaPrincipal: User:<SASL name> or User:<TLS subject DN>
    security_protocol: str = "PLAINTEXT"
    request_size: int = 0  # the request frame's size field (a ClusterAuthorizationException's text shows it)
    # KafkaPrincipal.tokenAuthenticated: the connection authenticated with a delegation token (SCRAM tokenauth)
    token_authenticated: bool = False
    forwarded: bool = False  # RequestChannel.Request.isForwarded: the request came in an Envelope
    # KIP-511's ClientInformation: the software name and version of the connection's last valid
    # ApiVersions request ("unknown" before one); client telemetry's subscriptions match on them.
    client_software: tuple = ("unknown", "unknown")
    timing: Any = None       # the request's moments for its metrics (kafkawire.net.request_metrics.request_times)


Handler = Callable[[RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True)
class ApiHandler:
    handle: Handler
    min_version: int | None = None       # default: the lowest version we have a schema for
    max_version: int | None = None       # default: the highest stable version we have a schema for
    # The lowest version ApiVersions advertises when it is below min_version (still refused):
    # Kafka's broker lists Produce from v0 though it serves v3 up (KAFKA-18659, for librdkafka).
    advertised_min_version: int | None = None
    error_response: Callable[[RequestContext, Any, int], Any] | None = None   # (ctx, request, error code)
    # False: served but left out of ApiVersions, as Kafka's broker serves the client telemetry pair
    # without listing it when no reporter takes telemetry (DefaultApiVersionManager vs isApiEnabled).
    advertised: bool = True


def top_level_error_response(response_cls: Any, version: int, error_code: int) -> Any:
    """A default response carrying ``error_code`` in its top-level ErrorCode, or None if the
    version has no top-level error code."""
    for f in response_cls._FIELDS:
        if f.py_name == "error_code" and f.present(version):
            response = response_cls()
            response.error_code = error_code
            return response
    return None
