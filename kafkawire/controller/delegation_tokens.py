"""CreateDelegationToken (38), RenewDelegationToken (39) and ExpireDelegationToken (40) as Kafka's
controller answers them (ControllerApis' checks, then DelegationTokenControlManager), and the
periodic removal of expired tokens (QuorumController's "expireDelegationTokens" task, every
``delegation.token.expiry.check.interval.ms``).

ControllerApis first refuses, with DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, a principal that
authenticated with a delegation token, and a request that came straight (not forwarded) over a
PLAINTEXT connection or anonymously over SSL (``token_requests_allowed``); for a token created
for another owner it asks CREATE_TOKENS on that User (the node's authorizer, in front of this
handler: kafkawire.raft.node.controller_node). Then DelegationTokenControlManager's rules, in
its order:

- no ``delegation.token.secret.key``: DELEGATION_TOKEN_AUTH_DISABLED; a metadata.version
  before 3.6-IV2: UNSUPPORTED_VERSION;
- Create: max timestamp = now + min(delegation.token.max.lifetime.ms, the request's
  MaxLifetimeMs when > 0), expiry = min(max, now + delegation.token.expiry.time.ms); a renewer
  that is not a User: INVALID_PRINCIPAL_TYPE; the id a random Kafka Uuid string, the HMAC
  HmacSHA512 of the id with the secret (kafkawire.metadata.delegation_tokens);
- Renew and Expire find the token by its HMAC (none: DELEGATION_TOKEN_NOT_FOUND); only its owner
  or a renewer may (DELEGATION_TOKEN_OWNER_MISMATCH); Renew of an expired token (max or expiry
  timestamp before now): DELEGATION_TOKEN_EXPIRED, else expiry = min(max, now + min(expiry
  time, RenewPeriodMs when > 0)); Expire with a negative period removes the token at once
  (RemoveDelegationTokenRecord), an already expired one is DELEGATION_TOKEN_EXPIRED, else its
  expiry becomes min(max, now + period).

Timestamps are wall-clock milliseconds (``controller.wall_clock_ms()``), as Kafka's Time.SYSTEM.
"""
from __future__ import annotations

import dataclasses
import logging
import uuid

from kafkawire.messages.create_delegation_token_response import CreateDelegationTokenResponse
from kafkawire.messages.expire_delegation_token_response import ExpireDelegationTokenResponse
from kafkawire.messages.renew_delegation_token_response import RenewDelegationTokenResponse
from kafkawire.metadata.delegation_tokens import (ERROR_TIMESTAMP, TokenHmacs, create_refusal, for_version,
                                                  owner_or_renewer, principal_parts, requested_owner,
                                                  token_error_response, token_requests_allowed)
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler
from kafkawire.protocol.message import uuid_to_kafka_string

from .errors import ApiError
from .frames import frame

__all__ = ["DelegationTokenSettings", "create_token", "renew_token", "expire_token", "expired_token_records",
           "delegation_token_handlers", "CREATE_DELEGATION_TOKEN"]

log = logging.getLogger(__name__)

CREATE_DELEGATION_TOKEN, RENEW_DELEGATION_TOKEN, EXPIRE_DELEGATION_TOKEN = 38, 39, 40
DELEGATION_TOKEN_METADATA_VERSION = 14      # MetadataVersion.IBP_3_6_IV2.isDelegationTokenSupported
MAX_RECORDS_PER_EXPIRATION = 1000           # DelegationTokenControlManager: a sweep's batch
LONG_MAX = (1 << 63) - 1


@dataclasses.dataclass(frozen=True)
class DelegationTokenSettings:
    """DelegationTokenManagerConfigs, with Kafka's defaults (secret unset: tokens disabled)."""
    secret_key: str | None = None
    max_lifetime_ms: int = 7 * 24 * 3600 * 1000
    expiry_time_ms: int = 24 * 3600 * 1000
    expiry_check_interval_ms: int = 3_600_000

    @classmethod
    def of(cls, config) -> DelegationTokenSettings:
        """From a ServerConfig's delegation.token.* settings."""
        return cls(config.delegation_token_secret_key, config.delegation_token_max_lifetime_ms,
                   config.delegation_token_expiry_time_ms, config.delegation_token_expiry_check_interval_ms)


