"""SASL/GSSAPI (Kerberos V5, RFC 4752) on a listener, as Kafka 4.3.1's broker runs it (the JDK's
GSSAPI SASL server behind SaslServerAuthenticator), through the ``gssapi`` package (the extra
``kerberos``) and the system's MIT or Heimdal GSS-API library.

What the listener reads (``GssapiAcceptor.from_config``):

* the JAAS entry ``listener.name.<listener>.gssapi.sasl.jaas.config``: a Krb5LoginModule with
  ``useKeyTab=true``, ``keyTab`` (the keytab file; unset: the library's default keytab,
  ``KRB5_KTNAME``) and ``principal`` (``service/host@REALM``; the acceptor takes tickets for that
  principal only, as the JDK's server is made for its service and host);
* the service name, the JAAS ``serviceName`` option or ``sasl.kerberos.service.name`` (one of
  them is required and they must agree, as Kafka's KerberosLogin requires; the principal is what
  the acceptor serves);
* ``sasl.kerberos.principal.to.local.rules`` (kafkawire.net.kerberos_names), with the default realm
  of the Kerberos configuration (``KRB5_CONFIG``, else /etc/krb5.conf).

The exchange (``GssapiServer``): the client's GSS-API context tokens until the context is
established (the server's last token, the AP-REP of mutual authentication, is answered by an
empty client token); then the server offers, wrapped, "no security layer" only and a 65536-byte
buffer, as the JDK's server does; the client's wrapped answer must select it and may name an
authorization id, which is logged and not checked (Kafka's SaslServerCallbackHandler authorizes any
and keeps the authenticated principal). The connection's principal is ``User:`` and the client's
principal through the rules. Every failure is answered with Kafka's generic message
("Authentication failed during authentication due to invalid credentials with SASL mechanism
GSSAPI"; the reason is logged), but a replayed authenticator or a ticket not yet valid, which Kafka
treats as a network error the client retries: the connection is closed unanswered.

The session has no credential lifetime (the JDK's server gives Kafka none):
``connections.max.reauth.ms`` alone bounds it (KIP-368).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kafkawire._extras import require

from .config_values import ConfigError
from .kerberos_names import PRINCIPAL_TO_LOCAL_RULES_KEY, KerberosName, KerberosShortNamer, NoMatchingRule

__all__ = ["GssapiAcceptor", "GssapiServer", "require_gssapi", "SERVICE_NAME_KEY", "KERBEROS_ACCEPTED_KEYS"]

log = logging.getLogger(__name__)

SERVICE_NAME_KEY = "sasl.kerberos.service.name"
# The login thread's settings (KerberosLogin renews a TGT the acceptor does not need): accepted.
KERBEROS_ACCEPTED_KEYS = frozenset({SERVICE_NAME_KEY, PRINCIPAL_TO_LOCAL_RULES_KEY, "sasl.kerberos.kinit.cmd",
                                    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
                                    "sasl.kerberos.min.time.before.relogin"})
_NO_SECURITY_LAYER = 1          # RFC 4752's bit mask of security layers
_MAX_BUFFER = 65536             # the JDK's default javax.security.sasl.maxbuffer
# krb5 error codes (krb5_err.et) Kafka's KerberosError handles as retriable: the client retries.
_KRB5_ERROR_BASE = -1765328384
_RETRIABLE = {(_KRB5_ERROR_BASE + code) & 0xFFFFFFFF: name
              for code, name in ((33, "ticket not yet valid"), (34, "request is a replay"))}


def require_gssapi():
    """gssapi, needed by the GSSAPI mechanism only (the extra ``kerberos``)."""
    return require("gssapi", "kerberos", "SASL/GSSAPI")


@dataclass
class GssapiAcceptor:
    """One listener's GSSAPI settings and, once ``acquire()`` ran, its acceptor credentials."""
    jaas_key: str
    principal: str
    keytab: str | None
    service_name: str
    short_namer: KerberosShortNamer
    _credentials: object = field(default=None, repr=False)

    @classmethod
    def from_config(cls, entry, lookup) -> "GssapiAcceptor":
        """From the listener's JAAS entry (kafkawire.net.security.JaasEntry) and ``lookup(key)``,
        which gives (value, source key) of a listener-prefixable key. ConfigError names the key."""
        principal, keytab, service_name = login_options(entry, lookup)
        rules, rules_source = lookup(PRINCIPAL_TO_LOCAL_RULES_KEY)
        namer = KerberosShortNamer(rules, _default_realm(), rules_source)
        if KerberosName.parse(principal).service != service_name:
            log.warning("%s: the principal %s is not of service %s; the listener accepts tickets for %s",
                        entry.key, principal, service_name, principal)
        return cls(entry.key, principal, keytab, service_name, namer)

    def acquire(self) -> None:
        """The principal's acceptor credentials from the keytab: a keytab without the principal's key
        stops the node at start, naming the JAAS key (Kafka's login fails there too)."""
        gssapi = require_gssapi()
        store = {"keytab": self.keytab} if self.keytab else None
        try:
            name = gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
            self._credentials = gssapi.Credentials(name=name, usage="accept", store=store)
        except gssapi.exceptions.GSSError as exc:
            raise ConfigError(self.jaas_key, "(hidden)", f"gives no usable key for principal {self.principal} "
                                                         f"in keytab {self.keytab or '(default)'}: "
                                                         f"{_gss_text(exc)}") from None

    def server(self, phase: str) -> "GssapiServer":
        if self._credentials is None:
            self.acquire()
        return GssapiServer(self._credentials, self.short_namer, phase)


