"""Who is on a server connection: the TLS client certificate's subject, or the SASL exchange that
has to complete before the connection's requests are served (Kafka's SaslServerAuthenticator
in front of KafkaApis; the rules are in ``kafkawire.net.sasl``).

``sasl_dispatch(conn, payload)`` takes each frame of a SASL connection until authentication
completes; it answers through the connection's ordered response queue, so a refusal's answer goes
out before the connection closes, as Kafka sends its failure response and then closes. What
Kafka refuses with an AuthenticationException (a wrong password, an unsupported mechanism, a
request other than SaslAuthenticate after the handshake, a PLAIN raw token) has its answer and
close held connection.failed.authentication.delay.ms (Connection.answer_failed_authentication);
what Kafka refuses otherwise (a request that is not ApiVersions or SaslHandshake before the
handshake, a request that does not decode, a failed SCRAM raw token, a SaslException there)
closes at once, as in Kafka.

Once authenticated, ``authenticated_step`` decides each request's fate first, as Kafka's Processor
does (kafkawire.net.reauthentication): a SaslHandshake may begin a re-authentication, whose
frames come here again through a new session; a request after the session ended closes the
connection.
"""
from __future__ import annotations

import logging

from kafkawire.messages.sasl_authenticate_response import SaslAuthenticateResponse
from kafkawire.messages.sasl_handshake_response import SaslHandshakeResponse
from kafkawire.net import reauthentication
from kafkawire.net.reauthentication import session_lifetime_ms
from kafkawire.net.sasl import SaslFailure, SaslServerSession
from kafkawire.net.sasl_oauthbearer import oauthbearer_factories
from kafkawire.net.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.errors import DecodeError
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import decode_request, encode_response, peek_request_api
from kafkawire.protocol.handler import NO_RESPONSE, RequestContext, top_level_error_response

__all__ = ["sasl_session", "connection_principal", "sasl_dispatch", "authenticated_step"]

log = logging.getLogger(__name__)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


def sasl_session(server) -> SaslServerSession | None:
    security = server.security
    if security is None or not security.uses_sasl:
        return None
    plain = security.jaas["PLAIN"].users() if "PLAIN" in security.jaas else {}
    return SaslServerSession(security.mechanisms, plain, server.scram_lookup, getattr(server, "token_lookup", None),
                             server_factories=oauthbearer_factories(security), gssapi=security.gssapi)


def connection_principal(writer, mapper: SslPrincipalMapper | None = None) -> str | None:
    """User:<name> of a verified TLS client certificate (Kafka's DefaultKafkaPrincipalBuilder: its
    subject's RFC 2253 name through the listener's ssl.principal.mapping.rules), else
    User:ANONYMOUS; None (and logged) when no mapping rule applies to the name, which fails the
    connection as in Kafka."""
    peercert = writer.get_extra_info("peercert")
    if not peercert or "subject" not in peercert:
        return "User:ANONYMOUS"
    # getpeercert() lists the RDNs in certificate order; RFC 2253 writes them last first.
    parts = []
    for rdn in reversed(peercert["subject"]):
        parts.append("+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn))
    name = ",".join(parts)
    if mapper is None:
        return "User:" + name
    try:
        return "User:" + mapper.name(name)
    except NoMatchingRule as exc:
        log.error("Failed to map name for '%s' based on SSL principal mapping rules (%s): closing the connection "
                  "from %s", name, exc, writer.get_extra_info("peername"))
        return None


_SHORT = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
          "stateOrProvinceName": "ST", "localityName": "L", "streetAddress": "STREET", "domainComponent": "DC",
          "userId": "UID"}


