"""The delegation token APIs of Kafka's broker (KafkaApis): CreateDelegationToken (38),
RenewDelegationToken (39) and ExpireDelegationToken (40) checked here, then forwarded to the
controller (kafkawire.broker.forwarding; kafkawire.controller.delegation_tokens writes the
records); DescribeDelegationToken (41) answered from the committed image.

KafkaApis' rules:
- every one refuses a token-authenticated principal, a PLAINTEXT connection and an anonymous
  SSL one: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (Create with -1 timestamps, Renew and Expire
  with expiry -1, Describe with no tokens);
- Create for an owner other than the requester needs CREATE_TOKENS on User:<owner> (else
  DELEGATION_TOKEN_AUTHORIZATION_FAILED); a renewer that is not a User: INVALID_PRINCIPAL_TYPE;
- Describe: no delegation.token.secret.key here: DELEGATION_TOKEN_AUTH_DISABLED; an empty owner
  list: no tokens; else each token of the owners asked for (a null list: every owner) that the
  requester owns or renews, or may DESCRIBE (DelegationToken resource, the token id), or whose
  owner it may DESCRIBE_TOKENS (User resource), with its HMAC.
Without an authorizer every ACL question is allowed, as Kafka's AuthHelper answers it.
Describe lists the tokens in the image's order (Kafka: its token cache's hash order).
"""
from __future__ import annotations

from kafkawire.messages.describe_delegation_token_response import (DescribedDelegationToken,
                                                                    DescribedDelegationTokenRenewer,
                                                                    DescribeDelegationTokenResponse)
from kafkawire.messages.expire_delegation_token_response import ExpireDelegationTokenResponse
from kafkawire.messages.renew_delegation_token_response import RenewDelegationTokenResponse
from kafkawire.metadata.delegation_tokens import (ERROR_TIMESTAMP, NullOwnerType, TokenHmacs, create_refusal, describe_filter,
                                                  principal_parts, requested_owner, token_error_response,
                                                  token_requests_allowed)
from kafkawire.net.token_credentials import TokenCredentials
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

__all__ = ["DelegationTokenApis", "delegation_token_checks", "DELEGATION_TOKEN_APIS", "DELEGATION_TOKEN_RULES"]

CREATE, RENEW, EXPIRE, DESCRIBE = 38, 39, 40, 41
DELEGATION_TOKEN_APIS = (CREATE, RENEW, EXPIRE, DESCRIBE)
MIN_VERSION = 1                      # v0 of the four was removed in Kafka 4.0
MAX_VERSIONS = {CREATE: 3, RENEW: 2, EXPIRE: 2, DESCRIBE: 3}
CREATE_TOKENS, DESCRIBE_TOKENS, DESCRIBE_OP = 13, 14, 8     # AclOperation codes
RESOURCE_DELEGATION_TOKEN, RESOURCE_USER = 6, 7             # ResourceType codes
DELEGATION_TOKEN_RULES = {
    CREATE: "CREATE_TOKENS on the owner (a User) when it is not the requester; then forwarded",
    RENEW: "none here (the controller checks owner or renewer); forwarded",
    EXPIRE: "none here (the controller checks owner or renewer); forwarded",
    DESCRIBE: "each token: owner or renewer, else DESCRIBE on it or DESCRIBE_TOKENS on its owner",
}


def _allow_all(operation: int, resource_type: int, name: str, quiet: bool = False) -> bool:
    return True


