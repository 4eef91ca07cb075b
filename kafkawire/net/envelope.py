"""Envelope (API key 58): a broker forwarding a client's admin request to the active controller.

A broker wraps the request it received, header and body as the client sent them, with the
client's principal (DefaultPrincipalData, version-prefixed, as DefaultKafkaPrincipalBuilder
writes it) and the client's IP address. The controller runs the inner request as if the client
had sent it on the broker's connection, with the forwarded principal and address, and wraps the
inner response (its header and body) in the EnvelopeResponse.

Kafka's rules (EnvelopeUtils, RequestChannel), checked in this order; each failure is the
envelope's own error code and no inner response:
- a principal that does not deserialize: PRINCIPAL_DESERIALIZATION_FAILURE;
- a client address that is neither 4 nor 16 bytes: INVALID_REQUEST;
- an inner header that does not parse (RequestHeader.parse: an API key Kafka does not know, one
  with no valid version left, such as LeaderAndIsr, or a header cut short): UNSUPPORTED_VERSION;
- an inner API that is not forwardable (ApiKeys.forwardable): INVALID_REQUEST;
- an inner body that does not parse, or a version we do not serve: UNSUPPORTED_VERSION;
- an inner response carrying NOT_CONTROLLER (for DescribeQuorum: NOT_LEADER_OR_FOLLOWER):
  NOT_CONTROLLER, so that the broker looks for the active controller again.
Who may send an Envelope at all (CLUSTER_ACTION on the cluster) is the authorizer's check, in
front of this handler like every other controller API's.
"""
from __future__ import annotations

import ipaddress
import logging
import struct

from kafkawire.messages.default_principal_data import DefaultPrincipalData
from kafkawire.messages.envelope_response import EnvelopeResponse
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import DecodeError
from kafkawire.protocol.framing import decode_request, encode_response, peek_request_api, request_header_version
from kafkawire.protocol.kafka_api_keys import KEYS_IN_4_3_1, RANGE_IN_4_3_1
from kafkawire.protocol.registry import installed

from .error_responses import failed_request_response
from .server import NO_RESPONSE, RequestContext

log = logging.getLogger(__name__)

ENVELOPE = 58
DESCRIBE_QUORUM = 55
# ApiKeys whose forwardable flag is set in Kafka 4.3.1.
FORWARDABLE_APIS = frozenset({
    19,   # CreateTopics
    20,   # DeleteTopics
    30,   # CreateAcls
    31,   # DeleteAcls
    33,   # AlterConfigs
    37,   # CreatePartitions
    38,   # CreateDelegationToken
    39,   # RenewDelegationToken
    40,   # ExpireDelegationToken
    43,   # ElectLeaders
    44,   # IncrementalAlterConfigs
    45,   # AlterPartitionReassignments
    46,   # ListPartitionReassignments
    49,   # AlterClientQuotas
    51,   # AlterUserScramCredentials
    55,   # DescribeQuorum
    57,   # UpdateFeatures
    64,   # UnregisterBroker
    67,   # AllocateProducerIds
    80,   # AddRaftVoter
    81,   # RemoveRaftVoter
})
_VERSION_PREFIX = struct.Struct(">h")


class EnvelopeError(Exception):
    def __init__(self, error: Errors, reason: str):
        super().__init__(reason)
        self.error = error


def serialize_principal(principal: str, token_authenticated: bool = False) -> bytes:
    """"Type:Name" as a broker forwards it: int16 version 0, then DefaultPrincipalData v0."""
    kind, _, name = principal.partition(":")
    data = DefaultPrincipalData(type=kind, name=name, token_authenticated=token_authenticated)
    return _VERSION_PREFIX.pack(0) + data.encode(0)


def deserialize_principal(data: bytes) -> str:
    """The forwarded principal as "Type:Name" (how RequestContext.principal names it)."""
    return deserialize_principal_data(data)[0]


def deserialize_principal_data(data: bytes) -> tuple[str, bool]:
    """The forwarded principal as "Type:Name", and whether it authenticated with a delegation token."""
    try:
        if len(data) < 2:
            raise DecodeError("DefaultPrincipalData", None, "version", 0, f"{len(data)} bytes, no version prefix")
        (version,) = _VERSION_PREFIX.unpack_from(data, 0)
        if version != 0:
            raise DecodeError("DefaultPrincipalData", version, "version", 0, f"version {version} is not 0")
        principal = DefaultPrincipalData.decode(memoryview(data)[2:], version)
    except DecodeError as exc:
        raise EnvelopeError(Errors.PRINCIPAL_DESERIALIZATION_FAILURE,
                            f"Failed to deserialize client principal from envelope: {exc}") from None
    return f"{principal.type}:{principal.name}", bool(principal.token_authenticated)


