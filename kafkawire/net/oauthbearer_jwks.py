"""OAUTHBEARER tokens checked against an identity provider's keys (KIP-768): Kafka 4.3.1's
OAuthBearerValidatorCallbackHandler with its BrokerJwtValidator, the JWS checks of jose4j's
JwtConsumer it configures, and the key sets it reads (JwksFileVerificationKeyResolver,
RefreshingHttpsJwks).

Settings (each also ``listener.name.<l>.``-prefixed, and ``listener.name.<l>.oauthbearer.``-prefixed,
which wins, as Kafka's ConfigurationUtils reads them): ``sasl.oauthbearer.jwks.endpoint.url``
(required; ``file:`` re-read when the file changes, ``https:``/``http:`` fetched when the listener
starts and again every ``sasl.oauthbearer.jwks.endpoint.refresh.ms``, retried from
``...retry.backoff.ms`` doubling to ``...retry.backoff.max.ms``, and at once, at most once a minute
per key id, for a token signed by a key id the set lacks), ``sasl.oauthbearer.expected.audience``
(comma-separated), ``sasl.oauthbearer.expected.issuer``, ``sasl.oauthbearer.clock.skew.seconds``
(30), ``sasl.oauthbearer.scope.claim.name`` (scope), ``sasl.oauthbearer.sub.claim.name`` (sub).

A token must be a JWS signed by a key of the set (RS256/384/512, PS256/384/512, ES256/384/512,
HS256/384/512; ``none`` refused), carry exp and iat, be unexpired (exp + skew after now), not
before its nbf (less the skew), and name an expected audience and issuer when those are set. Any
failure is ``{"status":"invalid_token"}`` to the client and logged at WARN with the reason, as Kafka.

Bounds: a key set larger than JWKS_MAX_BYTES or with more than JWKS_MAX_KEYS keys is refused
naming the URL and the size (at start: the node does not start; at a refresh: the old keys stay);
a token is bounded by sasl.server.max.receive.size before it gets here.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import ssl
import threading
import time
import urllib.parse
import urllib.request

from kafkawire.net.config import ConfigError
from kafkawire.net.sasl_oauthbearer import InvalidToken, OAuthBearerToken, b64url, b64url_json

__all__ = ["SETTINGS", "jwks_validator", "JwksValidator", "JwksSource", "JWKS_MAX_BYTES", "JWKS_MAX_KEYS"]

log = logging.getLogger(__name__)

# SaslConfigs: the broker's OAUTHBEARER settings and their defaults.
SETTINGS = {
    "sasl.oauthbearer.jwks.endpoint.url": None,
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": "3600000",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "100",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "10000",
    "sasl.oauthbearer.expected.audience": "",
    "sasl.oauthbearer.expected.issuer": None,
    "sasl.oauthbearer.clock.skew.seconds": "30",
    "sasl.oauthbearer.scope.claim.name": "scope",
    "sasl.oauthbearer.sub.claim.name": "sub",
}
JWKS_MAX_BYTES = 512 * 1024
RSA_MIN_BITS = 2048                         # jose4j refuses RS/PS keys shorter than this
JWKS_MAX_KEYS = 1000
FETCH_TIMEOUT_S = 10
MISSING_KEY_ID_INTERVAL_MS = 60000          # RefreshingHttpsJwks.MISSING_KEY_ID_CACHE_IN_FLIGHT_MS
MISSING_KEY_ID_MAX_LENGTH = 1000            # RefreshingHttpsJwks.MISSING_KEY_ID_MAX_KEY_LENGTH
MISSING_KEY_IDS_KEPT = 16                   # RefreshingHttpsJwks.MISSING_KEY_ID_CACHE_MAX_ENTRIES


def _setting(props: dict, listener: str, name: str):
    """(value, key it came from): mechanism-prefixed on the listener, listener-prefixed, plain."""
    prefix = f"listener.name.{listener.lower()}."
    for key in (f"{prefix}oauthbearer.{name}", prefix + name, name):
        if key in props:
            return props[key].strip(), key
    return SETTINGS[name], name


def _long(props, listener, name, minimum=None) -> int:
    raw, key = _setting(props, listener, name)
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(key, raw, "is not a LONG") from None
    if minimum is not None and value < minimum:
        raise ConfigError(key, raw, f"The OAuth configuration option {name} value must be at least {minimum}")
    return value


def jwks_validator(props: dict, listener: str) -> "JwksValidator":
    """The OIDC validator of ``listener``; ConfigError names a bad or missing setting."""
    url, key = _setting(props, listener, "sasl.oauthbearer.jwks.endpoint.url")
    if not url:
        raise ConfigError(key, None, "is required: the OAuth validator for the broker (OAuthBearerValidatorCallback"
                                     "Handler) needs the OAuth/OIDC provider's JWKS endpoint URL to verify signatures")
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https", "file"):
        raise ConfigError(key, url, f"contains an invalid protocol ({scheme or 'none'}); only \"http\", \"https\", "
                                    "and \"file\" protocol are supported")
    audience, _ = _setting(props, listener, "sasl.oauthbearer.expected.audience")
    issuer, _ = _setting(props, listener, "sasl.oauthbearer.expected.issuer")
    skew = _long(props, listener, "sasl.oauthbearer.clock.skew.seconds", 0)
    source = JwksSource(url, key, _long(props, listener, "sasl.oauthbearer.jwks.endpoint.refresh.ms", 1),
                        _long(props, listener, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", 0),
                        _long(props, listener, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", 0),
                        _tls_context(props, listener) if scheme == "https" else None)
    audiences = frozenset(a.strip() for a in (audience or "").split(",") if a.strip())
    if not audiences:
        log.warning("listener %s: OAUTHBEARER validates tokens without sasl.oauthbearer.expected.audience, so it "
                    "accepts a token without an audience; set it to what the brokers expect", listener)
    if not issuer:
        log.warning("listener %s: OAUTHBEARER validates tokens without sasl.oauthbearer.expected.issuer, so it "
                    "accepts a token from any issuer; set it to the identity provider's issuer URL", listener)
    return JwksValidator(source, audiences, issuer or None, skew,
                         _setting(props, listener, "sasl.oauthbearer.scope.claim.name")[0] or "scope",
                         _setting(props, listener, "sasl.oauthbearer.sub.claim.name")[0] or "sub")


def _tls_context(props: dict, listener: str) -> ssl.SSLContext:
    """Trust for an https JWKS endpoint: the ssl.truststore.* options of the listener's OAUTHBEARER
    JAAS entry, as Kafka's JaasOptionsUtils builds its socket factory from them; without them the
    system's CAs."""
    from kafkawire.net.security import client_ssl_context, parse_jaas_config, ssl_settings
    key = f"listener.name.{listener.lower()}.oauthbearer.sasl.jaas.config"
    options = parse_jaas_config(key, props[key]).options if key in props else {}
    if not any(k.startswith("ssl.") for k in options):
        return ssl.create_default_context()
    return client_ssl_context(ssl_settings(options, "jaas"))


