"""Kafka's StandardAuthorizer for what a controller serves: ACLs from the metadata log
(AccessControlEntryRecord), ``super.users``, ``allow.everyone.if.no.acl.found``, and the
operation each controller API needs, as Kafka's ControllerApis asks for it.

Enabled by ``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer``
(no authorizer is Kafka's default: everything is allowed). The decision is StandardAuthorizerData's:

* a principal in ``super.users`` (``User:a;User:b``) is allowed everything, also before the
  metadata is loaded; anyone else is refused until it is (AuthorizerNotReadyException, which
  Kafka answers as UNKNOWN_SERVER_ERROR);
* the ACLs of the resource are those of its type whose pattern matches its name: LITERAL with
  the same name or ``*``, PREFIXED with a prefix of it; a matching ACL also names the principal
  (or ``User:*``), the client's address (or ``*``) and the operation (or ALL; an ALLOW of READ,
  WRITE, DELETE or ALTER implies DESCRIBE, one of ALTER_CONFIGS implies DESCRIBE_CONFIGS);
* DENY wins over ALLOW; with no matching ACL the answer is DENIED, unless the resource has no
  ACLs at all, in which case it is ``allow.everyone.if.no.acl.found`` (default false);
* a decision reads only the ACLs whose pattern matches the resource, through the image's
  AclIndex (kafkawire.metadata.acl_index), so its cost does not grow with unrelated ACLs.

A refused cluster operation is answered with the request's error response carrying
CLUSTER_AUTHORIZATION_FAILED, as each request's getErrorResponse builds it
(``error_response_for``).
"""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable

from kafkawire.metadata.acl_index import LITERAL, PREFIXED, AclIndex
from kafkawire.protocol.error_codes import Errors
from kafkawire.messages import alter_client_quotas_response as aq
from kafkawire.messages import fetch_response as fr
from kafkawire.messages.alter_user_scram_credentials_response import AlterUserScramCredentialsResult
from kafkawire.messages.create_acls_response import AclCreationResult
from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from kafkawire.messages.delete_acls_response import DeleteAclsFilterResult
from kafkawire.messages.list_offsets_response import ListOffsetsPartitionResponse
from kafkawire.messages.metadata_response import MetadataResponseTopic
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.handler import Throttled

from .authorizer_not_ready import AuthorizerNotReady, log_not_loaded

__all__ = ["AuthorizerSettings", "StandardAuthorizer", "AuthorizerNotReady", "CONTROLLER_API_OPERATIONS",
           "refused_until_loaded", "log_not_loaded",
           "CLUSTER_NAME", "Op", "authorizing_handler", "request_text", "error_response_for",
           "error_response_at", "CreateTopicsFailed"]

