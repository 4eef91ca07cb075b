"""The read-only side of Kafka's ACL APIs, shared by the controller (kafkawire.controller.acls,
which also creates and deletes) and the broker (DescribeAcls from its image, as Kafka's broker
answers it through its authorizer): the codes of ACL bindings, AclBindingFilter's matching and
checks, DescribeAcls' answer, and the answers without an authorizer.

* DescribeAcls: the bindings matching the filter (AclBindingFilter.matches: ANY matches every
  type, operation and permission; a null name, principal or host matches all; pattern type MATCH
  matches LITERAL of the same name, the LITERAL wildcard ``*`` and PREFIXED prefixes), grouped by
  resource pattern.
* Without an authorizer Kafka answers CreateAcls, DeleteAcls and DescribeAcls SECURITY_DISABLED,
  "No Authorizer is configured."
"""
from __future__ import annotations

from kafkawire.messages.create_acls_response import AclCreationResult, CreateAclsResponse
from kafkawire.messages.delete_acls_response import DeleteAclsFilterResult, DeleteAclsResponse
from kafkawire.messages.describe_acls_response import AclDescription, DescribeAclsResource, DescribeAclsResponse
from kafkawire.protocol.error_codes import Errors

__all__ = ["DESCRIBE_ACLS", "CREATE_ACLS", "DELETE_ACLS", "ACL_APIS", "matches", "filter_error", "describe_acls",
           "security_disabled"]

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
ACL_APIS = (DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS)
ANY = 1
RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                  6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
              8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE",
              13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}
LITERAL, PREFIXED, MATCH = 3, 4, 2
CLUSTER, CLUSTER_NAME, WILDCARD = 4, "kafka-cluster", "*"
NO_AUTHORIZER = "No Authorizer is configured."


def matches(acl, f) -> bool:
    """AclBindingFilter.matches(binding) for a DescribeAcls or DeleteAcls filter."""
    if f.resource_type_filter != ANY and f.resource_type_filter != acl.resource_type:
        return False
    pattern = getattr(f, "pattern_type_filter", LITERAL)
    name = f.resource_name_filter
    if pattern == MATCH:
        if name is not None and not (
                (acl.pattern_type == LITERAL and acl.resource_name in (name, WILDCARD))
                or (acl.pattern_type == PREFIXED and name.startswith(acl.resource_name))):
            return False
    else:
        if pattern != ANY and pattern != acl.pattern_type:
            return False
        if name is not None and name != acl.resource_name:
            return False
    return ((f.principal_filter is None or f.principal_filter == acl.principal)
            and (f.host_filter is None or f.host_filter == acl.host)
            and (f.operation == ANY or f.operation == acl.operation)
            and (f.permission_type == ANY or f.permission_type == acl.permission_type))


def filter_error(f) -> str | None:
    """AclControlManager.validateFilter / the request's own checks."""
    if getattr(f, "pattern_type_filter", LITERAL) not in PATTERN_TYPES or \
            getattr(f, "pattern_type_filter", LITERAL) == 0:
        return "Unknown patternFilter."
    if f.operation in (0,) or f.operation not in OPERATIONS or f.permission_type in (0,) \
            or f.permission_type not in PERMISSIONS or f.resource_type_filter in (0,):
        return "Unknown entryFilter."
    return None


def describe_acls(acls: dict, request):
    error = filter_error(request)
    if error is not None:
        return DescribeAclsResponse(error_code=int(Errors.INVALID_REQUEST), error_message=error, resources=[])
    grouped: dict[tuple, list] = {}
    for acl in acls.values():
        if matches(acl, request):
            grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    resources = [DescribeAclsResource(resource_type=t, resource_name=n, pattern_type=p, acls=[
        AclDescription(principal=a.principal, host=a.host, operation=a.operation, permission_type=a.permission_type)
        for a in found]) for (t, n, p), found in grouped.items()]
    return DescribeAclsResponse(error_code=0, error_message=None, resources=resources)


def security_disabled(api_key: int, request):
    """The request's getErrorResponse for SecurityDisabledException("No Authorizer is configured.")."""
    code = int(Errors.SECURITY_DISABLED)
    if api_key == CREATE_ACLS:
        return CreateAclsResponse(results=[AclCreationResult(error_code=code, error_message=NO_AUTHORIZER)
                                           for _ in request.creations])
    if api_key == DELETE_ACLS:
        return DeleteAclsResponse(filter_results=[DeleteAclsFilterResult(error_code=code, error_message=NO_AUTHORIZER,
                                                                         matching_acls=[]) for _ in request.filters])
    return DescribeAclsResponse(error_code=code, error_message=NO_AUTHORIZER, resources=[])