def login_options(entry, lookup, ticket_cache_allowed: bool = False) -> tuple:
    """(principal, keytab or None, service name) of a Krb5LoginModule JAAS entry, as the listener
    and the node's own GSSAPI client read it; ConfigError names the key. With
    ``ticket_cache_allowed`` (a client's ``sasl.jaas.config``), an entry with ``useTicketCache=true``
    and no keytab gives (principal or None, None, service name, its ``ticketCache`` or "" for the
    default cache, KRB5CCNAME), as a Kafka client logs in after ``kinit``."""
    options = entry.options
    if not entry.module.endswith("Krb5LoginModule"):
        raise ConfigError(entry.key, "(hidden)", f"has login module {entry.module}; GSSAPI needs "
                                                 "com.sun.security.auth.module.Krb5LoginModule")
    configured, source = lookup(SERVICE_NAME_KEY)
    if options.get("useKeyTab", "false").lower() != "true":
        if ticket_cache_allowed and options.get("useTicketCache", "false").lower() == "true":
            service = _service_name(options.get("serviceName"), configured, source)
            return options.get("principal"), None, service, options.get("ticketCache", "")
        raise ConfigError(entry.key, "(hidden)", "needs useKeyTab=true: kafkawire's GSSAPI reads its key from a "
                                                 "keytab (keyTab=...)" + (", or useTicketCache=true"
                                                                          if ticket_cache_allowed else ""))
    principal = options.get("principal")
    if not principal:
        raise ConfigError(entry.key, "(hidden)", "needs a principal option (service/host@REALM): the principal the "
                                                 "node accepts tickets for and logs in as")
    try:
        KerberosName.parse(principal)
    except NoMatchingRule:
        raise ConfigError(entry.key, "(hidden)", f"Principal has name with unexpected format {principal}") from None
    return principal, options.get("keyTab"), _service_name(options.get("serviceName"), configured, source)


