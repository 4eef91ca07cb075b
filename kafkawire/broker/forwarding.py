"""The admin requests a broker forwards to the active controller, as Kafka's ForwardingManager
and its NodeToControllerRequestThread do: the client's request (its header and body) goes in an
Envelope (58) with the client's principal and address, the controller runs it as that client
and its answer comes back unwrapped.

    forwarder = Forwarder(send_to_controller)           # send(request, timeout_ms) -> response
    response = await forwarder.forward(ctx, request)    # the answer for the client

What comes back, as Kafka's broker answers:
- the Envelope answered without error: the inner response, decoded for the client's version
  (one that does not decode: UNKNOWN_SERVER_ERROR, the request's getErrorResponse);
- Envelope error NOT_CONTROLLER, no controller known, the connection lost or a request timed
  out: sent again (after ``RETRY_BACKOFF_S`` when it failed at once) until ``RETRY_TIMEOUT_MS``
  (Kafka's 60 s for the forwarding channel) from the first try, then REQUEST_TIMED_OUT;
- Envelope error UNSUPPORTED_VERSION: the client's connection is closed (the controller does not
  serve the version the broker advertised; the client reconnects and asks ApiVersions again);
- any other Envelope error (a principal the controller cannot read, ...): UNKNOWN_SERVER_ERROR,
  not the envelope's error, which the client would not expect.

The error answers are the request's getErrorResponse (kafkawire.net.error_responses): the error
on every topic, resource or partition the request named (and at the top where the response has
an error code there).
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import time

from kafkawire.messages.envelope_request import EnvelopeRequest
from kafkawire.net.client import TransportError
from kafkawire.net.envelope import serialize_principal
from kafkawire.net.error_responses import error_response
from kafkawire.net.server import ApiHandler, CloseConnection
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import DecodeError
from kafkawire.protocol.framing import decode_response, encode_request
from kafkawire.raft.contract import NoLeader, NotLeader

__all__ = ["Forwarder", "ForwardingFailed", "FORWARDED_APIS", "envelope_for", "error_response", "forwarded_handlers"]

log = logging.getLogger(__name__)

CREATE_TOPICS, DELETE_TOPICS, ALTER_CONFIGS, CREATE_PARTITIONS = 19, 20, 33, 37
ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS, ALTER_PARTITION_REASSIGNMENTS = 43, 44, 45
LIST_PARTITION_REASSIGNMENTS, DESCRIBE_QUORUM = 46, 55
ALTER_CLIENT_QUOTAS, ALTER_USER_SCRAM_CREDENTIALS, UPDATE_FEATURES = 49, 51, 57
UNREGISTER_BROKER, ADD_RAFT_VOTER, REMOVE_RAFT_VOTER = 64, 80, 81
CREATE_ACLS, DELETE_ACLS = 30, 31
# What Kafka 4.3.1's broker forwards and kafkawire's controller serves, with the versions
# Kafka's broker advertises for each (ApiKeys, the broker listener's range).
FORWARDED_APIS: dict[int, tuple[int, int]] = {
    CREATE_TOPICS: (2, 7), DELETE_TOPICS: (1, 6), ALTER_CONFIGS: (0, 2), CREATE_PARTITIONS: (0, 3),
    ELECT_LEADERS: (0, 2), INCREMENTAL_ALTER_CONFIGS: (0, 1), ALTER_PARTITION_REASSIGNMENTS: (0, 1),
    LIST_PARTITION_REASSIGNMENTS: (0, 0), DESCRIBE_QUORUM: (0, 2),
    ALTER_CLIENT_QUOTAS: (0, 1), ALTER_USER_SCRAM_CREDENTIALS: (0, 0), UPDATE_FEATURES: (0, 2),
    UNREGISTER_BROKER: (0, 0), ADD_RAFT_VOTER: (0, 1), REMOVE_RAFT_VOTER: (0, 0),
    CREATE_ACLS: (1, 3), DELETE_ACLS: (1, 3),
}
RETRY_TIMEOUT_MS = 60_000      # BrokerServer's forwarding NodeToControllerChannelManager
SOCKET_TIMEOUT_MS = 30_000     # controller.socket.timeout.ms: one try's wait for its answer
RETRY_BACKOFF_S = 0.1          # NodeToControllerRequestThread's poll while no controller is known
_UNREACHABLE = (NoLeader, NotLeader, TransportError, TimeoutError, asyncio.TimeoutError, OSError)


class ForwardingFailed(Exception):
    """A request the broker sent on a client's behalf got no answer: the reason, as Kafka's
    broker words it (the Envelope error's message, or "... to controller timed out")."""


def envelope_for(ctx, request) -> EnvelopeRequest:
    """The Envelope carrying ``request`` as the client sent it (its header: version, correlation
    id, client id), the client's principal and the client's IP address (4 or 16 bytes)."""
    header = ctx.header
    client_id = header.client_id if header is not None else ctx.client_id
    tagged = getattr(header, "unknown_tagged_fields", ()) if header is not None else ()
    data = encode_request(request, ctx.api_version, ctx.correlation_id, client_id, tagged)[4:]
    return EnvelopeRequest(request_data=data, request_principal=serialize_principal(ctx.principal, ctx.token_authenticated),
                           client_host_address=ipaddress.ip_address(ctx.peer[0]).packed)


class Forwarder:
    """Forwards requests through ``send(request, timeout_ms)`` (the node's channel to the active
    controller, which raises NoLeader, NotLeader, TransportError or TimeoutError when it cannot
    get an answer). ``clock`` (seconds) and ``sleep`` are the event loop's unless a test gives others."""

    def __init__(self, send, *, retry_timeout_ms: int = RETRY_TIMEOUT_MS, socket_timeout_ms: int = SOCKET_TIMEOUT_MS,
                 clock=time.monotonic, sleep=asyncio.sleep):
        self.send = send
        self.retry_timeout_ms = retry_timeout_ms
        self.socket_timeout_ms = socket_timeout_ms
        self.clock = clock
        self.sleep = sleep

    async def forward(self, ctx, request):
        answer = await self._envelope_answer(ctx, request)
        if answer is None:
            return error_response(ctx.api_key, request, ctx.api_version, Errors.REQUEST_TIMED_OUT)
        return self._unwrap(ctx, request, answer)

    async def on_behalf(self, ctx, request):
        """``request``, made by the broker for the client of ``ctx`` (a streams group's internal
        topics), sent as KRaftTopicCreator.createTopicWithPrincipal sends it: the same Envelope
        and retries as ``forward``, but a failure is raised as ForwardingFailed with the message
        Kafka's future fails with (the Envelope error's, or the timeout's), not turned into an
        error response for a client."""
        answer = await self._envelope_answer(ctx, request)
        if answer is None:
            raise ForwardingFailed(f"{type(request).__name__} to controller timed out")
        if answer.error_code != Errors.NONE:
            raise ForwardingFailed(Errors.for_code(answer.error_code).message)
        try:
            return decode_response(bytes(answer.response_data or b""), ctx.api_key, ctx.api_version)[1]
        except DecodeError as exc:
            raise ForwardingFailed(str(exc)) from None

    async def _envelope_answer(self, ctx, request):
        """The controller's answer to ``request`` in its Envelope (any error but NOT_CONTROLLER),
        or None when none came within ``retry_timeout_ms``."""
        envelope = envelope_for(ctx, request)
        deadline = self.clock() + self.retry_timeout_ms / 1000
        while (remaining_ms := int((deadline - self.clock()) * 1000)) > 0:
            started = self.clock()
            try:
                answer = await self.send(envelope, min(self.socket_timeout_ms, remaining_ms))
            except _UNREACHABLE as exc:
                log.debug("forwarding api key %d from %s: %s; trying again", ctx.api_key, ctx.principal, exc)
            else:
                if answer.error_code != Errors.NOT_CONTROLLER:
                    return answer
                log.debug("forwarding api key %d: NOT_CONTROLLER; looking for the active controller again",
                          ctx.api_key)
            if self.clock() - started < RETRY_BACKOFF_S:
                await self.sleep(min(RETRY_BACKOFF_S, max(deadline - self.clock(), 0)))
        log.info("forwarding api key %d v%d from %s to the active controller timed out after %d ms", ctx.api_key,
                 ctx.api_version, ctx.principal, self.retry_timeout_ms)
        return None

    @staticmethod
    def _unwrap(ctx, request, answer):
        if answer.error_code == Errors.UNSUPPORTED_VERSION:
            log.info("the controller does not serve forwarded api key %d v%d: closing the connection of %s",
                     ctx.api_key, ctx.api_version, ctx.connection_id)
            raise CloseConnection()
        if answer.error_code != Errors.NONE:
            log.debug("forwarded api key %d failed with envelope error %s", ctx.api_key,
                      Errors.for_code(answer.error_code).name)
            return error_response(ctx.api_key, request, ctx.api_version, Errors.UNKNOWN_SERVER_ERROR)
        try:
            _, response = decode_response(bytes(answer.response_data or b""), ctx.api_key, ctx.api_version)
        except DecodeError as exc:
            log.error("the forwarded answer to api key %d v%d does not decode: %s", ctx.api_key, ctx.api_version, exc)
            return error_response(ctx.api_key, request, ctx.api_version, Errors.UNKNOWN_SERVER_ERROR)
        return response


def forwarded_handlers(forwarder: Forwarder, own: dict) -> dict[int, ApiHandler]:
    """An ApiHandler for each of FORWARDED_APIS, with Kafka's broker's versions: ``own[key]``
    where the broker does part of the work (the config APIs), else ``forwarder.forward``."""
    def handler(key: int, low: int, high: int) -> ApiHandler:
        return ApiHandler(own.get(key, forwarder.forward), min_version=low, max_version=high)
    return {key: handler(key, low, high) for key, (low, high) in FORWARDED_APIS.items()}