class DelegationTokenApis:
    """The four APIs of ``broker`` (its ``image()``, ``config`` and ``forwarder``), and the SCRAM
    credentials of its tokens for the listeners' ``tokenauth`` logins (``credentials``)."""

    def __init__(self, broker):
        self.broker = broker
        secret = broker.config.delegation_token_secret_key
        self.hmacs = TokenHmacs(secret)
        self.credentials = TokenCredentials(secret, self._tokens)

    def _tokens(self) -> dict:
        image = self.broker.image()
        return {} if image is None else image.delegation_tokens

    def handlers(self) -> dict[int, ApiHandler]:
        methods = {CREATE: self.create, RENEW: self.renew_or_expire, EXPIRE: self.renew_or_expire,
                   DESCRIBE: self.describe}

        def handler(key):
            async def handle(ctx, request):
                return await methods[key](ctx, request, _allow_all)
            return ApiHandler(handle, min_version=MIN_VERSION, max_version=MAX_VERSIONS[key],
                              error_response=lambda ctx, request, code: token_error_response(key, request, code,
                                                                                        ctx.api_version))
        return {key: handler(key) for key in methods}

    async def create(self, ctx, request, may):
        try:
            owner = requested_owner(ctx, request)
        except NullOwnerType:
            return token_error_response(CREATE, request, int(Errors.UNKNOWN_SERVER_ERROR), ctx.api_version)
        if not token_requests_allowed(ctx, forwarded_exempt=False):
            return create_refusal(ctx, request, Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        if owner != ctx.principal and not may(CREATE_TOKENS, RESOURCE_USER, owner):
            return create_refusal(ctx, request, Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
        if any(r.principal_type != "User" for r in request.renewers):
            return create_refusal(ctx, request, Errors.INVALID_PRINCIPAL_TYPE)
        return await self.broker.forwarder.forward(ctx, request)

    async def renew_or_expire(self, ctx, request, may):
        if not token_requests_allowed(ctx, forwarded_exempt=False):
            cls = RenewDelegationTokenResponse if ctx.api_key == RENEW else ExpireDelegationTokenResponse
            return cls(error_code=int(Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), expiry_timestamp_ms=ERROR_TIMESTAMP)
        return await self.broker.forwarder.forward(ctx, request)

    async def describe(self, ctx, request, may):
        if not token_requests_allowed(ctx, forwarded_exempt=False):
            return DescribeDelegationTokenResponse(error_code=int(Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED),
                                                   tokens=[])
        if not self.hmacs.enabled:
            return DescribeDelegationTokenResponse(error_code=int(Errors.DELEGATION_TOKEN_AUTH_DISABLED), tokens=[])
        if request.owners is not None and not request.owners:
            return DescribeDelegationTokenResponse(error_code=0, tokens=[])
        owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]
        eligible = describe_filter(ctx.principal, owners,
                                   lambda token_id: may(DESCRIBE_OP, RESOURCE_DELEGATION_TOKEN, token_id),
                                   lambda owner: may(DESCRIBE_TOKENS, RESOURCE_USER, owner))
        return DescribeDelegationTokenResponse(error_code=0, tokens=[
            self._described(token) for token in list(self._tokens().values()) if eligible(token)])

    def _described(self, token) -> DescribedDelegationToken:
        (owner_type, owner_name), (requester_type, requester_name) = (principal_parts(token.owner),
                                                                      principal_parts(token.requester))
        return DescribedDelegationToken(
            principal_type=owner_type, principal_name=owner_name, token_requester_principal_type=requester_type,
            token_requester_principal_name=requester_name, issue_timestamp=token.issue_timestamp,
            expiry_timestamp=token.expiration_timestamp, max_timestamp=token.max_timestamp, token_id=token.token_id,
            hmac=self.hmacs.of(token.token_id),
            renewers=[DescribedDelegationTokenRenewer(principal_type=kind, principal_name=name)
                      for kind, name in map(principal_parts, token.renewers)])


def delegation_token_checks(apis: DelegationTokenApis) -> dict:
    """The checks (kafkawire.broker.authorization's ``check(ctx, request, may, handle)``): each
    API asks its questions itself, through the authorizer's ``may``."""
    methods = {CREATE: apis.create, RENEW: apis.renew_or_expire, EXPIRE: apis.renew_or_expire,
               DESCRIBE: apis.describe}

    def check_of(method):
        async def check(ctx, request, may, handle):
            return await method(ctx, request, may)
        return check
    return {key: check_of(method) for key, method in methods.items()}
