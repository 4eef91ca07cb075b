"""SASL on a Kafka connection: the server's per-connection state (Kafka's SaslServerAuthenticator)
and the mechanisms PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802/7677, through ``scramp``),
server and client side.

The server's rules, as Kafka's:

* Before authentication completes only ApiVersions (once), SaslHandshake (once) and then the
  SASL tokens are accepted. Any other request closes the connection unanswered ("Unexpected Kafka
  request of type X during SASL handshake."); in the token phase a request other than
  SaslAuthenticate is answered with ILLEGAL_SASL_STATE and the connection closed.
* SaslHandshake v0 is followed by raw size-prefixed tokens; v1 by SaslAuthenticate requests.
* Every frame before authentication completes (ApiVersions, SaslHandshake, the tokens) is at most
  ``sasl.server.max.receive.size`` bytes (default 524288, listener-prefixable; -1 no bound): a
  larger size closes the connection before its body is read (kafkawire.net.connection). This
  also bounds what a client gets echoed: the SCRAM server-first message repeats its nonce.
* A mechanism the listener does not enable is answered UNSUPPORTED_SASL_MECHANISM (with the
  enabled ones) and the connection closed.
* A failed authentication is answered SASL_AUTHENTICATION_FAILED with Kafka's message (for
  SCRAM the generic "... due to invalid credentials with SASL mechanism X", which does not tell
  whether the user exists) and the connection closed.
* Those refusals go out with the close after connection.failed.authentication.delay.ms
  (kafkawire.net.authentication says which ones, as Kafka's).
* A re-authentication (KIP-368, kafkawire.net.reauthentication) is a new session on the
  authenticated connection, from SaslHandshake on, that must keep the mechanism and the principal.

PLAIN checks ``user_<name>=<password>`` options of the listener's PlainLoginModule JAAS entry;
SCRAM checks the credentials of the metadata image (UserScramCredentialRecord), through a lookup
the node supplies. A SCRAM client-first message carrying the extension ``tokenauth=true`` (Kafka's
ScramExtensions, after the nonce) authenticates a delegation token instead (ScramSaslServer): the
user name is the token id, the password the token's base64 HMAC, checked against the credential
``token_lookup`` gives (None for a token it does not hold, or with tokens disabled), and the
principal is User:<the token's owner name>, token-authenticated (it may not create, renew,
expire or describe tokens). Other extensions are ignored, as Kafka ignores them.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
from typing import Callable

from kafkawire._extras import require
from kafkawire.net.sasl_gssapi import require_gssapi
from kafkawire.protocol.error_codes import Errors

__all__ = ["SaslServerSession", "SaslFailure", "SaslClient", "ScramLookup", "SCRAM_MECHANISM_TYPES",
           "scram_credential", "require_mechanism"]

log = logging.getLogger(__name__)


def _scramp():
    """scramp, needed by SCRAM only (the extra ``security``): PLAIN and the main job run without it."""
    scramp = require("scramp", "security", "SASL/SCRAM")
    # scramp refuses salts under 12 bytes (RFC 5802 gives no minimum); Kafka stores any salt it is
    # given (its StorageTool's own example is the 2 bytes of salt="N3E="), and those credentials must
    # authenticate here too. scramp reads the bound from this class attribute.
    scramp.core.Salt.MIN_LENGTH = 1
    return scramp


def require_mechanism(mechanism: str) -> None:
    """Raise MissingExtra when ``mechanism`` needs a package that is not installed: called where
    the configuration enables it, so a node fails at startup rather than at a client's handshake."""
    if mechanism.startswith("SCRAM-"):
        _scramp()
    elif mechanism == "GSSAPI":
        require_gssapi()


# ScramMechanism's type ids, as UserScramCredentialRecord stores them.
SCRAM_MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
# ScramMechanism.minIterations: Kafka refuses stored credentials below it.
SCRAM_MIN_ITERATIONS = 4096
# (mechanism, user) -> (salt, stored_key, server_key, iterations), or None for an unknown user.
ScramLookup = Callable[[str, str], "tuple[bytes, bytes, bytes, int] | None"]
# (mechanism, token id) -> ((salt, stored_key, server_key, iterations), owner name, expiry timestamp
# in ms), or None.
TokenLookup = Callable[[str, str], "tuple[tuple[bytes, bytes, bytes, int], str, int] | None"]
TOKEN_AUTH_EXTENSION = "tokenauth"          # ScramLoginModule.TOKEN_AUTH_CONFIG