class JwksSource:
    """The keys at a JWKS URL, kept fresh as Kafka's resolvers keep them. ``load()`` reads them
    the first time (the listener's start); ``keys()`` gives the current ones."""

    def __init__(self, url: str, key: str, refresh_ms: int, backoff_ms: int, backoff_max_ms: int,
                 tls: ssl.SSLContext | None):
        self.url, self.setting = url, key
        self.refresh_ms, self.backoff_ms, self.backoff_max_ms = refresh_ms, backoff_ms, backoff_max_ms
        self.tls = tls
        self.is_file = url.lower().startswith("file:")
        self._keys: list[dict] | None = None
        self._loaded_at = 0.0
        self._file_stamp = None
        self._missing_kids: dict[str, float] = {}
        self._refreshing = False
        self._lock = threading.Lock()
        self.refreshes = 0                   # completed refreshes after the first load

    def load(self) -> None:
        """The first read; ConfigError names the setting, the URL and the reason."""
        if self._keys is None:
            try:
                self._keys = self._read()
            except (OSError, ValueError) as exc:
                raise ConfigError(self.setting, self.url, f"could not be read: {exc}") from None
            self._loaded_at = time.monotonic()

    def keys(self) -> list[dict]:
        self.load()
        if self.is_file:
            self._reread_changed_file()
        elif (time.monotonic() - self._loaded_at) * 1000 >= self.refresh_ms:
            self._refresh_in_background()
        return self._keys

    def missing_kid(self, kid: str) -> None:
        """RefreshingHttpsJwks.maybeExpediteRefresh: a refresh now, at most once a minute per key id."""
        if self.is_file or len(kid) > MISSING_KEY_ID_MAX_LENGTH:
            return
        now = time.monotonic()
        with self._lock:
            if self._missing_kids.get(kid, 0) > now:
                return
            self._missing_kids[kid] = now + MISSING_KEY_ID_INTERVAL_MS / 1000
            while len(self._missing_kids) > MISSING_KEY_IDS_KEPT:
                del self._missing_kids[next(iter(self._missing_kids))]
        self._refresh_in_background()

    def _reread_changed_file(self) -> None:
        path = self._path()
        try:
            stat = os.stat(path)
        except OSError:
            return                          # keep the keys last read, as CachedFile does
        if (stat.st_mtime_ns, stat.st_size) != self._file_stamp:
            try:
                self._keys = self._read()
            except (OSError, ValueError) as exc:
                log.warning("OAUTHBEARER: could not re-read the JWKS %s (%s); keeping the keys read before",
                            self.url, exc)

    def _refresh_in_background(self) -> None:
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True
            self._loaded_at = time.monotonic()
        threading.Thread(target=self._refresh, name="oauthbearer-jwks-refresh", daemon=True).start()

    def _refresh(self) -> None:
        """Retry as Kafka's Retry does: waits doubling from the backoff while their sum stays
        within the maximum; on failure the keys read before stay."""
        wait_ms, waited_ms = self.backoff_ms, 0
        try:
            while True:
                try:
                    keys = self._read()
                    break
                except (OSError, ValueError) as exc:
                    if waited_ms + wait_ms > self.backoff_max_ms:
                        log.warning("OAuth JWKS refresh of %s encountered an error; not updating the keys: %s",
                                    self.url, exc)
                        return
                    time.sleep(wait_ms / 1000)
                    waited_ms, wait_ms = waited_ms + wait_ms, max(1, wait_ms * 2)
            with self._lock:
                self._keys = keys
                for found in keys:
                    self._missing_kids.pop(found.get("kid"), None)
                self.refreshes += 1
            log.info("OAuth JWKS refresh of %s complete (%d keys)", self.url, len(keys))
        finally:
            self._loaded_at = time.monotonic()
            self._refreshing = False

    def _path(self) -> str:
        return urllib.request.url2pathname(urllib.parse.urlsplit(self.url).path)

    def _read(self) -> list[dict]:
        if self.is_file:
            path = self._path()
            stat = os.stat(path)
            if stat.st_size > JWKS_MAX_BYTES:
                raise ValueError(f"the JWKS is {stat.st_size} bytes, more than the {JWKS_MAX_BYTES} kafkawire reads")
            with open(path, "rb") as f:
                body = f.read(JWKS_MAX_BYTES + 1)
            self._file_stamp = (stat.st_mtime_ns, stat.st_size)
        else:
            request = urllib.request.Request(self.url, headers={"Accept": "application/json"})
            with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S, context=self.tls) as response:
                body = response.read(JWKS_MAX_BYTES + 1)
        if len(body) > JWKS_MAX_BYTES:
            raise ValueError(f"the JWKS is more than the {JWKS_MAX_BYTES} bytes kafkawire reads")
        return _parse_jwks(body)


