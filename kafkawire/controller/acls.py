"""CreateAcls, DescribeAcls and DeleteAcls as Kafka's controller answers them (AclApis in front of
AclControlManager): the records the active controller writes (AccessControlEntryRecord,
RemoveAccessControlEntryRecord) and the answers.

* CreateAcls: each creation is checked as AclApis and AclControlManager.validateNewAcl check it
  (``The only valid name for the CLUSTER resource is kafka-cluster``, ``Invalid resourceType
  ANY``, ...; INVALID_REQUEST with that message); a binding that exists already, or twice in
  the request, writes nothing and still succeeds.
* DescribeAcls: the bindings matching the filter, grouped by resource pattern
  (kafkawire.metadata.acl_filters, which the broker's DescribeAcls shares).
* DeleteAcls: per filter, the bindings it matches are removed and listed.

Both are bounded by MAX_RECORDS_PER_USER_OP (bounded.py), counting records written, not entries
asked for. CreateAcls past it: every creation that passed AclApis' own checks is answered
POLICY_VIOLATION "Unable to perform excessively large batch operation." and nothing is written
(ClusterMetadataAuthorizer fails each one with the controller's exception). DeleteAcls matching
more than that many: every filter is answered INVALID_REQUEST "Cannot remove more than 10000 acls
in a single delete operation." (AclControlManager.deleteAcls fails the whole request).

Without an authorizer Kafka answers all three SECURITY_DISABLED, "No Authorizer is configured."
"""
from __future__ import annotations

import uuid

from kafkawire.metadata import encode_metadata_record
from kafkawire.protocol.error_codes import Errors
from kafkawire import messages
from kafkawire.messages.create_acls_response import AclCreationResult, CreateAclsResponse
from kafkawire.messages.delete_acls_response import DeleteAclsFilterResult, DeleteAclsMatchingAcl, DeleteAclsResponse
from kafkawire.metadata.acl_filters import (ACL_APIS, ANY, CLUSTER, CLUSTER_NAME, CREATE_ACLS, DELETE_ACLS,
                                            DESCRIBE_ACLS, LITERAL, OPERATIONS, PATTERN_TYPES, PERMISSIONS,
                                            PREFIXED, RESOURCE_TYPES, describe_acls, filter_error, matches,
                                            security_disabled)

from .bounded import MAX_RECORDS_PER_USER_OP, BoundedList, BoundedListTooLong, excessive_batch
from .errors import ApiError

__all__ = ["create_acls", "describe_acls", "delete_acls", "security_disabled", "ACL_APIS", "DESCRIBE_ACLS",
           "CREATE_ACLS", "DELETE_ACLS"]



class _Invalid(Exception):
    pass


def _binding(c) -> tuple:
    """(resource type, name, pattern type, principal, host, operation, permission) of a creation."""
    return (c.resource_type, c.resource_name, getattr(c, "resource_pattern_type", LITERAL), c.principal, c.host,
            c.operation, c.permission_type)


def _apis_error(b: tuple) -> str | None:
    """AclApis' own checks, made before the controller sees the request."""
    resource_type, name = b[0], b[1]
    if resource_type == CLUSTER and name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not name:
        return "Invalid empty resource name"
    return None


def _validate(b: tuple) -> None:
    resource_type, name, pattern, principal, host, operation, permission = b
    error = _apis_error(b)
    if error is not None:
        raise _Invalid(error)
    if resource_type not in RESOURCE_TYPES or resource_type in (0, ANY):       # AclControlManager
        raise _Invalid(f"Invalid resourceType {RESOURCE_TYPES.get(resource_type, 'UNKNOWN')}")
    if pattern not in (LITERAL, PREFIXED):
        raise _Invalid(f"Invalid patternType {PATTERN_TYPES.get(pattern, 'UNKNOWN')}")
    if operation not in OPERATIONS or operation in (0, ANY):
        raise _Invalid(f"Invalid operation {OPERATIONS.get(operation, 'UNKNOWN')}")
    if permission not in (2, 3):
        raise _Invalid(f"Invalid permissionType {PERMISSIONS.get(permission, 'UNKNOWN')}")
    if ":" not in principal:
        raise _Invalid(f"Could not parse principal from `{principal}` (no colon is present separating the "
                       "principal type from the principal name)")


def _as_tuple(acl) -> tuple:
    return (acl.resource_type, acl.resource_name, acl.pattern_type, acl.principal, acl.host, acl.operation,
            acl.permission_type)


def create_acls(existing: dict, request) -> tuple[list[bytes], object]:
    """The records and the CreateAclsResponse for ``request``; ``existing``: id -> StandardAcl."""
    try:
        return _create_acls(existing, request)
    except BoundedListTooLong:
        refusal = excessive_batch()
        results = []
        for creation in request.creations:
            error = _apis_error(_binding(creation))
            results.append(AclCreationResult(error_code=refusal.code, error_message=refusal.message) if error is None
                           else AclCreationResult(error_code=int(Errors.INVALID_REQUEST), error_message=error))
        return [], CreateAclsResponse(results=results)


def _create_acls(existing: dict, request) -> tuple[list[bytes], object]:
    record_cls = messages.by_name("AccessControlEntryRecord")
    have = {_as_tuple(a) for a in existing.values()}
    ids = set(existing)
    records, results = BoundedList(), []
    for creation in request.creations:
        binding = _binding(creation)
        try:
            _validate(binding)
        except _Invalid as exc:
            results.append(AclCreationResult(error_code=int(Errors.INVALID_REQUEST), error_message=str(exc)))
            continue
        if binding not in have:
            have.add(binding)
            acl_id = uuid.uuid4()
            while acl_id in ids:
                acl_id = uuid.uuid4()
            ids.add(acl_id)
            resource_type, name, pattern, principal, host, operation, permission = binding
            records.append(encode_metadata_record(record_cls(
                id=acl_id, resource_type=resource_type, resource_name=name, pattern_type=pattern,
                principal=principal, host=host, operation=operation, permission_type=permission), 0))
        results.append(AclCreationResult(error_code=0, error_message=""))    # AclApis sets none: the default
    return records, CreateAclsResponse(results=results)


def delete_acls(acls: dict, request) -> tuple[list[bytes], object]:
    remove_cls = messages.by_name("RemoveAccessControlEntryRecord")
    records, results, removed = [], [], set()
    for f in request.filters:
        error = filter_error(f)
        if error is not None:
            results.append(DeleteAclsFilterResult(error_code=int(Errors.INVALID_REQUEST), error_message=error,
                                                  matching_acls=[]))
            continue
        matching = []
        for acl_id, acl in acls.items():
            if not matches(acl, f):
                continue
            if len(removed) >= MAX_RECORDS_PER_USER_OP:         # checked at every match, as Kafka's
                raise ApiError(Errors.INVALID_REQUEST, f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a "
                                                       "single delete operation.")
            if acl_id not in removed:
                removed.add(acl_id)
                records.append(encode_metadata_record(remove_cls(id=acl_id), 0))
                matching.append(DeleteAclsMatchingAcl(
                    error_code=0, error_message=None, resource_type=acl.resource_type,
                    resource_name=acl.resource_name, pattern_type=acl.pattern_type, principal=acl.principal,
                    host=acl.host, operation=acl.operation, permission_type=acl.permission_type))
        results.append(DeleteAclsFilterResult(error_code=0, error_message=None, matching_acls=matching))
    return records, DeleteAclsResponse(filter_results=results)


