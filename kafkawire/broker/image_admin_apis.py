"""The admin APIs Kafka's broker answers from its metadata image instead of forwarding them:
DescribeAcls (29, AclApis.handleDescribeAcls: the ACLs of the image, through the broker's
authorizer), DescribeClientQuotas (48, ClientQuotasImage.describe), DescribeUserScramCredentials
(50, ScramImage.describe) and ListConfigResources (74, KafkaApis.handleListConfigResources,
KIP-1142; ListClientMetricsResources before 4.1). CreateAcls and DeleteAcls are forwarded to the
controller (kafkawire.broker.forwarding).

    apis = ImageAdminApis(broker)          # broker.image(): the committed metadata image
    handlers = apis.handlers()             # api key -> ApiHandler
    checks = image_admin_checks()          # api key -> the ACL check (kafkawire.broker.authorization)

What they ask of the principal (KafkaApis): DescribeClientQuotas and ListConfigResources
DESCRIBE_CONFIGS on the cluster, DescribeUserScramCredentials and DescribeAcls DESCRIBE on the
cluster; refused: the request's getErrorResponse with CLUSTER_AUTHORIZATION_FAILED (DescribeAcls
with AuthHelper's "Request ... needs DESCRIBE permission."). Without an authorizer DescribeAcls
is SECURITY_DISABLED, "No Authorizer is configured on the broker" (the controller's text differs).

Order: Kafka lists from Java hash maps (entities, users, resource names); these answers list
in sorted order instead (the clients and tools index or sort what they get).
"""
from __future__ import annotations

from kafkawire.messages.describe_client_quotas_response import (DescribeClientQuotasResponse, EntityData,
                                                                 EntryData, ValueData)
from kafkawire.messages.describe_user_scram_credentials_response import (CredentialInfo,
                                                                          DescribeUserScramCredentialsResponse,
                                                                          DescribeUserScramCredentialsResult)
from kafkawire.messages.list_config_resources_response import ConfigResource, ListConfigResourcesResponse
from kafkawire.messages.describe_acls_response import DescribeAclsResponse
from kafkawire.metadata.acl_filters import DESCRIBE_ACLS, describe_acls
from kafkawire.metadata.image import CLIENT_METRICS_RESOURCE, GROUP_RESOURCE
from kafkawire.net.authorizer import CLUSTER_NAME, RESOURCE_CLUSTER, Op, request_text
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

__all__ = ["ImageAdminApis", "image_admin_checks", "DESCRIBE_ACLS", "DESCRIBE_CLIENT_QUOTAS",
           "DESCRIBE_USER_SCRAM_CREDENTIALS", "LIST_CONFIG_RESOURCES"]

DESCRIBE_CLIENT_QUOTAS, DESCRIBE_USER_SCRAM_CREDENTIALS, LIST_CONFIG_RESOURCES = 48, 50, 74
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8                       # ConfigResource.Type ids
# ListConfigResourcesRequest.supportedResourceTypes: v0 lists client metrics only.
SUPPORTED_RESOURCE_TYPES = {0: frozenset({CLIENT_METRICS_RESOURCE}),
                            1: frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE})}
QUOTA_ENTITY_TYPES = frozenset({"user", "client-id", "ip"})
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
NO_SUCH_USER = "Attempt to describe a user credential that does not exist: "
CLUSTER_AUTH = int(Errors.CLUSTER_AUTHORIZATION_FAILED)
NO_AUTHORIZER_ON_BROKER = "No Authorizer is configured on the broker"
ACL_MIN_VERSION = 1                   # DescribeAcls v0 was removed in Kafka 4.0


class QuotaFilterError(Exception):
    def __init__(self, error: Errors, message: str):
        super().__init__(message)
        self.error = error


