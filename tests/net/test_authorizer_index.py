"""StandardAuthorizer reads only the ACLs that can match the resource (issue 24), through the
AclIndex the metadata image keeps, as Kafka's StandardAuthorizerData walks its AclCache: LITERAL
ACLs of the name and of ``*``, PREFIXED ACLs of the name's prefixes. Its decisions are the full
scan's (``full_scan_decision`` below, the rule as Kafka states it, kept as the oracle)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkawire.metadata.image import MetadataImage
from kafkawire.metadata.registrations import StandardAcl
from kafkawire.messages.access_control_entry_record import AccessControlEntryRecord
from kafkawire.messages.remove_access_control_entry_record import RemoveAccessControlEntryRecord
from kafkawire.net.authorizer import AuthorizerNotReady, AuthorizerSettings, Op, StandardAuthorizer
from kafkawire.raft.node.controller_node import ControllerNode

TOPIC, GROUP, CLUSTER = 2, 3, 4
MATCH, LITERAL, PREFIXED = 2, 3, 4
DENY, ALLOW = 2, 3
IMPLIES_DESCRIBE = {Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}
IMPLIES_DESCRIBE_CONFIGS = {Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}


# --- the oracle: every ACL looked at, as StandardAuthorizerData's rule reads -----------------------

def pattern_matches(acl, resource_type: int, name: str) -> bool:
    if acl.resource_type != resource_type:
        return False
    if acl.pattern_type == LITERAL:
        return acl.resource_name in (name, "*")
    return acl.pattern_type == PREFIXED and name.startswith(acl.resource_name)


def acl_result(acl, principal: str, host: str, operation: int):
    """True (allows), False (denies), None (does not apply): StandardAuthorizerData.findResult."""
    if acl.principal not in (principal, "User:*") or acl.host not in ("*", host):
        return None
    if acl.operation != Op.ALL:
        implied = (IMPLIES_DESCRIBE if operation == Op.DESCRIBE else IMPLIES_DESCRIBE_CONFIGS
                   if operation == Op.DESCRIBE_CONFIGS else {operation})
        if acl.operation not in (implied if acl.permission_type == ALLOW else {operation}):
            return None
    return {ALLOW: True, DENY: False}.get(acl.permission_type)


def full_scan_decision(acls, config: AuthorizerSettings, loaded: bool, principal, host, operation, resource_type,
                       name) -> bool:
    """Super users first; not loaded: not ready; DENY wins; no ACL of the resource at all (any
    principal, host, operation): allow.everyone.if.no.acl.found; else DENIED."""
    if principal in config.super_users:
        return True
    if not loaded:
        raise AuthorizerNotReady()
    results = [acl_result(a, principal, host, operation) for a in acls if pattern_matches(a, resource_type, name)]
    if False in results:
        return False
    if True in results:
        return True
    return config.allow_everyone_if_no_acl_found if not results else False


# --- random ACLs and questions ---------------------------------------------------------------------

names = st.sampled_from(["*", "a", "ab", "abc", "abd", "b", "ba", "", "a*"])
acls = st.builds(StandardAcl, st.sampled_from([TOPIC, GROUP, CLUSTER]), names, st.sampled_from([LITERAL, PREFIXED, MATCH]),
                 st.sampled_from(["User:alice", "User:bob", "User:*"]), st.sampled_from(["*", "10.0.0.1"]),
                 st.sampled_from(list(Op.NAMES)), st.sampled_from([DENY, ALLOW]))
questions = st.tuples(st.sampled_from(["User:alice", "User:bob", "User:root"]), st.sampled_from(["10.0.0.1", "10.0.0.2"]),
                      st.sampled_from(list(Op.NAMES)), st.sampled_from([TOPIC, GROUP, CLUSTER]),
                      st.sampled_from(["*", "a", "ab", "abc", "abcd", "b", "bab", "c", "a*"]))
configs = st.builds(AuthorizerSettings, st.sampled_from([frozenset(), frozenset({"User:root"})]), st.booleans())


def record(acl_id: int, acl: StandardAcl) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(id=uuid.UUID(int=acl_id), resource_type=acl.resource_type,
                                    resource_name=acl.resource_name, pattern_type=acl.pattern_type,
                                    principal=acl.principal, host=acl.host, operation=acl.operation,
                                    permission_type=acl.permission_type)


@settings(max_examples=300, deadline=None)
@given(st.lists(acls, max_size=25), st.lists(st.integers(0, 30), max_size=10), st.lists(questions, min_size=1, max_size=15),
       configs, st.booleans())
def test_indexed_decisions_are_the_full_scans(acl_list, removed, asked, config, loaded):
    """For random ACLs (added as records, some replaced or removed again) and random questions, the decision
    through the image's AclIndex equals the full scan of the image's ACLs."""
    image = MetadataImage()
    for i, acl in enumerate(acl_list):
        image.apply(record(i % 20, acl))              # beyond 20, an id is given a new ACL
    for acl_id in removed:
        image.apply(RemoveAccessControlEntryRecord(id=uuid.UUID(int=acl_id)))
    indexed = StandardAuthorizer(config, lambda: image.acl_index, lambda: loaded)
    for question in asked:
        try:
            expected = full_scan_decision(image.acls.values(), config, loaded, *question)
        except AuthorizerNotReady:
            with pytest.raises(AuthorizerNotReady):
                indexed.authorize(*question)
            continue
        assert indexed.authorize(*question) == expected, question


# --- the work of one decision ----------------------------------------------------------------------

@dataclass(frozen=True)
class ReadCountingAcl(StandardAcl):
    """A StandardAcl counting how often its fields are read (one read or more: it was examined)."""
    def __getattribute__(self, name):
        if name in ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation",
                    "permission_type"):
            examined.add(id(self))
        return object.__getattribute__(self, name)


examined: set[int] = set()


def test_a_decision_examines_only_the_acls_that_can_match():
    """StandardAuthorizerData.findAclRule reads the ACLs of the resource's name, of '*' and of the
    name's prefixes: with 10,000 unrelated ACLs (other names, other prefixes, other types) one
    decision examines the 3 that match."""
    unrelated = ([ReadCountingAcl(TOPIC, f"other-{i}", LITERAL, "User:bob", "*", Op.ALL, ALLOW) for i in range(4000)]
                 + [ReadCountingAcl(TOPIC, f"pre{i}", PREFIXED, "User:bob", "*", Op.ALL, ALLOW) for i in range(4000)]
                 + [ReadCountingAcl(GROUP, "orders", LITERAL, "User:bob", "*", Op.ALL, ALLOW) for _ in range(2000)])
    relevant = [ReadCountingAcl(TOPIC, "orders", LITERAL, "User:alice", "*", Op.READ, ALLOW),
                ReadCountingAcl(TOPIC, "*", LITERAL, "User:carol", "*", Op.ALL, ALLOW),
                ReadCountingAcl(TOPIC, "ord", PREFIXED, "User:dave", "*", Op.WRITE, DENY)]
    everything = tuple(unrelated + relevant)
    authorizer = StandardAuthorizer(AuthorizerSettings(), lambda: everything, lambda: True)
    assert authorizer.authorize("User:alice", "10.0.0.1", Op.DESCRIBE, TOPIC, "orders")    # indexes them once
    examined.clear()
    assert not authorizer.authorize("User:alice", "10.0.0.1", Op.WRITE, TOPIC, "orders")
    assert examined == {id(a) for a in relevant}


def test_the_node_reads_the_images_index_not_a_copy_of_its_acls():
    """The controller node hands the authorizer the image's AclIndex, kept up to date on replay,
    instead of building a tuple of every ACL per decision."""
    image = MetadataImage()
    image.apply(record(1, StandardAcl(TOPIC, "t", LITERAL, "User:alice", "*", Op.READ, ALLOW)))
    node = SimpleNamespace(_image=lambda: image)
    assert ControllerNode._acls(node) is image.acl_index
    assert len(ControllerNode._acls(SimpleNamespace(_image=lambda: None))) == 0