@dataclasses.dataclass(frozen=True)
class _Asker:
    principal: str


def _sum(now: int, duration: int) -> int:
    return LONG_MAX if now > LONG_MAX - duration else now + duration


def _random_token_id(rng) -> str:
    while True:                 # Kafka's Uuid.randomUuid: never one whose string starts with "-"
        candidate = uuid.UUID(int=rng.getrandbits(128), version=4)
        text = uuid_to_kafka_string(candidate)
        if candidate.int > 1 and not text.startswith("-"):
            return text


def _refusal(image, settings: DelegationTokenSettings):
    if not settings.secret_key:
        return Errors.DELEGATION_TOKEN_AUTH_DISABLED
    if image.metadata_version is None or image.metadata_version < DELEGATION_TOKEN_METADATA_VERSION:
        return Errors.UNSUPPORTED_VERSION
    return None


def _token_record(token, expiration: int) -> bytes:
    return frame("DelegationTokenRecord", owner=token.owner, requester=token.requester,
                 renewers=list(token.renewers), issue_timestamp=token.issue_timestamp,
                 max_timestamp=token.max_timestamp, expiration_timestamp=expiration, token_id=token.token_id)


def create_token(image, principal: str, request, settings: DelegationTokenSettings, hmacs: TokenHmacs,
                 now: int, rng):
    """(records, CreateDelegationTokenResponse) for ``principal``'s request."""
    owner = requested_owner(_Asker(principal), request)
    (owner_type, owner_name), (requester_type, requester_name) = principal_parts(owner), principal_parts(principal)
    response = CreateDelegationTokenResponse(principal_type=owner_type, principal_name=owner_name,
                                             token_requester_principal_type=requester_type,
                                             token_requester_principal_name=requester_name)
    refusal = _refusal(image, settings)
    if refusal is not None:
        response.error_code = int(refusal)
        return [], response
    max_lifetime = settings.max_lifetime_ms
    if request.max_lifetime_ms > 0:
        max_lifetime = min(max_lifetime, request.max_lifetime_ms)
    max_timestamp = _sum(now, max_lifetime)
    expiry = min(max_timestamp, _sum(now, settings.expiry_time_ms))
    token_id = _random_token_id(rng)
    renewers = []
    for renewer in request.renewers:
        if renewer.principal_type != "User":
            response.error_code = int(Errors.INVALID_PRINCIPAL_TYPE)
            return [], response
        renewers.append(f"{renewer.principal_type}:{renewer.principal_name}")
    response.issue_timestamp_ms, response.expiry_timestamp_ms, response.max_timestamp_ms = now, expiry, max_timestamp
    response.token_id, response.hmac = token_id, hmacs.of(token_id)
    record = frame("DelegationTokenRecord", owner=owner, requester=principal, renewers=renewers,
                   issue_timestamp=now, max_timestamp=max_timestamp, expiration_timestamp=expiry, token_id=token_id)
    return [record], response


def _expired(token, now: int) -> bool:
    return token.max_timestamp < now or token.expiration_timestamp < now


def _token_named(image, principal: str, request, settings: DelegationTokenSettings, hmacs: TokenHmacs, *,
                 expired_at: int | None):
    """(the token the request's HMAC names, None) or (None, the refusal), in Kafka's order:
    disabled, not found, expired (renewing only: ``expired_at`` is now), not the owner's or a
    renewer's."""
    refusal = _refusal(image, settings)
    if refusal is not None:
        return None, refusal
    token = hmacs.token_for(image.delegation_tokens, request.hmac)
    if token is None:
        return None, Errors.DELEGATION_TOKEN_NOT_FOUND
    if expired_at is not None and _expired(token, expired_at):
        return None, Errors.DELEGATION_TOKEN_EXPIRED
    if not owner_or_renewer(token, principal):
        return None, Errors.DELEGATION_TOKEN_OWNER_MISMATCH
    return token, None