class ImageAdminApis:
    """DescribeClientQuotas, DescribeUserScramCredentials and ListConfigResources of ``broker``
    (its ``image()``)."""

    def __init__(self, broker):
        self.broker = broker

    def handlers(self) -> dict[int, ApiHandler]:
        return {DESCRIBE_ACLS: ApiHandler(self.describe_acls, min_version=ACL_MIN_VERSION),
                DESCRIBE_CLIENT_QUOTAS: ApiHandler(self.describe_client_quotas),
                DESCRIBE_USER_SCRAM_CREDENTIALS: ApiHandler(self.describe_user_scram_credentials),
                LIST_CONFIG_RESOURCES: ApiHandler(self.list_config_resources)}

    # -- DescribeAcls --

    async def describe_acls(self, ctx, request):
        if getattr(self.broker, "authorizer", None) is None:
            return DescribeAclsResponse(error_code=int(Errors.SECURITY_DISABLED), error_message=NO_AUTHORIZER_ON_BROKER,
                                        resources=[])
        image = self.broker.image()
        return describe_acls({} if image is None else image.acls, request)

    # -- DescribeClientQuotas --

    async def describe_client_quotas(self, ctx, request):
        try:
            exact, specified = _quota_filter(request.components)
        except QuotaFilterError as exc:
            return DescribeClientQuotasResponse(error_code=int(exc.error), error_message=str(exc), entries=None)
        image = self.broker.image()
        quotas = {} if image is None else image.client_quotas
        wanted = len(exact) + len(specified)
        entries = []
        for entity, values in sorted(quotas.items(), key=lambda item: sorted(map(_entity_key, item[0]))):
            named = dict(entity)
            if request.strict and len(named) != wanted:
                continue
            if all(t in named and named[t] == m for t, m in exact.items()) and all(t in named for t in specified):
                entries.append(EntryData(
                    entity=[EntityData(entity_type=t, entity_name=n) for t, n in sorted(entity, key=_entity_key)],
                    values=[ValueData(key=k, value=v) for k, v in sorted(values.items())]))
        return DescribeClientQuotasResponse(entries=entries)

    # -- DescribeUserScramCredentials --

    async def describe_user_scram_credentials(self, ctx, request):
        image = self.broker.image()
        mechanisms = {} if image is None else image.scram        # mechanism type -> user -> credential
        if request.users:
            duplicated: dict[str, bool] = {}
            for user in request.users:
                duplicated[user.name] = user.name in duplicated
        else:
            duplicated = {user: False for users in mechanisms.values() for user in users}
        results = []
        for user in sorted(duplicated):
            if duplicated[user]:
                results.append(DescribeUserScramCredentialsResult(
                    user=user, error_code=int(Errors.DUPLICATE_RESOURCE), error_message=DUPLICATE_USER + user))
                continue
            infos = [CredentialInfo(mechanism=mechanism, iterations=users[user].iterations)
                     for mechanism, users in sorted(mechanisms.items()) if user in users]
            results.append(DescribeUserScramCredentialsResult(user=user, credential_infos=infos) if infos else
                           DescribeUserScramCredentialsResult(user=user, error_code=int(Errors.RESOURCE_NOT_FOUND),
                                                              error_message=NO_SUCH_USER + user))
        return DescribeUserScramCredentialsResponse(results=results)

    # -- ListConfigResources --

    async def list_config_resources(self, ctx, request):
        supported = SUPPORTED_RESOURCE_TYPES[min(ctx.api_version, 1)]
        types = set(request.resource_types or ()) or supported
        if not types <= supported:
            return ListConfigResourcesResponse(error_code=int(Errors.UNSUPPORTED_VERSION), config_resources=[])
        image = self.broker.image()
        listed = []
        for resource_type in (GROUP_RESOURCE, CLIENT_METRICS_RESOURCE, BROKER_LOGGER, BROKER, TOPIC):   # Kafka's order
            if resource_type in types and image is not None:
                listed += [ConfigResource(resource_name=name, resource_type=resource_type)
                           for name in _resource_names(image, resource_type, ctx.listener_name)]
        return ListConfigResourcesResponse(config_resources=listed)


def _entity_key(pair):
    return pair[0], pair[1] or ""


