"""Delegation tokens as Kafka keeps them (KIP-48): what the controller, the broker and the SASL
server share.

A token's HMAC is HmacSHA512 of its id (UTF-8) keyed with the UTF-8 bytes of
``delegation.token.secret.key`` (Kafka's DelegationTokenManager.createHmac); its SCRAM password
is that HMAC in base64, and the token id is the SCRAM user name. The image keeps the tokens
(DelegationTokenRecord; owner, requester and renewers as "Type:Name" strings, KafkaPrincipal's
toString) but not their HMACs: every node that holds the secret computes them.

    hmacs = TokenHmacs(secret)            # None or "": tokens disabled (hmacs.enabled False)
    hmacs.of(token_id)                    # the HMAC bytes
    hmacs.token_for(image.delegation_tokens, request_hmac)   # Kafka's tokenCache.tokenForHmac
"""
from __future__ import annotations

import base64
import hashlib
import hmac

from kafkawire.messages.create_delegation_token_response import CreateDelegationTokenResponse
from kafkawire.messages.describe_delegation_token_response import DescribeDelegationTokenResponse
from kafkawire.messages.expire_delegation_token_response import ExpireDelegationTokenResponse
from kafkawire.messages.renew_delegation_token_response import RenewDelegationTokenResponse

__all__ = ["TokenHmacs", "principal_parts", "owner_or_renewer", "ERROR_TIMESTAMP", "describe_filter",
           "token_requests_allowed", "requested_owner", "create_refusal", "token_error_response", "NullOwnerType",
           "for_version"]

ERROR_TIMESTAMP = -1              # DelegationTokenManager.ERROR_TIMESTAMP
_MEMO_SLACK = 1024                # memoized HMACs beyond the image's tokens before the memo is emptied


def principal_parts(principal: str) -> tuple[str, str]:
    """("User", "alice") of "User:alice", as KafkaPrincipal.fromString splits it (at the first colon)."""
    kind, _, name = principal.partition(":")
    return kind, name


def owner_or_renewer(token, principal: str) -> bool:
    """TokenInformation.ownerOrRenewer: the principal (type and name) owns or may renew the token."""
    return token.owner == principal or principal in token.renewers


class TokenHmacs:
    """The HMACs of token ids under one secret, memoized: a renewal, an expiry or a SCRAM login
    looks a token up by its HMAC or computes its password, and a token's HMAC never changes.
    The memo holds at most the image's tokens plus ``_MEMO_SLACK`` (ids of removed tokens)."""

    def __init__(self, secret: str | None):
        self._key = secret.encode("utf-8") if secret else None
        self._memo: dict[str, bytes] = {}

    @property
    def enabled(self) -> bool:
        """DelegationTokenManager.isEnabled: a non-empty secret is configured."""
        return self._key is not None

    def of(self, token_id: str) -> bytes:
        found = self._memo.get(token_id)
        if found is None:
            if self._key is None:
                raise ValueError("delegation tokens are disabled: delegation.token.secret.key is not set")
            found = hmac.new(self._key, token_id.encode("utf-8"), hashlib.sha512).digest()
            self._memo[token_id] = found
        return found

    def password(self, token_id: str) -> str:
        """The token's SCRAM password: its HMAC in base64 (DelegationToken.hmacAsBase64String)."""
        return base64.b64encode(self.of(token_id)).decode("ascii")

    def token_for(self, tokens: dict, token_hmac: bytes):
        """The token of ``tokens`` (id -> DelegationToken) whose HMAC is ``token_hmac``, or None;
        linear in the number of tokens, each HMAC computed once."""
        if len(self._memo) > len(tokens) + _MEMO_SLACK:
            self._memo.clear()
        wanted = bytes(token_hmac)
        for token_id, token in tokens.items():
            if hmac.compare_digest(self.of(token_id), wanted):
                return token
        return None