def parse_client_address(data: bytes) -> str:
    if len(data) not in (4, 16):
        raise EnvelopeError(Errors.INVALID_REQUEST,
                            f"Failed to parse client address from envelope: {len(data)} bytes, not 4 or 16")
    return str(ipaddress.ip_address(bytes(data)))


def carries_error(message, code: int) -> bool:
    """Whether any ErrorCode field of ``message`` (nested structs and arrays included) is ``code``."""
    for field in type(message)._FIELDS:
        value = getattr(message, field.py_name, None)
        if field.py_name == "error_code" and value == code:
            return True
        children = value if isinstance(value, list) else [value]
        for child in children:
            if hasattr(type(child), "_FIELDS") and carries_error(child, code):
                return True
    return False


def envelope_handler(lookup):
    """The Envelope handler for a server: ``lookup(api_key)`` gives the server's registered
    handler of the inner API (an object with ``handler``, ``low``, ``high`` and
    ``response_cls``, as KafkaServer registers them) or None. Looked up per request, so the
    inner request meets whatever wraps its handler (the authorizer) with the forwarded
    principal."""
    async def handle(ctx: RequestContext, request):
        try:
            inner_ctx, inner, registered = _unwrap(ctx, request, lookup)
        except EnvelopeError as exc:
            log.info("envelope from %s (%s) refused: %s", ctx.principal, ctx.peer[0], exc)
            return EnvelopeResponse(error_code=int(exc.error))
        response = await _run(registered, inner_ctx, inner)
        if response is NO_RESPONSE or response is None:
            return EnvelopeResponse(error_code=int(Errors.UNKNOWN_SERVER_ERROR))
        not_controller = Errors.NOT_LEADER_OR_FOLLOWER if inner_ctx.api_key == DESCRIBE_QUORUM else Errors.NOT_CONTROLLER
        if carries_error(response, int(not_controller)):
            return EnvelopeResponse(error_code=int(Errors.NOT_CONTROLLER))
        payload = encode_response(response, inner_ctx.api_version, inner_ctx.correlation_id)[4:]
        return EnvelopeResponse(response_data=payload)
    return handle


def _unwrap(ctx: RequestContext, envelope, lookup):
    principal, token_authenticated = deserialize_principal_data(envelope.request_principal or b"")
    address = parse_client_address(envelope.client_host_address or b"")
    data = bytes(envelope.request_data or b"")
    api_key, api_version = _parse_inner_header(data)
    if api_key not in FORWARDABLE_APIS:
        raise EnvelopeError(Errors.INVALID_REQUEST,
                            f"API key {api_key} is not enabled or is not eligible for forwarding")
    registered = lookup(api_key)
    if registered is None or not registered.low <= api_version <= registered.high:
        raise EnvelopeError(Errors.UNSUPPORTED_VERSION,
                            f"Failed to parse forwarded request: api key {api_key} version {api_version} is not served")
    try:
        inner = decode_request(data)
    except DecodeError as exc:
        raise EnvelopeError(Errors.UNSUPPORTED_VERSION, f"Failed to parse forwarded request: {exc}")
    inner_ctx = RequestContext(api_key, api_version, inner.correlation_id, inner.header.client_id or "",
                               (address, 0), ctx.listener_name, ctx.connection_id, inner.header, principal,
                               ctx.security_protocol, token_authenticated=token_authenticated, forwarded=True)
    return inner_ctx, inner.body, registered


def _parse_inner_header(data: bytes) -> tuple[int, int]:
    """(api_key, api_version) of the forwarded request, refused as Kafka's RequestHeader.parse
    refuses a header: before the forwardable check, so that an unknown API key is
    UNSUPPORTED_VERSION, not INVALID_REQUEST."""
    try:
        api_key, api_version, _ = peek_request_api(data)
        if api_key not in KEYS_IN_4_3_1:
            raise DecodeError("RequestHeader", None, "RequestApiKey", 0, f"unknown API key {api_key}")
        oldest, latest = RANGE_IN_4_3_1.get(api_key, (0, 0))
        if oldest > latest:
            raise DecodeError("RequestHeader", None, "RequestApiKey", 0,
                              f"api key {api_key} has no valid version in Kafka 4.3.1")
        installed().by_name("RequestHeader").decode(data, request_header_version(api_key, api_version), partial=True)
    except (DecodeError, KeyError) as exc:
        raise EnvelopeError(Errors.UNSUPPORTED_VERSION, f"Failed to parse request header from envelope: {exc}")
    return api_key, api_version


async def _run(registered, ctx: RequestContext, request):
    """The inner handler's response; UNKNOWN_SERVER_ERROR in the inner response if it raises
    (as KafkaServer answers a handler that raises)."""
    try:
        return await registered.handler.handle(ctx, request)
    except Exception:
        log.exception("the handler for forwarded api key %d v%d from %s raised", ctx.api_key, ctx.api_version,
                      ctx.principal)
    return failed_request_response(registered.handler, ctx, request, int(Errors.UNKNOWN_SERVER_ERROR))