# A fixed name, not the module's: operators filter denials on it (README), as on Kafka's kafka.authorizer.logger.
log = logging.getLogger("kafkawire.authorizer")

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class Op:
    """AclOperation codes."""
    ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION = 2, 3, 4, 5, 6, 7, 8, 9
    DESCRIBE_CONFIGS, ALTER_CONFIGS = 10, 11
    NAMES = {2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
             9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS"}


RESOURCE_TOPIC, RESOURCE_CLUSTER = 2, 4
RESOURCE_USER, CREATE_TOKENS = 7, 13       # ResourceType.USER, AclOperation.CREATE_TOKENS
PERMISSION_DENY, PERMISSION_ALLOW = 2, 3
_IMPLIES_DESCRIBE = {Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}
_IMPLIES_DESCRIBE_CONFIGS = {Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}

# ControllerApis: the operation on the cluster each API needs (CreateTopics is per topic, below).
CONTROLLER_API_OPERATIONS = {
    1: Op.CLUSTER_ACTION,      # Fetch (the controller serves replica fetches)
    29: Op.DESCRIBE,           # DescribeAcls (AclApis)
    30: Op.ALTER,              # CreateAcls
    31: Op.ALTER,              # DeleteAcls
    43: Op.ALTER,              # ElectLeaders
    45: Op.ALTER,              # AlterPartitionReassignments
    46: Op.DESCRIBE,           # ListPartitionReassignments
    49: Op.ALTER_CONFIGS,      # AlterClientQuotas
    51: Op.ALTER,              # AlterUserScramCredentials
    52: Op.CLUSTER_ACTION,     # Vote
    53: Op.CLUSTER_ACTION,     # BeginQuorumEpoch
    54: Op.CLUSTER_ACTION,     # EndQuorumEpoch
    55: Op.DESCRIBE,           # DescribeQuorum
    56: Op.CLUSTER_ACTION,     # AlterPartition (only brokers send it)
    57: Op.ALTER,              # UpdateFeatures
    64: Op.ALTER,              # UnregisterBroker
    58: Op.CLUSTER_ACTION,     # Envelope (only brokers forward)
    59: Op.CLUSTER_ACTION,     # FetchSnapshot
    60: Op.ALTER,              # DescribeCluster: "unlike on the broker ... ALTER on CLUSTER"
    62: Op.CLUSTER_ACTION,     # BrokerRegistration
    63: Op.CLUSTER_ACTION,     # BrokerHeartbeat
    67: Op.CLUSTER_ACTION,     # AllocateProducerIds (only brokers send it)
    70: Op.CLUSTER_ACTION,     # ControllerRegistration
    73: Op.CLUSTER_ACTION,     # AssignReplicasToDirs (only brokers send it)
    80: Op.ALTER,              # AddRaftVoter
    81: Op.ALTER,              # RemoveRaftVoter
    82: Op.CLUSTER_ACTION,     # UpdateRaftVoter
}


@dataclass(frozen=True)
class AuthorizerSettings:
    super_users: frozenset = field(default_factory=frozenset)
    allow_everyone_if_no_acl_found: bool = False


class StandardAuthorizer:
    def __init__(self, settings: AuthorizerSettings, acls: Callable[[], AclIndex | Iterable], loaded: Callable[[], bool]):
        """``acls()``: the image's AclIndex; a plain iterable of StandardAcls is indexed once per
        distinct object returned. ``loaded()``: whether the committed metadata has been loaded once."""
        self.settings = settings
        self._acls = acls
        self._loaded = loaded
        self._indexed: tuple[object, AclIndex] | None = None     # (iterable, its index)

    def loaded(self) -> bool:
        """Whether the ACLs are loaded (StandardAuthorizer's initial load completed)."""
        return self._loaded()

    def _index(self) -> AclIndex:
        acls = self._acls()
        if isinstance(acls, AclIndex):
            return acls
        if self._indexed is None or self._indexed[0] is not acls:
            self._indexed = (acls, AclIndex(enumerate(acls)))
        return self._indexed[1]

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, resource_name: str) -> bool:
        """StandardAuthorizerData.authorize, reading only the ACLs that match the resource."""
        if principal in self.settings.super_users:
            return True
        if not self._loaded():
            raise AuthorizerNotReady()
        allowed, has_resource_acls = False, False
        for acl in self._index().matching(resource_type, resource_name):
            has_resource_acls = True         # MatchingRuleBuilder.hasResourceAcls: any principal, host or operation
            result = _acl_result(acl, principal, host, operation)
            if result is False:
                return False            # DENY wins
            allowed = allowed or result is True
        if allowed:
            return True
        return self.settings.allow_everyone_if_no_acl_found if not has_resource_acls else False


    def authorize_by_resource_type(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Authorizer.authorizeByResourceType (Kafka's default method): whether some resource of the
        type allows ``operation``. A super user (or a resource type without ACLs under
        ``allow.everyone.if.no.acl.found``) passes through the decision on a name no ACL names;
        otherwise an ALLOW ACL of the principal (or User:*) and host (or *) for the operation
        (or ALL) on a literal or prefixed pattern not dominated by a DENY: a literal ``*`` DENY
        refuses, a literal ALLOW falls to a literal DENY of the same name, and any ALLOW to a
        PREFIXED DENY of one of its prefixes. It reads every ACL of the type, as Kafka's does."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        allows: list = []
        denied_literal: set[str] = set()
        denied_prefixes: set[str] = set()
        for acl in self._index().of_type(resource_type):
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) or acl.host not in (host, WILDCARD):
                continue
            if acl.operation not in (operation, Op.ALL):
                continue
            if acl.permission_type == PERMISSION_DENY:
                if acl.pattern_type == LITERAL and acl.resource_name == WILDCARD:
                    return False
                (denied_literal if acl.pattern_type == LITERAL else denied_prefixes).add(acl.resource_name)
            elif acl.permission_type == PERMISSION_ALLOW and acl.pattern_type in (LITERAL, PREFIXED):
                allows.append(acl)
        if any(acl.pattern_type == LITERAL and acl.resource_name == WILDCARD for acl in allows):
            return True                     # after the loop: a wildcard DENY anywhere wins over it
        for acl in allows:
            if acl.pattern_type == LITERAL and acl.resource_name in denied_literal:
                continue
            name = acl.resource_name
            if not any(name[:n] in denied_prefixes for n in range(1, len(name) + 1)):
                return True
        return False


def _acl_result(acl, principal: str, host: str, operation: int):
    """True (allows), False (denies) or None (does not apply): StandardAuthorizerData.findResult."""
    if acl.principal not in (principal, WILDCARD_PRINCIPAL):
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    if acl.operation != Op.ALL:
        if acl.permission_type == PERMISSION_ALLOW:
            if operation == Op.DESCRIBE:
                if acl.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif operation == Op.DESCRIBE_CONFIGS:
                if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif operation != acl.operation:
                return None
        elif operation != acl.operation:
            return None
    if acl.permission_type == PERMISSION_ALLOW:
        return True
    return False if acl.permission_type == PERMISSION_DENY else None


# --- refusing a request -------------------------------------------------------------------------

def request_text(ctx) -> str:
    """RequestChannel.Request.toString as ClusterAuthorizationException's message shows it. Kafka
    4.3.1's Session has no toString of its own (Object's: class name @ identity hash code), and the
    request's receive buffer is shown as Java's HeapByteBuffer while the request holds it."""
    return (f"Request(processor=0, connectionId={ctx.connection_id}, "
            f"session=org.apache.kafka.network.Session@{id(ctx) & 0x7FFFFFFF:x}, "
            f"listenerName=ListenerName({ctx.listener_name}), securityProtocol={ctx.security_protocol}, "
            f"buffer={_buffer_text(ctx)}, envelope=None)")


def _buffer_text(ctx) -> str:
    """RequestChannel.Request releases its buffer once parsed unless ApiKeys says the API
    requiresDelayedAllocation: forwardable, or a schema with bytes fields. A held buffer has been
    read to its end: position, limit and capacity are the frame's size."""
    from .envelope import FORWARDABLE_APIS         # envelope imports the server, which imports this module

    if ctx.api_key not in FORWARDABLE_APIS and not api_table()[ctx.api_key].request._HAS_BYTES:
        return "null"
    size = ctx.request_size
    return f"java.nio.HeapByteBuffer[pos={size} lim={size} cap={size}]"


def error_response_for(api_key: int, ctx, request, error: int, message: str | None):
    """The request's getErrorResponse for ``error`` (Kafka's shape per API)."""
    return error_response_at(api_key, ctx.api_version, request, error, message)


def error_response_at(api_key: int, version: int, request, error: int, message: str | None):
    """``error_response_for`` by the request's version (a broker forwarding the request has no
    context of its own to give)."""
    response = api_table()[api_key].response()
    fields = {f.py_name for f in type(response)._FIELDS if f.present(version)}
    if "error_code" in fields:
        response.error_code = error
    if api_key == 1 and version < 13:          # FetchRequest.getErrorResponse: every partition too
        response.session_id = getattr(request, "session_id", 0)
        response.responses = [fr.FetchableTopicResponse(
            topic=t.topic, topic_id=t.topic_id,
            partitions=[fr.PartitionData(partition_index=p.partition, error_code=error) for p in t.partitions])
            for t in request.topics]
    elif api_key == 1:
        response.session_id = getattr(request, "session_id", 0)
    if api_key == 30:                         # CreateAclsRequest.getErrorResponse: every creation
        response.results = [AclCreationResult(error_code=error, error_message=message) for _ in request.creations]
    elif api_key == 31:                       # DeleteAclsRequest.getErrorResponse: every filter
        response.filter_results = [DeleteAclsFilterResult(error_code=error, error_message=message, matching_acls=[])
                                   for _ in request.filters]
    elif api_key == 49:                       # every entity, with the error's default text
        response.entries = [aq.EntryData(error_code=error, error_message=Errors.for_code(error).message, entity=[
            aq.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])
            for entry in request.entries]
    elif api_key == 51:                       # every user named, sorted
        users = sorted({d.name for d in request.deletions} | {u.name for u in request.upsertions})
        response.results = [AlterUserScramCredentialsResult(user=u, error_code=error, error_message=message)
                            for u in users]
    if "error_message" in fields:
        if api_key in (60, 57, 29):           # ApiError.fromThrowable: the exception's message
            response.error_message = message
        elif api_key in (70, 80, 81):         # Errors.message(): the default text
            response.error_message = Errors.for_code(error).message
    return response


def authorizing_handler(api_key: int, handler, authorizer: StandardAuthorizer, operation: int):
    """``handler`` (an ApiHandler) behind the check ControllerApis makes for ``api_key``."""
    import dataclasses

    async def handle(ctx, request):
        try:
            allowed = authorizer.authorize(ctx.principal, ctx.peer[0], operation, RESOURCE_CLUSTER, CLUSTER_NAME)
        except AuthorizerNotReady:
            log_not_loaded(api_key, ctx)
            return error_response_for(api_key, ctx, request, int(Errors.UNKNOWN_SERVER_ERROR), None)
        if allowed:
            return await handler.handle(ctx, request)
        log.info("Principal = %s is Denied operation = %s from host = %s on resource = Cluster:LITERAL:%s for "
                 "request = %s", ctx.principal, Op.NAMES[operation], ctx.peer[0], CLUSTER_NAME,
                 _api_name(api_key))
        message = f"Request {request_text(ctx)} needs {Op.NAMES[operation]} permission."
        return error_response_for(api_key, ctx, request, int(Errors.CLUSTER_AUTHORIZATION_FAILED), message)

    return dataclasses.replace(handler, handle=handle)


def refused_until_loaded(api_key: int, handler, error_response):
    """``handler`` (an ApiHandler whose checks ask the authorizer before anything is done)
    answering ``error_response(request, version, UNKNOWN_SERVER_ERROR)`` when a check meets an
    authorizer that has not loaded the metadata: ControllerApis lets StandardAuthorizer's
    AuthorizerNotReadyException reach its handleError, which answers the request's
    getErrorResponse with the code Errors.forException gives it (the exception has none of its own)."""
    import dataclasses

    async def handle(ctx, request):
        try:
            return await handler.handle(ctx, request)
        except AuthorizerNotReady:
            log_not_loaded(api_key, ctx)
            return error_response(request, ctx.api_version, int(Errors.UNKNOWN_SERVER_ERROR))

    return dataclasses.replace(handler, handle=handle)


def _api_name(api_key: int) -> str:
    return api_table()[api_key].name


def authorizing_create_delegation_token(handler, authorizer: StandardAuthorizer):
    """CreateDelegationToken as ControllerApis checks it: once token requests are allowed at all
    (the handler's own refusal comes first), a token for another owner needs CREATE_TOKENS on
    that User, else DELEGATION_TOKEN_AUTHORIZATION_FAILED; the requester may always create its own."""
    import dataclasses

    from kafkawire.metadata.delegation_tokens import (NullOwnerType, create_refusal, requested_owner,
                                                      token_requests_allowed)

    async def handle(ctx, request):
        try:
            owner = requested_owner(ctx, request)
        except NullOwnerType:           # the handler answers it
            return await handler.handle(ctx, request)
        if token_requests_allowed(ctx, forwarded_exempt=True) and owner != ctx.principal:
            try:
                allowed = authorizer.authorize(ctx.principal, ctx.peer[0], CREATE_TOKENS, RESOURCE_USER, owner)
            except AuthorizerNotReady:       # ControllerApis' handleError: getErrorResponse
                log_not_loaded(ctx.api_key, ctx)
                return create_refusal(ctx, request, Errors.UNKNOWN_SERVER_ERROR)
            if not allowed:
                log.info("Principal = %s is Denied operation = CREATE_TOKENS from host = %s on resource = "
                         "User:LITERAL:%s for request = CreateDelegationToken", ctx.principal, ctx.peer[0], owner)
                return create_refusal(ctx, request, Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
        return await handler.handle(ctx, request)

    return dataclasses.replace(handler, handle=handle)


class CreateTopicsFailed(CreateTopicsResponse):
    """CreateTopics' answer when the request failed as a whole (NOT_CONTROLLER, a timeout, too
    many records): CreateTopicsRequest.getErrorResponse, every topic with the error. Its own
    type so that authorizing_create_topics answers the topics it kept from the controller the
    same way, as Kafka's ControllerApis does when the controller's future fails."""
    __slots__ = ("error", "message")
    error: int
    message: str | None

    @classmethod
    def of(cls, request, error: int, message: str | None) -> "CreateTopicsFailed":
        response = cls(topics=[CreatableTopicResult(name=t.name, error_code=int(error), error_message=message)
                               for t in request.topics])
        response.error, response.message = int(error), message
        return response


def authorizing_create_topics(handler, authorizer: StandardAuthorizer):
    """CreateTopics as ControllerApis.createTopics filters it: CREATE on the cluster allows every
    topic; otherwise each topic needs CREATE on itself, and the others are answered
    TOPIC_AUTHORIZATION_FAILED ("Authorization failed.") after the controller's results. When
    the controller fails the request as a whole, every topic sent gets its error, those refused too."""
    import copy
    import dataclasses

    def may(ctx, resource_type, name):      # AuthorizerNotReady: refused_until_loaded answers it
        return authorizer.authorize(ctx.principal, ctx.peer[0], Op.CREATE, resource_type, name)

    async def handle(ctx, request):
        if may(ctx, RESOURCE_CLUSTER, CLUSTER_NAME):
            return await handler.handle(ctx, request)
        counts = Counter(t.name for t in request.topics)      # duplicates go to the controller unchecked
        refused = [n for n, count in counts.items() if count == 1 and n != "__cluster_metadata"
                   and not may(ctx, RESOURCE_TOPIC, n)]
        refused_names = set(refused)
        effective = copy.copy(request)
        effective.topics = [t for t in request.topics if t.name not in refused_names]
        answer = await handler.handle(ctx, effective)
        response = answer.response if isinstance(answer, Throttled) else answer
        if isinstance(response, CreateTopicsFailed):       # getErrorResponse of the request as sent
            response.topics = CreateTopicsFailed.of(request, response.error, response.message).topics
            return answer
        for name in refused:
            response.topics.append(CreatableTopicResult(name=name, error_code=int(Errors.TOPIC_AUTHORIZATION_FAILED),
                                                        error_message="Authorization failed."))
        return answer

    return dataclasses.replace(handler, handle=handle)


# --- the read-only __cluster_metadata topic (a broker's rules; Kafka's controllers do not serve it) ---

def _may_describe_topic(authorizer, ctx, name: str) -> bool:
    try:
        return authorizer.authorize(ctx.principal, ctx.peer[0], Op.DESCRIBE, RESOURCE_TOPIC, name)
    except AuthorizerNotReady:
        return False


def authorizing_metadata(handler, authorizer: StandardAuthorizer):
    """Metadata as KafkaApis.handleTopicMetadataRequest filters it: a topic the principal may not
    DESCRIBE is left out of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when named."""
    import dataclasses
    import uuid

    async def handle(ctx, request):
        response = await handler.handle(ctx, request)
        every_topic = request.topics is None or (ctx.api_version == 0 and not request.topics)
        topics = []
        for topic in response.topics:
            if topic.error_code or topic.name is None or _may_describe_topic(authorizer, ctx, topic.name):
                topics.append(topic)
            elif not every_topic:
                topics.append(MetadataResponseTopic(error_code=int(Errors.TOPIC_AUTHORIZATION_FAILED), name=topic.name,
                                                    topic_id=uuid.UUID(int=0), is_internal=False, partitions=[]))
        response.topics = topics
        return response

    return dataclasses.replace(handler, handle=handle)


def authorizing_list_offsets(handler, authorizer: StandardAuthorizer):
    """ListOffsets: the partitions of a topic the principal may not DESCRIBE are answered
    TOPIC_AUTHORIZATION_FAILED (offset and timestamp -1), as KafkaApis.handleListOffsetRequest does."""
    import dataclasses

    async def handle(ctx, request):
        response = await handler.handle(ctx, request)
        for topic in response.topics:
            if not _may_describe_topic(authorizer, ctx, topic.name):
                topic.partitions = [ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                                 error_code=int(Errors.TOPIC_AUTHORIZATION_FAILED))
                                    for p in topic.partitions]
        return response

    return dataclasses.replace(handler, handle=handle)