def _escape(value: str) -> str:
    out = "".join("\\" + c if c in ',+"\\<>;' else c for c in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


async def sasl_dispatch(conn, payload: bytes) -> bool:
    """One frame of a connection that has not authenticated (or is re-authenticating); False
    closes the connection (after the answers queued before)."""
    session: SaslServerSession = conn.sasl
    if session.state == "REAUTH_BAD_MECHANISM":
        # Kafka answered the handshake NONE and refuses what follows, unanswered, after the delay.
        log.info("Failed re-authentication with /%s (listener %s: %s)", conn.peer[0], conn.server.listener_name,
                 session.bad_mechanism_message())
        await conn.answer_failed_authentication(conn.raw_context(), NO_RESPONSE, len(payload) + 4)
        return False
    if session.raw_tokens:
        return await _raw_token(conn, session, payload)
    try:
        api_key, api_version, correlation_id = peek_request_api(payload)
    except DecodeError as exc:
        log.warning("closing connection %s from %s:%s: malformed request header during SASL authentication: "
                    "%s", conn.id, *conn.peer, exc)
        return False
    if session.state in ("INITIAL", "HANDSHAKE"):
        if api_key == API_VERSIONS and session.api_versions_allowed():
            return await _api_versions(conn, session, payload, api_version)
        if api_key == SASL_HANDSHAKE:
            return await _handshake(conn, session, payload, api_version)
        log.info("closing connection %s from %s:%s: Unexpected Kafka request of type %s during SASL "
                 "handshake.", conn.id, *conn.peer, _api_name(api_key))
        return False
    if api_key != SASL_AUTHENTICATE:
        # Kafka answers with the request's ILLEGAL_SASL_STATE error response, then closes.
        log.info("closing connection %s from %s:%s: Unexpected Kafka request of type %s during SASL "
                 "authentication.", conn.id, *conn.peer, _api_name(api_key))
        await _refuse_with_illegal_state(conn, payload, api_key, api_version, correlation_id)
        return False
    return await _authenticate(conn, session, payload, api_version)


def _api_name(api_key: int) -> str:
    api = api_table().get(api_key)
    return api.name if api is not None else f"api key {api_key}"


async def _api_versions(conn, session, payload, api_version) -> bool:
    low, high = next((lo, hi) for key, lo, hi in conn.server.api_versions() if key == API_VERSIONS)
    keep_open = await conn.api_versions(payload, api_version, peek_request_api(payload)[2])
    if low <= api_version <= high:
        session.api_versions_answered()      # an UNSUPPORTED_VERSION answer lets the client retry
    return keep_open


def _decode(conn, payload, what):
    try:
        return decode_request(payload)
    except DecodeError as exc:
        log.warning("closing connection %s from %s:%s: %s does not decode: %s", conn.id, *conn.peer, what, exc)
        return None


async def _answer(conn, request, response, payload: bytes) -> None:
    frame = encode_response(response, request.api_version, request.correlation_id)
    await conn.answer(conn.context(request), frame, len(payload) + 4)


async def _refuse(conn, request, response, payload: bytes) -> None:
    """``_answer`` for a failed authentication: held the delay, then the connection closes."""
    frame = encode_response(response, request.api_version, request.correlation_id)
    await conn.answer_failed_authentication(conn.context(request), frame, len(payload) + 4)


async def _handshake(conn, session, payload, api_version) -> bool:
    request = _decode(conn, payload, "SaslHandshake")
    if request is None:
        return False
    mechanism = request.body.mechanism
    code = session.handshake(mechanism, api_version)
    response = SaslHandshakeResponse(error_code=code, mechanisms=list(session.mechanisms))
    if code != Errors.NONE:
        log.info("Failed authentication with /%s (listener %s: Unsupported SASL mechanism %s)",
                 conn.peer[0], conn.server.listener_name, mechanism)
        await _refuse(conn, request, response, payload)
        return False
    await _answer(conn, request, response, payload)
    return True


async def _authenticate(conn, session, payload, api_version) -> bool:
    request = _decode(conn, payload, "SaslAuthenticate")
    if request is None:
        return False
    try:
        token = session.evaluate(bytes(request.body.auth_bytes))
    except SaslFailure as failure:
        _log_failure(conn, failure)
        if failure.unanswered:
            return False
        await _refuse(conn, request, SaslAuthenticateResponse(error_code=int(Errors.SASL_AUTHENTICATION_FAILED),
                                                              error_message=failure.message, auth_bytes=b""), payload)
        return False
    lifetime_ms = _session_lifetime_ms(conn, session)
    await _answer(conn, request, SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=token,
                                                          session_lifetime_ms=lifetime_ms or 0), payload)
    _authenticated(conn, session, lifetime_ms)
    return True


def _session_lifetime_ms(conn, session) -> int | None:
    if not session.complete:
        return None
    max_reauth_ms = conn.server.security.max_reauth_ms.get(session.mechanism, 0)
    return session_lifetime_ms(max_reauth_ms, session.credential_expiry_ms, reauthentication.now_ms())