class SaslFailure(Exception):
    """Authentication failed: ``message`` is what Kafka sends in SaslAuthenticateResponse."""

    def __init__(self, message: str, log_reason: str | None = None, authentication_exception: bool = False,
                 unanswered: bool = False):
        self.message = message
        # A failure Kafka takes for a network error (a replayed Kerberos authenticator): the
        # connection closes at once, unanswered, and the client retries.
        self.unanswered = unanswered
        self.log_reason = log_reason or message
        # Kafka's SaslAuthenticationException (its close is delayed) rather than a SaslException;
        # told apart where it matters: after raw tokens, for SCRAM.
        self.authentication_exception = authentication_exception
        super().__init__(message)


class _PlainServer:
    def __init__(self, users: dict[str, str]):
        self.users = users
        self.complete = False
        self.username = None

    def evaluate(self, token: bytes) -> bytes:
        # PlainSaslServer.evaluateResponse: authzid NUL authcid NUL password, UTF-8.
        parts = token.decode("utf-8", "replace").split("\x00")
        if len(parts) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        expected = self.users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailure("Authentication failed: Invalid username or password",
                              f"PLAIN: invalid username or password for user {_shown(username)}")
        if authzid and authzid != username:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username")
        self.username, self.complete = username, True
        return b""


class _ScramServer:
    def __init__(self, mechanism: str, lookup: ScramLookup, token_lookup: TokenLookup | None = None,
                 phase: str = "authentication"):
        self.mechanism = mechanism
        self.phase = phase              # "re-authentication" in Kafka's messages during one (KIP-368)
        self.complete = False
        self.username = None
        self.token_authenticated = False
        # The token's expiry timestamp (ms) when a token logged in: ScramSaslServer's
        # CREDENTIAL.LIFETIME.MS, which bounds the session (kafkawire.net.reauthentication).
        self.credential_expiry_ms: int | None = None
        self._step = 0
        self._authzid = ""              # the gs2 header's a=, which must be empty or the user name

        def auth_fn(username):          # scramp decoded the saslname's =2C and =3D
            # ClientFirstMessage reads an ASCII saslname only.
            if not username.isascii() or "\x00" in username:
                raise _UnknownUser(username, f"Invalid SCRAM client first message format: user name {_shown(username)}")
            if self.token_authenticated:
                token = token_lookup(mechanism, username) if token_lookup is not None else None
                if token is None:
                    raise _UnknownUser(username, f"Token Authentication failed: Invalid tokenId : {_shown(username)}")
                found, owner, self.credential_expiry_ms = token
                self._check_authzid(username)
                self.username = owner
                return found
            found = lookup(mechanism, username)
            if found is None:
                raise _UnknownUser(username)
            self._check_authzid(username)
            if found[3] < SCRAM_MIN_ITERATIONS:
                raise _UnknownUser(username, f"iterations {found[3]} is less than the minimum "
                                             f"{SCRAM_MIN_ITERATIONS} for {mechanism}")
            self.username = username
            return found

        self._server = _scramp().ScramMechanism(mechanism).make_server(auth_fn)

    def evaluate(self, token: bytes) -> bytes:
        generic = f"Authentication failed during {self.phase} due to invalid credentials with SASL " \
                  f"mechanism {self.mechanism}"
        try:
            text = token.decode("utf-8")
            if self._step == 0:
                self._client_first(text)
                self._step = 1
                return self._server.get_server_first().encode()
            if self._step == 1:
                self._server.set_client_final(text)
                self._step, self.complete = 2, True
                return self._server.get_server_final().encode()
        except (_UnknownUser, _OtherAuthorizationId, _scramp().ScramException, UnicodeDecodeError, ValueError) as exc:
            # scramp 1.5 raises what auth_fn raised as the cause of its own "auth_fn exception".
            cause = exc.__cause__ if isinstance(exc.__cause__, (_UnknownUser, _OtherAuthorizationId)) else exc
            if isinstance(cause, _OtherAuthorizationId):   # Kafka's SaslAuthenticationException: its text is sent
                raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                                  "from username", authentication_exception=True) from None
            if isinstance(cause, _UnknownUser):
                raise SaslFailure(generic, f"{self.mechanism}: {cause.reason}") from None
            raise SaslFailure(generic, f"{self.mechanism} for user {self.username!r}: {exc}") from None
        raise SaslFailure(generic, f"{self.mechanism}: a token after the exchange completed")


    def _client_first(self, text: str) -> None:
        """Kafka's ClientFirstMessage: the gs2 header, n=, r=, then its extensions (key=value
        pairs, which scramp does not parse): scramp reads the message without them, and signs
        the bare message the client signed, extensions and all."""
        header_end = text.find(",", text.find(",") + 1) + 1
        attributes = text[header_end:].split(",") if header_end > 0 else []
        extensions = dict(a.partition("=")[::2] for a in attributes[2:]) if len(attributes) > 2 else {}
        self.token_authenticated = extensions.get(TOKEN_AUTH_EXTENSION, "").lower() == "true"
        header = text[:header_end]
        flag, _, authzid = header[:-1].partition(",")
        if flag in ("n", "y") and authzid.startswith("a=") and len(authzid) > 2:
            # scramp refuses any authzid; Kafka takes the user's own name (checked in auth_fn).
            self._authzid, header = authzid[2:], flag + ",,"
        self._server.set_client_first(header + (",".join(attributes[:2]) if extensions else text[header_end:]))
        if extensions:
            self._server.client_first_bare = text[header_end:]
        if self._authzid:               # the client's c= binds the header it sent, authzid and all
            self._server.gs2_header = _SentGs2Header(text[:header_end])

    def _check_authzid(self, username: str) -> None:
        if self._authzid and self._authzid != username:
            raise _OtherAuthorizationId()