def _parse_jwks(body: bytes) -> list[dict]:
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ValueError("the JWKS is not JSON") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise ValueError("the JWKS has no \"keys\" array")
    if len(keys) > JWKS_MAX_KEYS:
        raise ValueError(f"the JWKS has {len(keys)} keys, more than the {JWKS_MAX_KEYS} kafkawire takes")
    return [k for k in keys if isinstance(k, dict)]


# --- JWS verification ---------------------------------------------------------------------------

_KTY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "HS": "oct"}
_HASHES = {"256": "SHA256", "384": "SHA384", "512": "SHA512"}
_CURVES = {"P-256": ("SECP256R1", 32), "P-384": ("SECP384R1", 48), "P-521": ("SECP521R1", 66)}
_ALG_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


def _verify(alg: str, jwk: dict, signed: bytes, signature: bytes) -> bool:
    """Whether ``signature`` over ``signed`` verifies under ``jwk`` with ``alg``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils
    digest = getattr(hashes, _HASHES[alg[2:]])()
    try:
        if alg.startswith("HS"):
            secret = b64url(jwk.get("k", ""), "JWK k")
            return hmac.compare_digest(hmac.new(secret, signed, getattr(hashlib, "sha" + alg[2:])).digest(), signature)
        if alg.startswith(("RS", "PS")):
            key = rsa.RSAPublicNumbers(_int(jwk, "e"), _int(jwk, "n")).public_key()
            if key.key_size < RSA_MIN_BITS:
                return False
            pad = padding.PKCS1v15() if alg.startswith("RS") else \
                padding.PSS(padding.MGF1(digest), padding.PSS.DIGEST_LENGTH)
            key.verify(signature, signed, pad, digest)
            return True
        curve_name, size = _CURVES.get(jwk.get("crv"), (None, 0))
        if _ALG_CURVES[alg] != jwk.get("crv") or len(signature) != 2 * size:
            return False                    # RFC 7518 3.4: each ES algorithm has its curve
        key = ec.EllipticCurvePublicNumbers(_int(jwk, "x"), _int(jwk, "y"), getattr(ec, curve_name)()).public_key()
        der = utils.encode_dss_signature(int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big"))
        key.verify(der, signed, ec.ECDSA(digest))
        return True
    except (InvalidSignature, ValueError, TypeError):
        return False


def _int(jwk: dict, name: str) -> int:
    value = jwk.get(name)
    if not isinstance(value, str):
        raise ValueError(f"the key has no {name}")
    return int.from_bytes(b64url(value, f"JWK {name}"), "big")


def _candidates(keys: list[dict], alg: str, kid) -> list[dict]:
    """jose4j's VerificationJwkSelector: the key id when the token names one, the key type of the
    algorithm, a signing use and the algorithm when the key states them."""
    return [k for k in keys
            if (kid is None or k.get("kid") == kid) and k.get("kty") == _KTY[alg[:2]]
            and k.get("use", "sig") == "sig" and k.get("alg", alg) == alg]


class JwksValidator:
    """BrokerJwtValidator: ``validate(token, now_ms)`` -> OAuthBearerToken, or InvalidToken."""

    def __init__(self, source: JwksSource, audiences: frozenset, issuer: str | None, clock_skew_s: int,
                 scope_claim: str = "scope", sub_claim: str = "sub"):
        self.source, self.audiences, self.issuer = source, audiences, issuer
        self.clock_skew_s, self.scope_claim, self.sub_claim = clock_skew_s, scope_claim, sub_claim

    def start(self) -> None:
        self.source.load()

    def validate(self, text: str, now: int) -> OAuthBearerToken:
        try:
            claims = self._verified_claims(text)
            return self._token(text, claims, now)
        except InvalidToken as refused:
            log.warning("Could not validate the access token: %s", refused.reason)
            raise

    def _verified_claims(self, text: str) -> dict:
        parts = text.split(".")
        if len(parts) != 3:
            raise InvalidToken(f"a JWS compact serialization has 3 parts, this token {len(parts)}")
        header = b64url_json(parts[0], "JWS header")
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg[:2] not in _KTY or alg[2:] not in _HASHES:
            raise InvalidToken(f"the JWS algorithm {str(alg)[:20]!r} is not allowed (none is refused; RS, PS, ES "
                               "and HS with 256, 384 or 512 are taken)")
        try:
            available = self.source.keys()
        except ConfigError as exc:          # not read at start (a listener rebuilt later) and unreadable now
            raise InvalidToken(f"the JWKS could not be read: {exc}") from None
        keys = _candidates(available, alg, kid)
        if not keys:
            if isinstance(kid, str):
                self.source.missing_kid(kid)
            raise InvalidToken(f"no key of {self.source.url} for kid {str(kid)[:100]!r} and alg {alg}")
        signed, signature = f"{parts[0]}.{parts[1]}".encode(), b64url(parts[2], "JWS signature")
        if not _verify(alg, keys[0], signed, signature):
            raise InvalidToken(f"the JWS signature does not verify with key {str(keys[0].get('kid'))[:100]!r}")
        return b64url_json(parts[1], "JWT claims")

    def _token(self, text: str, claims: dict, now: int) -> OAuthBearerToken:
        exp, iat, nbf = (_numeric(claims, name) for name in ("exp", "iat", "nbf"))
        if exp is None:
            raise InvalidToken("No Expiration Time (exp) claim present.")
        if iat is None:
            raise InvalidToken("No Issued At (iat) claim present.")
        if now / 1000 >= exp + self.clock_skew_s:
            raise InvalidToken(f"The JWT is no longer valid - the evaluation time {now // 1000} is on or after the "
                               f"Expiration Time (exp={exp}) claim value (even when providing {self.clock_skew_s} "
                               "seconds of leeway to account for clock skew).")
        if nbf is not None and now / 1000 + self.clock_skew_s < nbf:
            raise InvalidToken(f"The JWT is not yet valid as the evaluation time {now // 1000} is before the Not "
                               f"Before (nbf={nbf}) claim time (even when providing {self.clock_skew_s} seconds of "
                               "leeway to account for clock skew).")
        if self.audiences:
            aud = claims.get("aud")
            audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
            if not self.audiences.intersection(a for a in audiences if isinstance(a, str)):
                raise InvalidToken(f"Audience (aud) claim {str(aud)[:200]} doesn't contain an acceptable identifier. "
                                   f"Expected one of {sorted(self.audiences)} as an aud value.")
        if self.issuer is not None and claims.get("iss") != self.issuer:
            raise InvalidToken(f"Issuer (iss) claim value ({str(claims.get('iss'))[:200]}) doesn't match expected "
                               f"value of {self.issuer}")
        sub = claims.get(self.sub_claim)
        if not isinstance(sub, str) or not sub.strip():
            raise InvalidToken(f"{self.sub_claim} value must be non-null and non-empty")
        if iat < 0 or exp < 0:
            raise InvalidToken("iat and exp values must be non-negative")
        scope = claims.get(self.scope_claim)
        scopes = [scope] if isinstance(scope, str) else scope if isinstance(scope, list) else []
        if any(not isinstance(s, str) or not s.strip() for s in scopes):
            raise InvalidToken(f"{self.scope_claim} value must be non-null and non-empty")
        return OAuthBearerToken(text, sub.strip(), int(exp * 1000), int(iat * 1000), frozenset(s.strip() for s in scopes))


def _numeric(claims: dict, name: str):
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidToken(f"The value of the '{name}' claim is not the expected type")
    return value