async def _raw_token(conn, session, payload) -> bool:
    """SaslHandshake v0: a bare token in, a bare size-prefixed token out; a failure just closes."""
    try:
        token = session.evaluate(payload)
    except SaslFailure as failure:
        _log_failure(conn, failure)
        if (session.mechanism == "PLAIN" or failure.authentication_exception) and not failure.unanswered:
            # PlainSaslServer fails with a SaslAuthenticationException, which Kafka delays (as it
            # does a re-authentication as another principal); ScramSaslServer with a
            # SaslException, which closes at once.
            await conn.answer_failed_authentication(conn.raw_context(), NO_RESPONSE, len(payload) + 4)
        return False
    await conn.answer(conn.raw_context(), len(token).to_bytes(4, "big") + token, len(payload) + 4)
    _authenticated(conn, session, _session_lifetime_ms(conn, session))
    return True


def _authenticated(conn, session, lifetime_ms: int | None) -> None:
    if session.complete:
        conn.principal = session.principal
        conn.token_authenticated = session.token_authenticated
        conn.session_clock.authenticated(lifetime_ms, reauthentication.monotonic())
        if session.previous is not None:
            conn.server.reauthentications += 1
        log.debug("connection %s from %s:%s %s as %s with %s (session lifetime %s ms)", conn.id, *conn.peer,
                  "re-authenticated" if session.previous is not None else "authenticated", conn.principal,
                  session.mechanism, lifetime_ms)


def authenticated_step(conn, api_key: int) -> str:
    """What a request on an authenticated SASL connection does, as Kafka's Processor decides it:
    "reauthenticate" (a SaslHandshake that begins a re-authentication: the connection's session
    is now a new one, which takes this frame), "expired" (the session ended without one: close
    unanswered), else "serve"."""
    now = reauthentication.monotonic()
    clock = conn.session_clock
    if api_key == SASL_HANDSHAKE and clock.may_reauthenticate(now):
        conn.sasl = conn.sasl.reauthentication()
        return "reauthenticate"
    if clock.expired(now):
        # Kafka's Processor logs this close at DEBUG: an expiry is the client's lapse, not the node's.
        log.debug("Disconnecting expired channel: connection %s from %s:%s, its SASL session expired "
                  "(connections.max.reauth.ms or its credential's expiry) without a re-authentication",
                  conn.id, *conn.peer)
        return "expired"
    return "serve"


def _log_failure(conn, failure: SaslFailure) -> None:
    log.info("Failed %s with /%s (listener %s: %s)", conn.sasl.phase, conn.peer[0], conn.server.listener_name,
             failure.log_reason)


async def _refuse_with_illegal_state(conn, payload, api_key, api_version, correlation_id) -> None:
    """Kafka's IllegalSaslStateException (an AuthenticationException): the request's error
    response when it has one, and the close, after the delay."""
    frame = _illegal_state_frame(api_key, api_version, correlation_id)
    ctx = RequestContext(api_key, api_version, correlation_id, "", conn.peer, conn.server.listener_name, conn.id)
    await conn.answer_failed_authentication(ctx, NO_RESPONSE if frame is None else frame, len(payload) + 4)


def _illegal_state_frame(api_key, api_version, correlation_id) -> bytes | None:
    api = api_table().get(api_key)
    if api is None or not api.min_version <= api_version <= api.max_version:
        return None
    response = top_level_error_response(api.response, api_version, int(Errors.ILLEGAL_SASL_STATE))
    if response is None:
        return None
    try:
        return encode_response(response, api_version, correlation_id)
    except Exception:          # a response shape that needs more than an error code: close unanswered
        return None


async def _handshake_after_authentication(ctx, request):
    return SaslHandshakeResponse(error_code=int(Errors.ILLEGAL_SASL_STATE), mechanisms=[])


async def _authenticate_after_authentication(ctx, request):
    return SaslAuthenticateResponse(error_code=int(Errors.ILLEGAL_SASL_STATE), auth_bytes=b"",
                                    error_message="SaslAuthenticate request received after successful authentication")


def sasl_handlers() -> dict:
    """SaslHandshake and SaslAuthenticate once a connection is past authentication (or on a
    listener without SASL): ILLEGAL_SASL_STATE, as Kafka's ControllerApis answers them. Kafka's
    controller advertises both on every listener."""
    return {SASL_HANDSHAKE: _handshake_after_authentication, SASL_AUTHENTICATE: _authenticate_after_authentication}