def _service_name(jaas_value: str | None, configured: str | None, source: str) -> str:
    """KerberosLogin.getServiceName: the JAAS serviceName option or sasl.kerberos.service.name."""
    if jaas_value is not None and configured is not None and jaas_value != configured:
        raise ConfigError(source, configured, f"Conflicting serviceName values found in JAAS and Kafka configs "
                                              f"value in JAAS file {jaas_value}, value in Kafka config {configured}")
    if jaas_value is not None:
        return jaas_value
    if configured is not None:
        return configured.strip()
    raise ConfigError(SERVICE_NAME_KEY, None, "No serviceName defined in either JAAS or Kafka config")


def _default_realm() -> str:
    """The Kerberos configuration's default realm, or the empty one (Kafka's fallback)."""
    gssapi = require_gssapi()
    try:
        name = gssapi.Name("tmp", gssapi.NameType.kerberos_principal).canonicalize(gssapi.MechType.kerberos)
    except gssapi.exceptions.GSSError:
        return ""
    return str(name).partition("@")[2]


def _gss_text(exc) -> str:
    try:
        return exc.gen_message()
    except Exception:               # the library's own text is a courtesy; its absence is not an error
        return str(exc)


class GssapiServer:
    """One authentication's server side: ``evaluate`` as the other mechanisms' servers."""

    def __init__(self, credentials, short_namer: KerberosShortNamer, phase: str):
        gssapi = require_gssapi()
        self._gssapi = gssapi
        self._context = gssapi.SecurityContext(creds=credentials, usage="accept")
        self.short_namer = short_namer
        self.phase = phase
        self.complete = False
        self.username: str | None = None
        self.peer: str | None = None
        self._stage = "context"

    def evaluate(self, token: bytes) -> bytes:
        # The import keeps SaslFailure out of this module's import (kafkawire.net.sasl imports it).
        from .sasl import SaslFailure
        generic = f"Authentication failed during {self.phase} due to invalid credentials with SASL mechanism GSSAPI"
        try:
            return self._evaluate(token)
        except self._gssapi.exceptions.GSSError as exc:
            retriable = _RETRIABLE.get(getattr(exc, "min_code", None) or 0)
            raise SaslFailure(generic, f"GSSAPI: {_gss_text(exc)}", unanswered=retriable is not None) from None
        except _Refused as exc:
            raise SaslFailure(generic, f"GSSAPI: {exc}") from None

    def _evaluate(self, token: bytes) -> bytes:
        if self._stage == "context":
            answer = self._context.step(token)
            if not self._context.complete:
                return answer or b""
            self.peer = str(self._context.initiator_name)
            if answer:
                self._stage = "empty"
                return answer
            return self._offer()
        if self._stage == "empty":
            if token:
                raise _Refused("Handshake expected to be empty")
            return self._offer()
        if self._stage == "layer":
            return self._choose(self._context.unwrap(token).message)
        raise _Refused("a token after the exchange completed")

    def _offer(self) -> bytes:
        self._stage = "layer"
        offer = bytes([_NO_SECURITY_LAYER]) + _MAX_BUFFER.to_bytes(3, "big")
        return self._context.wrap(offer, False).message

    def _choose(self, message: bytes) -> bytes:
        if len(message) < 4:
            raise _Refused(f"Invalid message on server; length is {len(message)}")
        if message[0] & _NO_SECURITY_LAYER == 0:
            raise _Refused(f"Client selected unsupported protection: {message[0]}")
        authorization_id = message[4:].decode("utf-8", "replace") if len(message) > 4 else self.peer
        log.info("Successfully authenticated client: authenticationID=%s; authorizationID=%s.",
                 self.peer, authorization_id)
        try:
            self.username = self.short_namer.short_name(self.peer)
        except NoMatchingRule as exc:
            raise _Refused(f"Failed to set name for '{self.peer}' based on Kerberos authentication rules: "
                           f"{exc}") from None
        self._stage, self.complete = "done", True
        return b""


class _Refused(Exception):
    """The exchange cannot go on (the JDK server's SaslException): the reason is logged only."""


