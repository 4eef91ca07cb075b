"""The ACLs of the metadata image indexed by the resources they can match, as Kafka's AclCache
orders them for StandardAuthorizerData.findAclRule: an authorization decision reads only the
ACLs whose resource pattern matches the resource, not every ACL of the cluster.

For a resource (type, name) the candidates are the LITERAL ACLs named ``name``, the LITERAL
ACLs named ``*`` (the wildcard), and the PREFIXED ACLs named by a prefix of ``name``. Kafka walks
a sorted set to find the prefixes; here the PREFIXED ACLs are in a dict by (type, prefix) and a
decision looks up the prefixes of ``name`` of the lengths some PREFIXED ACL of that type has, so
its cost depends on the name and on those lengths, not on the number of ACLs. ACLs of another
pattern type match nothing (Kafka stores only LITERAL and PREFIXED ones).

The index is kept up to date as AccessControlEntryRecords and RemoveAccessControlEntryRecords
are replayed (MetadataImage keeps one), never rebuilt per decision.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Iterator

__all__ = ["AclIndex", "LITERAL", "PREFIXED", "WILDCARD"]

LITERAL, PREFIXED = 3, 4        # PatternType codes
WILDCARD = "*"


class AclIndex:
    def __init__(self, acls: Iterable[tuple[object, object]] = ()):
        """``acls``: (id, StandardAcl) pairs to start with."""
        self._by_id: dict = {}
        self._literal: dict[tuple[int, str], dict] = {}       # (resource type, name) -> {id: acl}
        self._prefixed: dict[tuple[int, str], dict] = {}      # (resource type, prefix) -> {id: acl}
        self._prefix_lengths: dict[int, Counter] = {}         # resource type -> lengths of its prefixes
        self._sorted_lengths: dict[int, list[int]] = {}       # the same, sorted (rebuilt when they change)
        for acl_id, acl in acls:
            self.add(acl_id, acl)

    def __len__(self) -> int:
        return len(self._by_id)

    def copy(self) -> AclIndex:
        """An index of the same ACLs that changes apart from this one (the ACLs themselves are
        immutable and shared): one copy of each bucket, no re-indexing."""
        index = AclIndex()
        index._by_id = dict(self._by_id)
        index._literal = {key: dict(acls) for key, acls in self._literal.items()}
        index._prefixed = {key: dict(acls) for key, acls in self._prefixed.items()}
        index._prefix_lengths = {kind: Counter(lengths) for kind, lengths in self._prefix_lengths.items()}
        index._sorted_lengths = {kind: list(lengths) for kind, lengths in self._sorted_lengths.items()}
        return index

    def add(self, acl_id, acl) -> None:
        """An AccessControlEntryRecord: ``acl`` under ``acl_id`` (replacing what had that id)."""
        if acl_id in self._by_id:
            self.remove(acl_id)
        self._by_id[acl_id] = acl
        bucket = self._bucket_of(acl)
        if bucket is None:
            return
        table, key = bucket
        table.setdefault(key, {})[acl_id] = acl
        if acl.pattern_type == PREFIXED:
            lengths = self._prefix_lengths.setdefault(acl.resource_type, Counter())
            lengths[len(acl.resource_name)] += 1
            if lengths[len(acl.resource_name)] == 1:
                self._sorted_lengths[acl.resource_type] = sorted(lengths)

    def remove(self, acl_id) -> None:
        """A RemoveAccessControlEntryRecord (an unknown id is ignored, as the image ignores it)."""
        acl = self._by_id.pop(acl_id, None)
        bucket = None if acl is None else self._bucket_of(acl)
        if bucket is None:
            return
        table, key = bucket
        acls = table[key]
        del acls[acl_id]
        if not acls:
            del table[key]
        if acl.pattern_type == PREFIXED:
            lengths = self._prefix_lengths[acl.resource_type]
            lengths[len(acl.resource_name)] -= 1
            if not lengths[len(acl.resource_name)]:
                del lengths[len(acl.resource_name)]
                self._sorted_lengths[acl.resource_type] = sorted(lengths)

    def _bucket_of(self, acl):
        if acl.pattern_type == LITERAL:
            return self._literal, (acl.resource_type, acl.resource_name)
        if acl.pattern_type == PREFIXED:
            return self._prefixed, (acl.resource_type, acl.resource_name)
        return None

    def of_type(self, resource_type: int) -> Iterator:
        """Every ACL of the resource type (Authorizer.authorizeByResourceType reads them all)."""
        return (acl for acl in self._by_id.values() if acl.resource_type == resource_type)

    def matching(self, resource_type: int, name: str) -> Iterator:
        """Every ACL whose resource pattern matches the resource (type, name), once each."""
        yield from self._literal.get((resource_type, name), {}).values()
        if name != WILDCARD:
            yield from self._literal.get((resource_type, WILDCARD), {}).values()
        for length in self._sorted_lengths.get(resource_type, ()):
            if length > len(name):
                break
            yield from self._prefixed.get((resource_type, name[:length]), {}).values()