def _quota_filter(components) -> tuple[dict, set]:
    """ClientQuotasImage.describe's checks of the filter: (entity type -> exact name, or None
    for the default entity; entity types that must be named)."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for c in components:
        if not c.entity_type:
            raise QuotaFilterError(Errors.INVALID_REQUEST, "Invalid empty entity type.")
        if c.entity_type in exact or c.entity_type in specified:
            raise QuotaFilterError(Errors.INVALID_REQUEST,
                                   f"Entity type {c.entity_type} cannot appear more than once in the filter.")
        if c.entity_type not in QUOTA_ENTITY_TYPES:
            raise QuotaFilterError(Errors.UNSUPPORTED_VERSION, f"Unsupported entity type {c.entity_type}")
        if c.match_type == MATCH_EXACT:
            if c.match is None:
                raise QuotaFilterError(Errors.INVALID_REQUEST,
                                       "Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[c.entity_type] = c.match
        elif c.match_type in (MATCH_DEFAULT, MATCH_SPECIFIED):
            if c.match is not None:
                kind = "MATCH_TYPE_DEFAULT" if c.match_type == MATCH_DEFAULT else "MATCH_TYPE_SPECIFIED"
                raise QuotaFilterError(Errors.INVALID_REQUEST,
                                       f"Request specified {kind}, but also specified a match string.")
            if c.match_type == MATCH_DEFAULT:
                exact[c.entity_type] = None
            else:
                specified.add(c.entity_type)
        else:
            raise QuotaFilterError(Errors.INVALID_REQUEST, f"Unknown match type {c.match_type}")
    named = exact.keys() | specified
    if "ip" in named and named & {"user", "client-id"}:
        raise QuotaFilterError(Errors.INVALID_REQUEST, "Invalid entity filter component combination. IP filter "
                                                       "component should not be used with user or clientId filter "
                                                       "component.")
    return exact, specified


def _resource_names(image, resource_type: int, listener_name: str) -> list[str]:
    """The names ListConfigResources lists of one type: the groups and client metrics
    subscriptions with configs, the brokers with an endpoint on the request's listener (as
    broker and as broker logger), every topic."""
    if resource_type in (GROUP_RESOURCE, CLIENT_METRICS_RESOURCE):
        return sorted(name for kind, name in image.configs if kind == resource_type)
    if resource_type in (BROKER, BROKER_LOGGER):
        return [str(i) for i, b in sorted(image.brokers.items()) if listener_name in b.listeners]
    return sorted(image.topics_by_name)


def _cluster_check(operation: int, refusal):
    async def check(ctx, request, may, handle):
        if may(operation, RESOURCE_CLUSTER, CLUSTER_NAME):
            return await handle(ctx, request)
        return refusal(request)
    return check


def _scram_refusal(request):
    """DescribeUserScramCredentialsRequest.getErrorResponse: the error at the top and on each user
    named, no message (ApiError.fromThrowable leaves out an error's default text)."""
    return DescribeUserScramCredentialsResponse(error_code=CLUSTER_AUTH, error_message=None, results=[
        DescribeUserScramCredentialsResult(error_code=CLUSTER_AUTH, error_message=None) for _ in request.users or ()])


async def _describe_acls_check(ctx, request, may, handle):
    """AuthHelper.authorizeClusterOperation(DESCRIBE): its ClusterAuthorizationException's text."""
    if may(Op.DESCRIBE, RESOURCE_CLUSTER, CLUSTER_NAME):
        return await handle(ctx, request)
    return DescribeAclsResponse(error_code=CLUSTER_AUTH, error_message=f"Request {request_text(ctx)} needs DESCRIBE "
                                                                       "permission.", resources=[])


def image_admin_checks() -> dict:
    """KafkaApis' ACL checks of these APIs (authorization.wrap's ``check`` signature)."""
    return {
        DESCRIBE_ACLS: _describe_acls_check,
        DESCRIBE_CLIENT_QUOTAS: _cluster_check(Op.DESCRIBE_CONFIGS, lambda request: DescribeClientQuotasResponse(
            error_code=CLUSTER_AUTH, error_message=None, entries=None)),
        DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster_check(Op.DESCRIBE, _scram_refusal),
        LIST_CONFIG_RESOURCES: _cluster_check(Op.DESCRIBE_CONFIGS, lambda request: ListConfigResourcesResponse(
            error_code=CLUSTER_AUTH, config_resources=[])),
    }
