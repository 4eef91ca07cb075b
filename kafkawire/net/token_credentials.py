"""The SCRAM credentials of delegation tokens, for the SASL server's ``tokenauth`` logins
(kafkawire.net.sasl): Kafka's DelegationTokenManager.updateToken gives every token a SCRAM
credential per mechanism, of its base64 HMAC as password, at the mechanism's minimum iterations.
Here each is computed the first time a client logs in with the token and kept (at most the
tokens of the image plus a slack), so a login costs one PBKDF2 per token and mechanism.

    lookup = TokenCredentials(config.delegation_token_secret_key, lambda: image().delegation_tokens)
    server = KafkaServer(..., token_lookup=lookup)
"""
from __future__ import annotations

import os
from typing import Callable

from kafkawire.metadata.delegation_tokens import TokenHmacs, principal_parts

from .sasl import SCRAM_MECHANISM_TYPES, SCRAM_MIN_ITERATIONS, scram_credential

__all__ = ["TokenCredentials"]

_CACHE_SLACK = 1024
_SALT_BYTES = 24


class TokenCredentials:
    """``(mechanism, token_id) -> ((salt, stored_key, server_key, iterations), owner name, expiry
    timestamp ms)`` or None (no such token, an unknown mechanism, or tokens disabled: no secret).
    A token past its expiry that the controller has not removed yet is still found, as Kafka's
    token cache finds it: its session then ends at once (kafkawire.net.reauthentication)."""

    def __init__(self, secret: str | None, tokens: Callable[[], dict]):
        self.hmacs = TokenHmacs(secret)
        self.tokens = tokens
        self._credentials: dict[tuple[str, str], tuple[bytes, bytes, bytes, int]] = {}

    def __call__(self, mechanism: str, token_id: str):
        if not self.hmacs.enabled or mechanism not in SCRAM_MECHANISM_TYPES:
            return None
        tokens = self.tokens() or {}
        token = tokens.get(token_id)
        if token is None:
            return None
        key = (mechanism, token_id)
        credential = self._credentials.get(key)
        if credential is None:
            if len(self._credentials) > 2 * len(tokens) + _CACHE_SLACK:
                self._credentials.clear()
            credential = scram_credential(mechanism, self.hmacs.password(token_id), os.urandom(_SALT_BYTES),
                                          SCRAM_MIN_ITERATIONS)
            self._credentials[key] = credential
        return credential, principal_parts(token.owner)[1], token.expiration_timestamp