def _shown(name: str) -> str:
    """A client-chosen name as logged: quoted, and cut short (a frame before authentication may
    hold up to sasl.server.max.receive.size bytes of it)."""
    return repr(name) if len(name) <= _SHOWN_MAX else repr(name[:_SHOWN_MAX]) + f"... ({len(name)} characters)"


_SHOWN_MAX = 100


class _OtherAuthorizationId(Exception):
    """The client asked for an authorization id other than its user name (ScramSaslServer)."""


class _SentGs2Header:
    """The gs2 header as the client sent it, for scramp's check of the client final's c=."""

    def __init__(self, header: str):
        self.header = header

    def make_cbind_input(self, channel_binding) -> bytes:
        return self.header.encode()


class _UnknownUser(Exception):
    def __init__(self, username, reason=None):
        self.reason = reason or f"no credentials for user {_shown(username)}"
        super().__init__(self.reason)


class SaslServerSession:
    """One connection's SASL state. ``state``: INITIAL -> (ApiVersions) HANDSHAKE ->
    (SaslHandshake) AUTHENTICATE -> COMPLETE. A re-authentication (``reauthentication()``, KIP-368)
    is a new session from HANDSHAKE that remembers the mechanism and principal it must keep: another
    enabled mechanism is answered NONE and then REAUTH_BAD_MECHANISM refuses the next token, and
    another principal fails the exchange, as Kafka's SaslServerAuthenticator does."""

    def __init__(self, mechanisms: tuple[str, ...], plain_users: dict[str, str] | None,
                 scram_lookup: ScramLookup | None, token_lookup: TokenLookup | None = None,
                 previous: tuple[str, str] | None = None, server_factories: dict | None = None, gssapi=None):
        self.mechanisms = list(mechanisms)
        # mechanism -> (phase -> server) for mechanisms whose servers live in their own modules
        # (OAUTHBEARER: kafkawire.net.sasl_oauthbearer).
        self.server_factories = server_factories or {}
        self.gssapi = gssapi            # the listener's kafkawire.net.sasl_gssapi.GssapiAcceptor, for GSSAPI
        self.plain_users = plain_users or {}
        self.scram_lookup = scram_lookup
        self.token_lookup = token_lookup
        self.previous = previous        # (mechanism, principal) of the session re-authenticated
        self.state = "INITIAL" if previous is None else "HANDSHAKE"
        self.mechanism: str | None = None
        self.raw_tokens = False         # SaslHandshake v0: tokens without Kafka headers follow
        self._server = None

    def reauthentication(self) -> "SaslServerSession":
        """A new session for a SaslHandshake on this authenticated connection."""
        return SaslServerSession(tuple(self.mechanisms), self.plain_users, self.scram_lookup, self.token_lookup,
                                 previous=(self.mechanism, self.principal), server_factories=self.server_factories,
                                 gssapi=self.gssapi)

    @property
    def phase(self) -> str:
        return "authentication" if self.previous is None else "re-authentication"

    @property
    def credential_expiry_ms(self) -> int | None:
        """The expiry timestamp (ms) of the credential that logged in, if it has one (a token's)."""
        return getattr(self._server, "credential_expiry_ms", None) if self.complete else None

    @property
    def complete(self) -> bool:
        return self.state == "COMPLETE"

    @property
    def principal(self) -> str | None:
        return None if self._server is None or not self._server.complete else f"User:{self._server.username}"

    @property
    def token_authenticated(self) -> bool:
        """KafkaPrincipal.tokenAuthenticated of ``principal``: SCRAM with a delegation token."""
        return self.complete and getattr(self._server, "token_authenticated", False)

    def api_versions_allowed(self) -> bool:
        return self.state == "INITIAL"

    def api_versions_answered(self) -> None:
        self.state = "HANDSHAKE"

    def handshake(self, mechanism: str, version: int) -> int:
        """The SaslHandshake answer's error code; NONE moves to the token phase."""
        if mechanism not in self.mechanisms:
            self.state = "FAILED"
            return int(Errors.UNSUPPORTED_SASL_MECHANISM)
        self.raw_tokens = version == 0
        if self.previous is not None and mechanism != self.previous[0]:
            self.state, self.mechanism = "REAUTH_BAD_MECHANISM", mechanism
            return int(Errors.NONE)
        self.mechanism = mechanism
        if mechanism in self.server_factories:
            self._server = self.server_factories[mechanism](self.phase)
        elif mechanism == "PLAIN":
            self._server = _PlainServer(self.plain_users)
        elif mechanism == "GSSAPI":
            self._server = self.gssapi.server(self.phase)
        else:
            lookup = self.scram_lookup or (lambda mech, user: None)
            self._server = _ScramServer(mechanism, lookup, self.token_lookup, self.phase)
        self.state = "AUTHENTICATE"
        return int(Errors.NONE)

    def bad_mechanism_message(self) -> str:
        return f"SASL mechanism '{self.mechanism}' requested by client is not supported for re-authentication " \
               f"of mechanism '{self.previous[0]}'"

    def evaluate(self, token: bytes) -> bytes:
        """The server's token for the client's; raises SaslFailure."""
        try:
            response = self._server.evaluate(token)
        except SaslFailure:
            self.state = "FAILED"
            raise
        if self._server.complete:
            if self.previous is not None and self.principal != self.previous[1]:
                # ReauthInfo.ensurePrincipalUnchanged: a SaslAuthenticationException.
                self.state = "FAILED"
                raise SaslFailure("Cannot change principals during re-authentication from "
                                  f"{_dotted(self.previous[1])}: {_dotted(self.principal)}",
                                  authentication_exception=True)
            self.state = "COMPLETE"
        return response


