"""SASL/OAUTHBEARER (RFC 7628, KIP-255) as Kafka 4.3.1 does it, server and client side.

The exchange (Kafka's OAuthBearerSaslServer and OAuthBearerClientInitialResponse): the client
sends ``n,[a=<authzid>],%x01auth=Bearer <token>%x01[<key>=<value>%x01...]%x01``; the server
validates the token and answers empty (done) or, for a token it refuses, the JSON status
``{"status":"invalid_token"}`` (``insufficient_scope`` with the required ``scope`` when a scope is
missing) as a challenge, to which the client answers a single %x01, and the server then fails the
exchange with that JSON as Kafka's SaslAuthenticationException message. A client-first message
that does not parse is a SaslException: the generic "Authentication failed during authentication
due to invalid credentials with SASL mechanism OAUTHBEARER". An authorization id other than the
token's principal is refused with Kafka's message. SASL extensions are parsed and checked as
Kafka checks them (names ``[A-Za-z]+``, not ``auth``); both of Kafka's validators accept all.

The principal is ``User:<the token's principal claim>``; the session's credential expiry is the
token's ``exp`` (SessionLifetimeMs, kafkawire.net.reauthentication).

Validators: Kafka's default, the unsecured one (OAuthBearerUnsecuredValidatorCallbackHandler:
``alg: none`` tokens; its JAAS options ``unsecuredValidatorPrincipalClaimName``,
``...ScopeClaimName``, ``...RequiredScope``, ``...AllowableClockSkewMs``), and the OIDC one of
KIP-768 (kafkawire.net.oauthbearer_jwks), chosen by
``listener.name.<l>.oauthbearer.sasl.server.callback.handler.class``.

The node's own client (``sasl.mechanism.controller.protocol`` / ``...inter.broker.protocol`` =
OAUTHBEARER, and tools' ``--command-config``) makes its token as Kafka's
OAuthBearerUnsecuredLoginCallbackHandler does, from the JAAS options ``unsecuredLogin*``.
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from dataclasses import dataclass, field

from kafkawire.net import reauthentication
from kafkawire.net.config import ConfigError
from kafkawire.net.sasl import SaslFailure

__all__ = ["MECHANISM", "OAuthBearerToken", "InvalidToken", "parse_client_first", "client_first_message",
           "UnsecuredValidator", "OAuthBearerServer", "OAuthBearerClient", "unsecured_login_token",
           "login_extensions", "server_validator", "LOGIN_MODULE", "VALIDATOR_HANDLER", "is_oauthbearer_key",
           "oauthbearer_factories", "unsecured_client", "node_client"]

log = logging.getLogger(__name__)

MECHANISM = "OAUTHBEARER"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
VALIDATOR_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
UNSECURED_VALIDATOR_HANDLER = \
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
CALLBACK_HANDLER_KEY = "sasl.server.callback.handler.class"
SEPARATOR = "\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KEY = "[A-Za-z]+"
_VALUE = r"[\x21-\x7e \t\r\n]+"
_CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>(?:{_KEY}={_VALUE}\x01)*)\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


class InvalidToken(Exception):
    """A token the validator refuses: ``status`` and ``scope`` go to the client (RFC 7628's JSON),
    ``reason`` only to the log, as Kafka keeps it."""

    def __init__(self, reason: str, scope: str | None = None):
        self.reason, self.scope = reason, scope
        self.status = "insufficient_scope" if scope is not None else "invalid_token"
        super().__init__(reason)

    def json(self) -> str:
        """OAuthBearerSaslServer.jsonErrorResponse, byte for byte."""
        text = f'{{"status":"{self.status}"'
        if self.scope is not None:
            text += f', "scope":"{self.scope}"'
        return text + "}"


@dataclass(frozen=True)
class OAuthBearerToken:
    value: str
    principal: str
    lifetime_ms: int                 # the expiry, ms since the epoch
    start_ms: int | None = None
    scope: frozenset = field(default_factory=frozenset)


# --- the client-first message -------------------------------------------------------------------

def parse_client_first(data: bytes) -> tuple[str, str, dict[str, str]]:
    """(token, authorization id, extensions) of a client-first message; SaslFailure (Kafka's
    SaslException: the client sees the generic message) naming what is wrong in the log."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _malformed("Invalid OAUTHBEARER client first message (not UTF-8)") from None
    m = _CLIENT_FIRST.fullmatch(text)
    if m is None:
        raise _malformed("Invalid OAUTHBEARER client first message")
    properties = {}
    for pair in m.group("kvpairs").split(SEPARATOR):
        if pair:
            key, _, value = pair.partition("=")
            properties[key] = value
    auth = properties.pop("auth", None)
    if auth is None:
        raise _malformed("Invalid OAUTHBEARER client first message: 'auth' not specified")
    auth_match = _AUTH.fullmatch(auth)
    if auth_match is None:
        raise _malformed("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    if auth_match.group("scheme").lower() != "bearer":
        raise _malformed(f"Invalid scheme in OAUTHBEARER client first message: {auth_match.group('scheme')[:40]}")
    return auth_match.group("token"), m.group("authzid") or "", properties


def check_extensions(extensions: dict[str, str]) -> None:
    """OAuthBearerClientInitialResponse.validateExtensions; ValueError names the bad one."""
    if "auth" in extensions:
        raise ValueError("Extension name auth is invalid")
    for name, value in extensions.items():
        if not re.fullmatch(_KEY, name):
            raise ValueError(f"Extension name {name} is invalid")
        if not re.fullmatch(_VALUE, value):
            raise ValueError(f"Extension value ({value}) for extension {name} is invalid")


def client_first_message(token: str, authzid: str = "", extensions: dict[str, str] | None = None) -> bytes:
    """OAuthBearerClientInitialResponse.toBytes."""
    extensions = extensions or {}
    check_extensions(extensions)
    pairs = "".join(f"{SEPARATOR}{k}={v}" for k, v in extensions.items())
    header = f"a={authzid}" if authzid else ""
    return f"n,{header},{SEPARATOR}auth=Bearer {token}{pairs}{SEPARATOR}{SEPARATOR}".encode()


def _malformed(reason: str) -> SaslFailure:
    return SaslFailure(_generic("authentication"), f"OAUTHBEARER: {reason}")


def _generic(phase: str) -> str:
    return f"Authentication failed during {phase} due to invalid credentials with SASL mechanism {MECHANISM}"


# --- the server ---------------------------------------------------------------------------------

class OAuthBearerServer:
    """One OAUTHBEARER exchange on the server (OAuthBearerSaslServer), with the interface of
    kafkawire.net.sasl's servers: ``evaluate``, ``complete``, ``username``, ``credential_expiry_ms``."""

    def __init__(self, validator, phase: str = "authentication"):
        self.validator = validator          # .validate(token_text, now_ms) -> OAuthBearerToken
        self.phase = phase
        self.complete = False
        self.username: str | None = None
        self.credential_expiry_ms: int | None = None
        self.extensions: dict[str, str] = {}
        self._error: str | None = None
        self._reason = ""

    def evaluate(self, data: bytes) -> bytes:
        if data == SEPARATOR.encode() and self._error is not None:
            # The client acknowledged our error: Kafka's SaslAuthenticationException, its text sent.
            raise SaslFailure(self._error, f"OAUTHBEARER: the token was refused with {self._error}: {self._reason}",
                              authentication_exception=True)
        self._error = None
        try:
            token_text, authzid, extensions = parse_client_first(data)
            check_extensions(extensions)
        except SaslFailure as failure:
            raise SaslFailure(_generic(self.phase), failure.log_reason) from None
        except ValueError as exc:
            raise SaslFailure(_generic(self.phase), f"OAUTHBEARER: {exc}") from None
        try:
            token = self.validator.validate(token_text, reauthentication.now_ms())
        except InvalidToken as refused:
            # The reason is logged with the failure once the client acknowledges (cut short: a
            # claim in it may be as long as the client's frame).
            self._error = refused.json()
            self._reason = refused.reason if len(refused.reason) <= 500 else refused.reason[:500] + "..."
            log.debug("OAUTHBEARER token refused: %s", self._error)
            return self._error.encode()
        if authzid and authzid != token.principal:
            raise SaslFailure("Authentication failed: Client requested an authorization id "
                              f"({authzid}) that is different from the token's principal name ({token.principal})",
                              authentication_exception=True)
        self.username, self.credential_expiry_ms, self.extensions = token.principal, token.lifetime_ms, extensions
        self.complete = True
        return b""


# --- the unsecured validator --------------------------------------------------------------------

def b64url(part: str, what: str) -> bytes:
    """A Base64 URL encoded value without its padding (a compact JWS's part, a JWK's number);
    InvalidToken otherwise."""
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise InvalidToken(f"malformed Base64 URL encoded value ({what})") from None


def b64url_json(part: str, what: str) -> dict:
    """One dot-separated part of a compact JWS as a JSON object; InvalidToken otherwise."""
    raw = b64url(part, what)
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidToken(f"malformed JSON ({what})") from None
    if not isinstance(value, dict):
        raise InvalidToken(f"malformed JSON ({what}: not an object)")
    return value


def _java_claim(value):
    """A claim as Kafka's unsecured JWS holds it (Jackson's node conversion): numbers stay
    numbers, arrays become lists of texts, anything else its text."""
    if isinstance(value, list):
        return [_java_text(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return _java_text(value)


def _java_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return ""
    return str(value)


def _number(claims: dict, name: str):
    value = claims.get(name)
    if value is not None and not isinstance(value, (int, float)):
        raise InvalidToken(f"The '{name}' claim was not of type Number: String")
    return value


class UnsecuredValidator:
    """OAuthBearerUnsecuredValidatorCallbackHandler, Kafka's default OAUTHBEARER validator."""

    def __init__(self, options: dict, where: str = "sasl.jaas.config"):
        self.principal_claim = (options.get("unsecuredValidatorPrincipalClaimName") or "").strip() or "sub"
        self.scope_claim = (options.get("unsecuredValidatorScopeClaimName") or "").strip() or "scope"
        self.required_scope = [s for s in (options.get("unsecuredValidatorRequiredScope") or "").strip().split(" ") if s]
        for item in self.required_scope:
            if not _SCOPE_ITEM.fullmatch(item):
                raise ConfigError(where, "(hidden)", f"unsecuredValidatorRequiredScope: Invalid scope value: {item}")
        skew = (options.get("unsecuredValidatorAllowableClockSkewMs") or "").strip() or "0"
        try:
            self.clock_skew_ms = int(skew)
        except ValueError:
            self.clock_skew_ms = None
        if self.clock_skew_ms is None or self.clock_skew_ms >= 2**31:       # Integer.parseInt
            raise ConfigError(where, "(hidden)", f"unsecuredValidatorAllowableClockSkewMs: {skew!r} is not an INT")
        if self.clock_skew_ms < 0:
            raise ConfigError(where, "(hidden)", "unsecuredValidatorAllowableClockSkewMs: Allowable clock skew "
                                                 f"millis must not be negative: {skew}")

    def start(self) -> None:
        """Nothing to load (the OIDC validator reads its keys here)."""

    def validate(self, text: str, now: int) -> OAuthBearerToken:
        header, claims = self._parse(text)
        principal = claims.get(self.principal_claim)
        scope = _scope(claims.get(self.scope_claim))
        exp, iat = _number(claims, "exp"), _number(claims, "iat")
        if exp is None:
            raise InvalidToken("No expiration time in JWT")
        if not isinstance(principal, str) or not principal.strip():
            if principal is not None and not isinstance(principal, str):
                raise InvalidToken(f"The '{self.principal_claim}' claim was not of type String")
            raise InvalidToken(f"No principal name in JWT claim: {self.principal_claim}")
        if iat is not None and 1000 * iat > now + self.clock_skew_ms:
            raise InvalidToken(f"The Issued At value ({iat:f} seconds) was after the indicated time ({now} ms) "
                               f"plus allowable clock skew ({self.clock_skew_ms} ms)")
        if now - self.clock_skew_ms >= 1000 * exp:
            raise InvalidToken(f"The indicated time ({now} ms) minus allowable clock skew ({self.clock_skew_ms} ms) "
                               f"was on or after the Expiration Time value ({exp:f} seconds)")
        if iat is not None and exp <= iat:
            raise InvalidToken(f"The Expiration Time time ({exp:f} seconds) was not after the Issued At time "
                               f"({iat:f} seconds)")
        for needed in self.required_scope:
            if needed not in scope:
                raise InvalidToken(f"The provided scope ({sorted(scope)}) was missing a required scope ({needed})",
                                   scope="[" + ", ".join(self.required_scope) + "]")
        return OAuthBearerToken(text, principal, round(exp * 1000), None if iat is None else round(iat * 1000),
                                frozenset(scope))

    @staticmethod
    def _parse(text: str) -> tuple[dict, dict]:
        """OAuthBearerUnsecuredJws's constructor checks, in its order."""
        if ".." in text:
            raise InvalidToken("Malformed compact serialization contains '..'")
        parts = text.split(".")
        if len(parts) != 3:
            raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded "
                               "values")
        header = b64url_json(parts[0], "header")
        claims = {k: _java_claim(v) for k, v in b64url_json(parts[1], "claims").items()}
        if _java_text(header.get("alg")) != "none":
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise InvalidToken("Unsecured JWS must not contain a digital signature")
        return header, claims


def _scope(value) -> set[str]:
    if isinstance(value, str):
        return {value.strip()} if value.strip() else set()
    if isinstance(value, list):
        return {v.strip() for v in value if v.strip()}
    if value is not None:
        raise InvalidToken("The scope claim was not of type List")
    return set()


# --- the client ---------------------------------------------------------------------------------

_RESERVED_CLAIMS = ("iat", "exp")


def unsecured_login_token(options: dict, now: int, where: str = "sasl.jaas.config") -> str:
    """OAuthBearerUnsecuredLoginCallbackHandler's token: header ``{"alg":"none"}``, claims exp, iat,
    then each ``unsecuredLoginStringClaim_<name>``, ``...NumberClaim_<name>``,
    ``...ListClaim_<name>`` (its first character the delimiter); ConfigError names a bad option."""
    if not options or all(k.startswith("unsecuredLoginExtension_") for k in options):
        raise ConfigError(where, "(hidden)", "has no unsecuredLogin*Claim_* option: OAUTHBEARER has no token to send")
    lifetime = options.get("unsecuredLoginLifetimeSeconds", "3600")
    try:
        claims = {"exp": now / 1000 + int(lifetime), "iat": now / 1000}
    except ValueError:
        raise ConfigError(where, "(hidden)", f"unsecuredLoginLifetimeSeconds {lifetime!r} is not an integer") from None
    for key, value in options.items():
        for prefix, convert in (("unsecuredLoginStringClaim_", str), ("unsecuredLoginNumberClaim_", _login_number),
                                ("unsecuredLoginListClaim_", _login_list)):
            if key.startswith(prefix) and len(key) > len(prefix):
                name = key[len(prefix):]
                if name in _RESERVED_CLAIMS:
                    raise ConfigError(where, "(hidden)", f"Cannot explicitly set the '{name}' claim")
                try:
                    claims[name] = convert(value)
                except ValueError:
                    raise ConfigError(where, "(hidden)", f"{key}: {value!r} is not a number") from None
    principal_claim = (options.get("unsecuredLoginPrincipalClaimName") or "").strip() or "sub"
    if not isinstance(claims.get(principal_claim), str) or not claims[principal_claim].strip():
        raise ConfigError(where, "(hidden)", f"No principal name in JWT claim: {principal_claim}")
    header = _b64url(json.dumps({"alg": "none"}, separators=(",", ":")).encode())
    return f"{header}.{_b64url(json.dumps(claims, separators=(',', ':')).encode())}."


def _login_number(value: str) -> float:
    return float(value)


def _login_list(value: str) -> list[str]:
    if len(value) <= 1:
        return []
    delimiter, text = value[0], value[1:]
    items = text.split(delimiter)
    while len(items) > 1 and items[-1] == "":       # Java's split drops trailing empty strings
        items.pop()
    if text.startswith(delimiter) or text.endswith(delimiter) or delimiter * 2 in text:
        items.append("")
    return items


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def login_extensions(options: dict, where: str = "sasl.jaas.config") -> dict[str, str]:
    """``unsecuredLoginExtension_<name>`` options: the SASL extensions the client sends."""
    extensions = {k[len("unsecuredLoginExtension_"):]: v for k, v in options.items()
                  if k.startswith("unsecuredLoginExtension_")}
    try:
        check_extensions(extensions)
    except ValueError as exc:
        raise ConfigError(where, "(hidden)", str(exc)) from None
    return extensions


class OAuthBearerClient:
    """The client side (OAuthBearerSaslClient), with kafkawire.net.sasl.SaslClient's interface.
    ``token`` is called once per exchange, so each connection and re-authentication sends a
    token made then (Kafka's login refreshes its token before it expires; one made per exchange
    is never stale)."""
    mechanism = MECHANISM

    def __init__(self, token, extensions: dict[str, str] | None = None):
        self._token = token
        self.extensions = extensions or {}
        self._step = 0
        self.server_error: str | None = None

    @property
    def complete(self) -> bool:
        return self._step == 2

    def first_token(self) -> bytes:
        self._step = 1
        return client_first_message(self._token(), "", self.extensions)

    def next_token(self, server_token: bytes) -> bytes | None:
        if server_token:
            # The server's error (RFC 7628 3.2.2): acknowledge it; its failure answer follows.
            self.server_error = server_token.decode("utf-8", "replace")
            return SEPARATOR.encode()
        self._step = 2
        return None


def node_client(lookup, options: dict, where: str):
    """The SaslClient factory of the node's own connections: tokens from the token endpoint when
    the login callback handler is Kafka's OAuthBearerLoginCallbackHandler
    (kafkawire.net.oauthbearer_login; its extensions the JAAS options ``extension_<name>``), else
    the unsecured login module's. ``lookup(name)`` -> (value or None, key)."""
    from kafkawire.net.oauthbearer_login import token_endpoint
    endpoint = token_endpoint(lookup, options, where)
    if endpoint is None:
        return unsecured_client(options, where)
    extensions = {k[len("extension_"):]: v for k, v in options.items() if k.startswith("extension_")}
    try:
        check_extensions(extensions)
    except ValueError as exc:
        raise ConfigError(where, "(hidden)", str(exc)) from None
    return lambda: OAuthBearerClient(endpoint.token, extensions)


def unsecured_client(options: dict, where: str = "sasl.jaas.config"):
    """A SaslClient factory for the unsecured login module's options; ConfigError at once for
    options that cannot make a token."""
    unsecured_login_token(options, reauthentication.now_ms(), where)
    extensions = login_extensions(options, where)
    return lambda: OAuthBearerClient(lambda: unsecured_login_token(options, reauthentication.now_ms(), where), extensions)


# --- configuration ------------------------------------------------------------------------------

def is_oauthbearer_key(rest: str) -> bool:
    """Whether ``rest`` (a key, after any ``listener.name.<l>.`` prefix) is an OAUTHBEARER setting."""
    if rest.startswith("oauthbearer."):
        rest = rest[len("oauthbearer."):]
        if rest == CALLBACK_HANDLER_KEY:
            return True
    from kafkawire.net.oauthbearer_jwks import SETTINGS
    from kafkawire.net.oauthbearer_login import LOGIN_SETTINGS
    return rest in SETTINGS or rest in LOGIN_SETTINGS


def server_validator(props: dict, listener: str, jaas_entry):
    """The listener's validator: the OIDC one when
    ``listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`` names Kafka's
    OAuthBearerValidatorCallbackHandler, else Kafka's unsecured one; ConfigError names the key."""
    key = f"listener.name.{listener.lower()}.oauthbearer.{CALLBACK_HANDLER_KEY}"
    handler = props.get(key, "").strip()
    if handler in ("", UNSECURED_VALIDATOR_HANDLER):
        return UnsecuredValidator(jaas_entry.options, jaas_entry.key)
    if handler != VALIDATOR_HANDLER:
        raise ConfigError(key, handler, f"is not supported: kafkawire implements {VALIDATOR_HANDLER} and "
                                        f"{UNSECURED_VALIDATOR_HANDLER} only")
    from kafkawire.net.oauthbearer_jwks import jwks_validator
    return jwks_validator(props, listener)


def oauthbearer_factories(security) -> dict:
    """kafkawire.net.sasl.SaslServerSession's server factory for a listener enabling OAUTHBEARER."""
    validator = getattr(security, "oauthbearer", None)
    if validator is None:
        return {}
    return {MECHANISM: lambda phase: OAuthBearerServer(validator, phase)}