class GssapiClient:
    """The node's own GSSAPI client (raft, inter-broker), as Kafka's SaslClientAuthenticator with
    the JDK's GSSAPI client: it logs in as ``principal`` with its keytab (a ticket cache in memory,
    one per principal and keytab, which the library fills from the keytab again when its ticket
    nears its end, as Kafka's login keeps one ticket-granting ticket for its connections), asks for ``<service name>/<peer host>`` (an address is looked up in reverse, as
    Java's InetAddress.getHostName does), requests mutual authentication, takes the server's "no
    security layer" and names itself as the authorization id. ``prepare(host)`` does the KDC
    round trips and the lookup off the event loop, before ``first_token``."""

    mechanism = "GSSAPI"

    def __init__(self, principal: str | None, keytab: str | None, service_name: str, ticket_cache: str | None = None):
        self.principal, self.keytab, self.service_name = principal, keytab, service_name
        self.ticket_cache = ticket_cache    # a kinit cache ("" the default one) instead of a keytab
        self._context = None
        self._first: bytes | None = None
        self._stage = "context"

    @property
    def complete(self) -> bool:
        return self._stage == "done"

    async def prepare(self, host: str) -> None:
        import asyncio
        loop = asyncio.get_running_loop()
        if _is_address(host):
            try:
                host = (await loop.getnameinfo((host, 0), 0))[0]
            except OSError:
                pass                    # Java keeps the address when it has no name
        self._first = await loop.run_in_executor(None, self._start, host)

    def _start(self, host: str) -> bytes:
        gssapi = require_gssapi()
        if self.ticket_cache is not None:
            store = {"ccache": self.ticket_cache} if self.ticket_cache else None
        else:
            store = {"ccache": _memory_cache(self.principal, self.keytab)}
            if self.keytab:
                store["client_keytab"] = self.keytab
        try:
            name = None if self.principal is None else gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
            credentials = gssapi.Credentials(name=name, usage="initiate", store=store)
            self.principal = self.principal or str(credentials.name)
            target = gssapi.Name(f"{self.service_name}/{host}", gssapi.NameType.kerberos_principal)
            self._context = gssapi.SecurityContext(name=target, creds=credentials, usage="initiate",
                                                   flags=[gssapi.RequirementFlag.mutual_authentication])
            return self._context.step(None)
        except gssapi.exceptions.GSSError as exc:
            who = self.principal or f"the ticket cache {self.ticket_cache or '(default)'}"
            raise GssapiClientError(f"{who} could not get a ticket for {self.service_name}/{host}: "
                                    f"{_gss_text(exc)}") from None

    def first_token(self) -> bytes:
        if self._first is None:
            raise GssapiClientError("GSSAPI: prepare(host) must run before the first token")
        return self._first

    def next_token(self, server_token: bytes) -> bytes | None:
        if not self._context.complete:
            return self._context.step(server_token) or b""
        if self._stage == "context":            # the server's security layer offer
            offer = self._context.unwrap(server_token).message
            if len(offer) != 4 or offer[0] & _NO_SECURITY_LAYER == 0:
                raise GssapiClientError("the server offers no \"no security layer\" (RFC 4752)")
            self._stage = "answered"
            answer = bytes([_NO_SECURITY_LAYER]) + b"\0\0\0" + self.principal.encode()
            return self._context.wrap(answer, False).message
        self._stage = "done"
        return None


def _memory_cache(principal: str, keytab: str | None) -> str:
    """The in-memory ticket cache of one login: named by the principal and keytab, so that two
    logins never share one (a cache holds one principal's tickets)."""
    import hashlib
    digest = hashlib.sha256(f"{principal}\0{keytab or ''}".encode()).hexdigest()[:24]
    return f"MEMORY:kafkawire-{digest}"


def _is_address(host: str) -> bool:
    import ipaddress
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class GssapiClientError(Exception):
    """The node's GSSAPI client cannot go on (no ticket, an offer it cannot take)."""
