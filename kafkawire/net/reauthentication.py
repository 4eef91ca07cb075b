"""SASL re-authentication (KIP-368) on a server connection, as Kafka 4.3.1 does it
(SaslServerAuthenticator.ReauthInfo, KafkaChannel.maybeBeginServerReauthentication, the
Processor of SocketServer):

* ``connections.max.reauth.ms`` (BrokerSecurityConfigs, LONG, default 0), per listener and
  mechanism: ``listener.name.<l>.<mechanism>.connections.max.reauth.ms``, else
  ``listener.name.<l>.connections.max.reauth.ms``, else the plain key (SaslChannelBuilder reads
  the mechanism-prefixed key from the listener's configs; an unprefixed
  ``<mechanism>.connections.max.reauth.ms`` is not read).
* When a SASL authentication completes, SaslAuthenticateResponse's SessionLifetimeMs is: nothing
  (0, the session never expires) when the setting is not positive and the credential has no
  expiry; else the setting; else the time left to the credential's expiry (a delegation token's
  expiry timestamp: a token's session is bounded by it even with the setting at 0); else the
  smaller of the two. Never negative: a token already past its expiry gets 0 and an expired
  session at once.
* A session with a lifetime may re-authenticate: a SaslHandshake on the authenticated
  connection starts a new SASL exchange (same mechanism, same principal, no ApiVersions), unless
  the previous one started less than a second ago; then the handshake is served as any request
  (ILLEGAL_SASL_STATE).
* Any other request after the session's expiry closes the connection unanswered (Kafka's
  "Disconnecting expired channel", counted in expired-connections-killed-count).
"""
from __future__ import annotations

import logging
import time

from kafkawire.net.config_values import _long

__all__ = ["REAUTH_KEY", "max_reauth_by_mechanism", "session_lifetime_ms", "is_reauth_key", "SessionClock"]

log = logging.getLogger(__name__)

REAUTH_KEY = "connections.max.reauth.ms"
DEFAULT_MAX_REAUTH_MS = 0
# KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS
MIN_REAUTH_INTERVAL_S = 1.0


def is_reauth_key(rest: str) -> bool:
    """Whether ``rest`` (a key after its ``listener.name.<l>.`` prefix) is this setting."""
    return rest == REAUTH_KEY or (rest.endswith("." + REAUTH_KEY) and rest.count(".") == REAUTH_KEY.count(".") + 1)


def max_reauth_by_mechanism(props: dict, listener: str, mechanisms) -> dict[str, int]:
    """mechanism -> connections.max.reauth.ms on ``listener``; ConfigError names a bad key."""
    prefix = f"listener.name.{listener.lower()}."
    values = {}
    for mechanism in mechanisms:
        for key in (f"{prefix}{mechanism.lower()}.{REAUTH_KEY}", prefix + REAUTH_KEY, REAUTH_KEY):
            if key in props:
                values[mechanism] = _long(key, props[key])
                break
        else:
            values[mechanism] = DEFAULT_MAX_REAUTH_MS
    return values


def session_lifetime_ms(max_reauth_ms: int, credential_expiry_ms: int | None, now_ms: int) -> int | None:
    """ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs: the session's lifetime, or None
    when it has none (SessionLifetimeMs 0 then, and the session never expires)."""
    bounded = max_reauth_ms > 0
    if credential_expiry_ms is None:
        return max_reauth_ms if bounded else None
    left = credential_expiry_ms - now_ms
    return max(0, min(left, max_reauth_ms) if bounded else left)


class SessionClock:
    """One connection's session expiry and the start of its last re-authentication (monotonic s)."""
    __slots__ = ("expires_at", "last_reauth_start")

    def __init__(self):
        self.expires_at: float | None = None
        self.last_reauth_start: float | None = None

    def authenticated(self, lifetime_ms: int | None, now: float) -> None:
        self.expires_at = None if lifetime_ms is None else now + lifetime_ms / 1000

    def may_reauthenticate(self, now: float) -> bool:
        """maybeBeginServerReauthentication: a session with an expiry, and a second since the
        last re-authentication began; true also marks this one's start."""
        if self.expires_at is None:
            return False
        if self.last_reauth_start is not None and now - self.last_reauth_start < MIN_REAUTH_INTERVAL_S:
            return False
        self.last_reauth_start = now
        return True

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now > self.expires_at


def now_ms() -> int:
    """The wall clock that tokens' expiry timestamps are on."""
    return int(time.time() * 1000)


def monotonic() -> float:
    """The clock of sessions' expiry (a module function, so that a test can move it)."""
    return time.monotonic()