def describe_filter(requester: str, owners: list[str] | None, may_describe_token, may_describe_owner_tokens):
    """DelegationTokenManager.filterToken as a predicate on a token: not one of the ``owners``
    asked for (as owner or renewer; None: every owner): left out; the requester's own (owner or
    renewer): in; else in only with DESCRIBE on the token (``may_describe_token(token_id)``) or
    DESCRIBE_TOKENS on its owner (``may_describe_owner_tokens(owner)``)."""
    def eligible(token) -> bool:
        if owners is not None and not any(owner_or_renewer(token, owner) for owner in owners):
            return False
        if owner_or_renewer(token, requester):
            return True
        return may_describe_token(token.token_id) or may_describe_owner_tokens(token.owner)
    return eligible


ANONYMOUS = "User:ANONYMOUS"


def token_requests_allowed(ctx, *, forwarded_exempt: bool) -> bool:
    """KafkaApis.allowTokenRequests (``forwarded_exempt`` False) and ControllerApis' (True): never
    for a principal authenticated with a token; never over PLAINTEXT, nor anonymously over SSL,
    except, at the controller, for a request a broker forwarded (its client's connection was
    checked there)."""
    if ctx.token_authenticated:
        return False
    if forwarded_exempt and ctx.forwarded:
        return True
    return not (ctx.security_protocol == "PLAINTEXT" or (ctx.security_protocol == "SSL" and ctx.principal == ANONYMOUS))


class NullOwnerType(ValueError):
    """An owner named without a principal type (null): Kafka's KafkaPrincipal constructor refuses
    it (a NullPointerException, answered UNKNOWN_SERVER_ERROR)."""


def requested_owner(ctx, request) -> str:
    """The token's owner: the request's OwnerPrincipal (v3) when named, else the requester.
    Raises NullOwnerType for a name without a type."""
    if request.owner_principal_name and request.owner_principal_type is None:
        raise NullOwnerType("Principal type cannot be null")
    if request.owner_principal_name:
        return f"{request.owner_principal_type}:{request.owner_principal_name}"
    return ctx.principal


_NO_REQUESTER = CreateDelegationTokenResponse()       # the fields' defaults


def create_refusal(ctx, request, error: int):
    """CreateDelegationTokenResponse.prepareResponse(error, owner, requester): timestamps -1."""
    (owner_type, owner_name) = principal_parts(requested_owner(ctx, request))
    requester_type, requester_name = principal_parts(ctx.principal)
    return for_version(CreateDelegationTokenResponse(
        error_code=int(error), principal_type=owner_type, principal_name=owner_name,
        token_requester_principal_type=requester_type, token_requester_principal_name=requester_name,
        issue_timestamp_ms=ERROR_TIMESTAMP, expiry_timestamp_ms=ERROR_TIMESTAMP, max_timestamp_ms=ERROR_TIMESTAMP,
        token_id="", hmac=b""), ctx.api_version)


def for_version(response, version: int):
    """prepareResponse names the token's requester from v3 on only (the fields v1 and v2 lack):
    ``response`` with them cleared below that."""
    if isinstance(response, CreateDelegationTokenResponse) and version <= 2:
        response.token_requester_principal_type = _NO_REQUESTER.token_requester_principal_type
        response.token_requester_principal_name = _NO_REQUESTER.token_requester_principal_name
    return response


def token_error_response(api_key: int, request, code: int, version: int):
    """The getErrorResponse of CreateDelegationToken (38: ANONYMOUS owner and requester, -1
    timestamps), RenewDelegationToken (39), ExpireDelegationToken (40), DescribeDelegationToken (41)."""
    if api_key == 38:
        return for_version(CreateDelegationTokenResponse(
            error_code=code, principal_type="User", principal_name="ANONYMOUS", token_requester_principal_type="User",
            token_requester_principal_name="ANONYMOUS", issue_timestamp_ms=ERROR_TIMESTAMP,
            expiry_timestamp_ms=ERROR_TIMESTAMP, max_timestamp_ms=ERROR_TIMESTAMP, token_id="", hmac=b""), version)
    if api_key == 41:
        return DescribeDelegationTokenResponse(error_code=code, tokens=[])
    return (RenewDelegationTokenResponse if api_key == 39 else ExpireDelegationTokenResponse)(error_code=code)