def renew_token(image, principal: str, request, settings: DelegationTokenSettings, hmacs: TokenHmacs, now: int):
    """(records, RenewDelegationTokenResponse)."""
    response = RenewDelegationTokenResponse()
    token, refusal = _token_named(image, principal, request, settings, hmacs, expired_at=now)
    if refusal is not None:
        response.error_code = int(refusal)
        return [], response
    period = settings.expiry_time_ms
    if request.renew_period_ms > 0:
        period = min(period, request.renew_period_ms)
    response.expiry_timestamp_ms = min(token.max_timestamp, now + period)
    return [_token_record(token, response.expiry_timestamp_ms)], response


def expire_token(image, principal: str, request, settings: DelegationTokenSettings, hmacs: TokenHmacs, now: int):
    """(records, ExpireDelegationTokenResponse)."""
    response = ExpireDelegationTokenResponse()
    token, refusal = _token_named(image, principal, request, settings, hmacs, expired_at=None)
    if refusal is not None:
        response.error_code = int(refusal)
        return [], response
    if request.expiry_time_period_ms < 0:               # expire now
        response.expiry_timestamp_ms = now
        return [frame("RemoveDelegationTokenRecord", token_id=token.token_id)], response
    if _expired(token, now):
        response.error_code = int(Errors.DELEGATION_TOKEN_EXPIRED)
        return [], response
    response.expiry_timestamp_ms = min(token.max_timestamp, _sum(now, request.expiry_time_period_ms))
    return [_token_record(token, response.expiry_timestamp_ms)], response


def expired_token_records(image, now: int) -> list[bytes]:
    """sweepExpiredDelegationTokens: a RemoveDelegationTokenRecord for each expired token, at most
    MAX_RECORDS_PER_EXPIRATION (the next sweep takes the rest)."""
    records = []
    for token in image.delegation_tokens.values():
        if _expired(token, now):
            log.info("Delegation token expired for token: %s for owner: %s", token.token_id, token.owner)
            records.append(frame("RemoveDelegationTokenRecord", token_id=token.token_id))
            if len(records) >= MAX_RECORDS_PER_EXPIRATION:
                break
    return records


def _not_allowed(api_key: int, ctx, request):
    if api_key == CREATE_DELEGATION_TOKEN:
        return create_refusal(ctx, request, Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    cls = RenewDelegationTokenResponse if api_key == RENEW_DELEGATION_TOKEN else ExpireDelegationTokenResponse
    return cls(error_code=int(Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), expiry_timestamp_ms=ERROR_TIMESTAMP)


def delegation_token_handlers(controller) -> dict[int, ApiHandler]:
    """The three handlers of ``controller`` (a MetadataController: its ``delegation_tokens``
    settings, ``token_hmacs``, ``wall_clock_ms`` and ``rng``); no deadline, as ControllerApis gives none."""
    generators = {CREATE_DELEGATION_TOKEN: lambda image, ctx, request, now: create_token(
                      image, ctx.principal, request, controller.delegation_tokens, controller.token_hmacs, now,
                      controller.rng),
                  RENEW_DELEGATION_TOKEN: lambda image, ctx, request, now: renew_token(
                      image, ctx.principal, request, controller.delegation_tokens, controller.token_hmacs, now),
                  EXPIRE_DELEGATION_TOKEN: lambda image, ctx, request, now: expire_token(
                      image, ctx.principal, request, controller.delegation_tokens, controller.token_hmacs, now)}

    def handler(api_key: int) -> ApiHandler:
        async def handle(ctx, request):
            if api_key == CREATE_DELEGATION_TOKEN and request.owner_principal_name and \
                    request.owner_principal_type is None:       # KafkaPrincipal's NullPointerException
                return token_error_response(api_key, request, int(Errors.UNKNOWN_SERVER_ERROR), ctx.api_version)
            if not token_requests_allowed(ctx, forwarded_exempt=True):
                return _not_allowed(api_key, ctx, request)
            generate = generators[api_key]
            try:          # from the image of the write's turn
                response, _ = await controller.write(
                    lambda: generate(controller.state.image, ctx, request, controller.wall_clock_ms()))
            except ApiError as exc:
                return token_error_response(api_key, request, exc.code, ctx.api_version)
            return for_version(response, ctx.api_version)
        return ApiHandler(handle, min_version=1,
                          error_response=lambda ctx, request, code: token_error_response(api_key, request, code,
                                                                                            ctx.api_version))
    return {key: handler(key) for key in generators}
