"""The node's own OAUTHBEARER token from an identity provider's token endpoint (KIP-768's client
side, client credentials): Kafka's OAuthBearerLoginCallbackHandler with its
ClientCredentialsJwtRetriever and ClientSecretRequestFormatter, for the node's connections
(controllers, inter-broker, tools) when ``sasl.login.callback.handler.class`` is
``org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler`` (on a listener:
``listener.name.<l>.oauthbearer.sasl.login.callback.handler.class``).

Settings (a listener's also prefixed as the server's OAUTHBEARER settings are):
``sasl.oauthbearer.token.endpoint.url`` (https or http), the client id and secret
(``sasl.oauthbearer.client.credentials.client.id`` / ``...client.secret``, else the JAAS options
``clientId`` / ``clientSecret``), ``sasl.oauthbearer.scope`` (else the JAAS option ``scope``),
``sasl.oauthbearer.header.urlencode`` (false). The request: POST ``grant_type=client_credentials``
(``&scope=...``) with HTTP Basic ``client id:secret``; the answer's ``access_token`` (else
``id_token``) is the token. JAAS options ``ssl.truststore.*`` give the endpoint's trust.

A token is fetched when a connection first needs one (that first fetch blocks its caller, as
Kafka's login does at start) and kept; past 80% of its lifetime (Kafka's
``sasl.login.refresh.window.factor`` default) a new one is fetched in a background thread while
the old one is still sent.
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import ssl
import threading
import time
import urllib.parse
import urllib.request

from kafkawire.net.config import ConfigError

__all__ = ["LOGIN_HANDLER", "TokenEndpoint", "token_endpoint"]

log = logging.getLogger(__name__)

LOGIN_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
LOGIN_HANDLER_KEY = "sasl.login.callback.handler.class"
REFRESH_WINDOW_FACTOR = 0.8          # SaslConfigs.DEFAULT_LOGIN_REFRESH_WINDOW_FACTOR
RESPONSE_MAX_BYTES = 1024 * 1024
FETCH_TIMEOUT_S = 10
LOGIN_SETTINGS = ("sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.client.credentials.client.id",
                  "sasl.oauthbearer.client.credentials.client.secret", "sasl.oauthbearer.scope",
                  "sasl.oauthbearer.header.urlencode", LOGIN_HANDLER_KEY)


class TokenEndpointError(Exception):
    """The token endpoint gave no token; the message says why."""


class TokenEndpoint:
    """``token()``: a current token from the endpoint, fetched and refreshed as the module says."""

    def __init__(self, url: str, client_id: str, client_secret: str, scope: str | None, url_encode: bool,
                 tls: ssl.SSLContext | None):
        quote = urllib.parse.quote_plus if url_encode else (lambda text: text)
        self.url = url
        self.credentials = base64.b64encode(f"{quote(client_id)}:{quote(client_secret)}".encode()).decode()
        self.body = "grant_type=client_credentials" + (f"&scope={quote(scope)}" if scope else "")
        self.tls = tls
        self.fetches = 0
        self._token: str | None = None
        self._refresh_at = self._expires_at = 0.0
        self._refreshing = False
        self._lock = threading.Lock()

    def token(self) -> str:
        now = time.time()
        if self._token is None or now >= self._expires_at:
            self._store(self._fetch())                 # nothing valid to send: wait for one
        elif now >= self._refresh_at:
            self._refresh_in_background()
        return self._token

    def _refresh_in_background(self) -> None:
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True

        def refresh():
            try:
                self._store(self._fetch())
            except TokenEndpointError as exc:
                log.warning("OAUTHBEARER: the token refresh from %s failed (the current token is sent until it "
                            "expires): %s", self.url, exc)
            finally:
                self._refreshing = False
        threading.Thread(target=refresh, name="oauthbearer-token-refresh", daemon=True).start()

    def _store(self, token: str) -> None:
        issued, expires = _token_times(token)
        with self._lock:
            self._token, self._expires_at = token, expires
            self._refresh_at = issued + (expires - issued) * REFRESH_WINDOW_FACTOR

    def _fetch(self) -> str:
        request = urllib.request.Request(self.url, data=self.body.encode(), method="POST", headers={
            "Accept": "application/json", "Authorization": f"Basic {self.credentials}",
            "Cache-Control": "no-cache", "Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S, context=self.tls) as response:
                body = response.read(RESPONSE_MAX_BYTES + 1)
        except OSError as exc:                         # urllib's HTTPError and URLError are OSErrors
            raise TokenEndpointError(f"the token endpoint {self.url} failed: {exc}") from None
        self.fetches += 1
        if len(body) > RESPONSE_MAX_BYTES:
            raise TokenEndpointError(f"the token endpoint's answer is more than {RESPONSE_MAX_BYTES} bytes")
        try:
            answer = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            answer = None
        for name in ("access_token", "id_token"):      # JwtResponseParser's paths
            value = answer.get(name) if isinstance(answer, dict) else None
            if isinstance(value, str) and value.strip():
                return value.strip()
        snippet = body[:1000].decode("utf-8", "replace")
        raise TokenEndpointError(f"The token endpoint response did not contain a valid JWT. Response: ({snippet})")


def _token_times(token: str) -> tuple[float, float]:
    """(iat or now, exp) of a JWT, unverified (ClientJwtValidator: the client only reads them)."""
    parts = token.split(".")
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        exp = claims["exp"]
        iat = claims.get("iat", time.time())
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (exp, iat)):
            raise ValueError("exp or iat is not a number")
    except (IndexError, KeyError, ValueError, TypeError, binascii.Error, RecursionError) as exc:
        raise TokenEndpointError(f"the token endpoint's token is not a JWT with an exp claim: {exc}") from None
    return float(iat), float(exp)


def token_endpoint(lookup, options: dict, jaas_key: str) -> TokenEndpoint | None:
    """The node's token endpoint when the login callback handler is Kafka's
    OAuthBearerLoginCallbackHandler, else None (the unsecured login module's tokens).
    ``lookup(name)`` -> (value or None, the key it came from); ConfigError names a bad key."""
    handler, handler_key = lookup(LOGIN_HANDLER_KEY)
    if not handler or not handler.strip():
        return None
    if handler.strip() != LOGIN_HANDLER:
        raise ConfigError(handler_key, handler, f"is not supported: kafkawire implements {LOGIN_HANDLER} only")
    url, url_key = lookup("sasl.oauthbearer.token.endpoint.url")
    scheme = urllib.parse.urlsplit(url or "").scheme.lower()
    if scheme not in ("http", "https"):
        raise ConfigError(url_key, url, f"must be an http or https URL: {LOGIN_HANDLER} fetches the token from it "
                                        "(kafkawire's node takes no file: token or JWT assertion)")
    values = {}
    for name, option in (("client.id", "clientId"), ("client.secret", "clientSecret")):
        value, key = lookup(f"sasl.oauthbearer.client.credentials.{name}")
        value = value if value and value.strip() else options.get(option)
        if not value or not value.strip():
            raise ConfigError(key, None, f"is required (or the JAAS option {option} of {jaas_key}) for the client "
                                         "credentials grant")
        values[name] = value.strip()
    scope = lookup("sasl.oauthbearer.scope")[0] or options.get("scope")
    url_encode = (lookup("sasl.oauthbearer.header.urlencode")[0] or "false").strip().lower() == "true"
    tls = None
    if scheme == "https":
        tls = ssl.create_default_context()
        if any(k.startswith("ssl.") for k in options):
            from kafkawire.net.security import client_ssl_context, ssl_settings
            tls = client_ssl_context(ssl_settings(options, "jaas"))
    return TokenEndpoint(url.strip(), values["client.id"], values["client.secret"],
                         scope.strip() if scope and scope.strip() else None, url_encode, tls)