def _dotted(principal: str) -> str:
    """KafkaPrincipal as ensurePrincipalUnchanged writes it: type.name."""
    kind, _, name = principal.partition(":")
    return f"{kind}.{name}"


class SaslClient:
    """The client side of PLAIN or SCRAM for the node's own connections."""

    def __init__(self, mechanism: str, username: str, password: str):
        self.mechanism = mechanism
        self.username, self.password = username, password
        self._scram = None if mechanism == "PLAIN" else _ScramClient(mechanism, username, password)
        self._step = 0

    @property
    def complete(self) -> bool:
        return self._step == 3 or (self.mechanism == "PLAIN" and self._step == 1)

    def first_token(self) -> bytes:
        self._step = 1
        if self.mechanism == "PLAIN":
            return b"\x00" + self.username.encode() + b"\x00" + self.password.encode()
        return self._scram.get_client_first().encode()

    def next_token(self, server_token: bytes) -> bytes | None:
        """The answer to the server's token, or None once the exchange is complete. Raises
        ScramClientError if the server's answer is wrong (its proof, its nonce)."""
        if self.mechanism == "PLAIN":
            return None
        if self._step == 1:
            self._scram.set_server_first(server_token.decode())
            self._step = 2
            return self._scram.get_client_final().encode()
        self._scram.set_server_final(server_token.decode())
        self._step = 3
        return None


class ScramClientError(Exception):
    """The server's SCRAM answer does not verify."""


class _ScramClient:
    """Kafka's ScramSaslClient: the user name as a saslname (``,`` and ``=`` escaped) and the
    password's UTF-8 bytes as they are (no SASLprep, which scramp's client applies), an
    iteration count below the mechanism's minimum refused, the server's signature checked."""

    def __init__(self, mechanism: str, username: str, password: str):
        self.hash = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
        self.password = password
        self.nonce = base64.b64encode(os.urandom(18)).decode()
        self.client_first_bare = f"n={sasl_name(username)},r={self.nonce}"
        self.server_signature = b""

    def get_client_first(self) -> str:
        return "n,," + self.client_first_bare

    def set_server_first(self, server_first: str) -> None:
        self.server_first = server_first
        attributes = _scram_attributes(server_first)
        try:
            self.server_nonce, salt, iterations = attributes["r"], base64.b64decode(attributes["s"]), int(attributes["i"])
        except (KeyError, ValueError) as exc:
            raise ScramClientError(f"invalid server first message {server_first!r}: {exc}") from None
        if not self.server_nonce.startswith(self.nonce):
            raise ScramClientError("the server's nonce does not start with the client's")
        if iterations < SCRAM_MIN_ITERATIONS:
            raise ScramClientError(f"Requested iterations {iterations} is less than the minimum "
                                   f"{SCRAM_MIN_ITERATIONS}")
        self.salted = hashlib.pbkdf2_hmac(self.hash, self.password.encode(), salt, iterations)

    def get_client_final(self) -> str:
        without_proof = f"c=biws,r={self.server_nonce}"
        auth_message = f"{self.client_first_bare},{self.server_first},{without_proof}".encode()
        client_key = hmac.new(self.salted, b"Client Key", self.hash).digest()
        signature = hmac.new(hashlib.new(self.hash, client_key).digest(), auth_message, self.hash).digest()
        server_key = hmac.new(self.salted, b"Server Key", self.hash).digest()
        self.server_signature = hmac.new(server_key, auth_message, self.hash).digest()
        proof = base64.b64encode(bytes(k ^ s for k, s in zip(client_key, signature))).decode()
        return f"{without_proof},p={proof}"

    def set_server_final(self, server_final: str) -> None:
        try:
            verifier = base64.b64decode(_scram_attributes(server_final).get("v", ""), validate=True)
        except ValueError:
            verifier = b""
        if not hmac.compare_digest(verifier, self.server_signature):
            raise ScramClientError("Invalid server signature in server final message")


def _scram_attributes(message: str) -> dict:
    attributes = dict(a.split("=", 1) for a in message.split(",") if "=" in a)
    if "e" in attributes:
        raise ScramClientError(f"the server refused: {attributes['e']}")
    return attributes


def sasl_name(username: str) -> str:
    """ScramFormatter.saslName: ``=`` as ``=3D``, ``,`` as ``=2C``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def scram_credential(mechanism: str, password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes, bytes, int]:
    """(salt, stored_key, server_key, iterations) as Kafka's ScramFormatter computes them: from
    the password's UTF-8 bytes (scramp's make_auth_info would SASLprep it first)."""
    digest = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    return salt, hashlib.new(digest, client_key).digest(), server_key, iterations
