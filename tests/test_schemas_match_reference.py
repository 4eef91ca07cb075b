"""Our message schemas (schemas/) must describe exactly Apache Kafka's wire format.

For every schema file in schemas/ the reference schema of the same name is looked up in two
pairs of references (tests/kafka_schemas.py): the schemas inside the released jars of Kafka 4.3.1
and 3.9.1 (from Maven at test time); Kafka trunk's and the 3.9 branch's, which schemas/ was
generated from, rebuilt from those jars and tests/data/kafka-trunk (tests/kafka_trunk_record.py);
and, when ../shared is present, the held-out copies of those two there. For
every version a reference supports, our schema must give the same
wire layout at that version: the ordered non-tagged fields (name, type, nullability,
flexible encoding, nested struct layout, with commonStructs resolved), the set of tagged
fields (tag, name, type, nullability, nested layout), and the same defaults. apiKey, type,
name and flexibleVersions must be equal, and our validVersions must be the union of the trunk
and 3.9 references' validVersions (Kafka 4.0 dropped old versions that we keep), and hold every
version of Kafka 4.3.1 and 3.9.1.

Prose ("about", comments) and in-memory hints (ignorable, mapKey, entityType, ...) are not
compared.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kafkawire.codegen.dialect import strip_comments
from tests import kafka_schemas, kafka_trunk_record
from tests.conftest import unavailable

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "schemas"

_APIS = [
    "ApiVersions", "Metadata", "Produce", "Fetch", "ListOffsets", "DescribeCluster", "FindCoordinator",
    "InitProducerId", "Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "DescribeQuorum", "FetchSnapshot",
    "AddRaftVoter", "RemoveRaftVoter", "UpdateRaftVoter", "UpdateFeatures", "ControllerRegistration",
    "BrokerRegistration", "BrokerHeartbeat", "DescribeTopicPartitions",
]
_METADATA_RECORDS = [
    "AbortTransactionRecord", "AccessControlEntryRecord", "BeginTransactionRecord",
    "BrokerRegistrationChangeRecord", "ClearElrRecord", "ClientQuotaRecord", "ConfigRecord",
    "DelegationTokenRecord", "EndTransactionRecord", "FeatureLevelRecord", "FenceBrokerRecord", "NoOpRecord",
    "PartitionChangeRecord", "PartitionRecord", "ProducerIdsRecord", "RegisterBrokerRecord",
    "RegisterControllerRecord", "RemoveAccessControlEntryRecord", "RemoveDelegationTokenRecord",
    "RemoveTopicRecord", "RemoveUserScramCredentialRecord", "TopicRecord", "UnfenceBrokerRecord",
    "UnregisterBrokerRecord", "UnregisterControllerRecord", "UserScramCredentialRecord", "ZkMigrationRecord",
]
REQUIRED = (
    ["clients/RequestHeader", "clients/ResponseHeader"]
    + [f"clients/{api}{kind}" for api in _APIS for kind in ("Request", "Response")]
    + [f"clients/{name}" for name in (
        "LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord", "KRaftVersionRecord",
        "VotersRecord", "EndTxnMarker", "ControlRecordTypeSchema")]
    + ["raft/QuorumStateData"]
    + [f"metadata/{name}" for name in _METADATA_RECORDS]
)

# Every request and response either reference ships, and the coordinator records of current Kafka.
def _reference_names(reference, folder: str, kinds: tuple[str, ...]) -> set[str]:
    names = set()
    for root in (reference.trunk, reference.old):
        for path in (root / folder).glob("*.json") if (root / folder).is_dir() else []:
            data = load_schema(path)
            if data.get("type") in kinds and parse_versions(data.get("validVersions")):
                names.add(SCHEMA_RENAMED_TO.get(path.stem, path.stem))
    return names


# Fields Kafka renamed without touching the wire format, as (schema, dotted path in 3.9) -> trunk name.
# VoteRequest: KIP-996 (v2) renamed Candidate* to Replica*; v0-v1 bytes are unchanged.
# ListConfigResources (KIP-1142) was ListClientMetricsResources in 3.9, with the same v0 bytes.
RENAMED_SINCE_39 = {
    ("VoteRequest", "Topics.Partitions.CandidateEpoch"): "ReplicaEpoch",
    ("VoteRequest", "Topics.Partitions.CandidateId"): "ReplicaId",
    ("VoteRequest", "Topics.Partitions.CandidateDirectoryId"): "ReplicaDirectoryId",
    ("ListConfigResourcesResponse", "ClientMetricsResources"): "ConfigResources",
    ("ListConfigResourcesResponse", "ClientMetricsResources.Name"): "ResourceName",
    ("TxnOffsetCommitRequest", "GenerationId"): "GenerationIdOrMemberEpoch",
}
# Fields trunk (which schemas/ follows) renamed after Kafka 4.3.1, as (schema, path in 4.3.1) -> ours.
# TxnOffsetCommitRequest's is the rename above; StreamsGroupHeartbeatResponse's v0 field became the
# Legacy one when trunk added an int64 AcceptableRecoveryLag in v1 (same v0 bytes).
RENAMED_SINCE_431 = {
    ("TxnOffsetCommitRequest", "GenerationId"): "GenerationIdOrMemberEpoch",
    ("StreamsGroupHeartbeatResponse", "AcceptableRecoveryLag"): "AcceptableRecoveryLagLegacy",
}
# Struct types renamed with their field: (schema, dotted path in 3.9) -> trunk type.
RETYPED_SINCE_39 = {("ListConfigResourcesResponse", "ClientMetricsResources"): "[]ConfigResource"}
# Whole schemas renamed since 3.9: 3.9 name -> trunk name (the name check is then made on trunk only).
SCHEMA_RENAMED_TO = {
    "ListClientMetricsResourcesRequest": "ListConfigResourcesRequest",
    "ListClientMetricsResourcesResponse": "ListConfigResourcesResponse",
}
SCHEMA_RENAMED_FROM = {new: old for old, new in SCHEMA_RENAMED_TO.items()}
# Kafka 3.9 declares coordinator records as "data" whose version is the record type (the same
# bytes as trunk's coordinator-key apiKey); they are compared with current Kafka only.
COORDINATOR_FOLDERS = ("group-coordinator", "share-coordinator", "transaction-coordinator")

MAX_VERSION = 1000


# --------------------------------------------------------------------------------------------
# Kafka's JSON dialect, read with the codegen's comment stripper
# --------------------------------------------------------------------------------------------

def load_schema(path: Path) -> dict:
    return json.loads(strip_comments(path.read_text(encoding="utf-8")))


def parse_versions(spec) -> frozenset[int]:
    """'N', 'N-M', 'N+' or 'none' -> the set of versions (N+ is open-ended up to MAX_VERSION)."""
    if spec is None:
        return frozenset()
    s = str(spec).strip()
    if s == "none":
        return frozenset()
    if s.endswith("+"):
        return frozenset(range(int(s[:-1]), MAX_VERSION))
    m = re.fullmatch(r"(\d+)-(\d+)", s)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        assert lo <= hi, f"bad version range {spec!r}"
        return frozenset(range(lo, hi + 1))
    if re.fullmatch(r"\d+", s):
        return frozenset({int(s)})
    raise ValueError(f"bad version spec {spec!r}")


def fmt_versions(vs) -> str:
    vs = sorted(vs)
    if not vs:
        return "none"
    parts, start, prev = [], vs[0], vs[0]
    for v in vs[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(parts)


_INT_TYPES = {"int8", "int16", "int32", "int64", "uint16", "uint32"}


def normalize_default(ftype: str, field: dict):
    """The default value a field takes, as a comparable Python value."""
    has = "default" in field
    raw = field.get("default")
    if ftype in _INT_TYPES:
        if not has:
            return 0
        if isinstance(raw, bool):
            raise ValueError(f"boolean default for {ftype}")
        if isinstance(raw, int):
            return raw
        s = str(raw).strip()
        neg = s.startswith("-")
        body = s[1:] if neg else s
        if body.lower().startswith("0x"):
            val = int(body, 16)
        elif len(body) > 1 and body.startswith("0"):
            val = int(body, 8)
        else:
            val = int(body, 10)
        return -val if neg else val
    if ftype == "bool":
        if not has:
            return False
        if isinstance(raw, bool):
            return raw
        return {"true": True, "false": False}[str(raw).strip()]
    if ftype == "float64":
        return float(raw) if has else 0.0
    if raw is None and has or raw == "null":
        return None
    if not has:
        return "<implicit>"
    return str(raw)


def is_struct_type(ftype: str) -> bool:
    base = ftype[2:] if ftype.startswith("[]") else ftype
    return bool(base) and base[0].isupper()


class Schema:
    def __init__(self, path: Path, renames: dict[str, str] | None = None, retypes: dict[str, str] | None = None):
        self.path = path
        self.data = load_schema(path)
        self.name = self.data.get("name", path.stem)
        self.valid = parse_versions(self.data.get("validVersions"))
        self.flexible = parse_versions(self.data.get("flexibleVersions", "none"))
        self.renames = renames or {}
        self.retypes = retypes or {}
        self.common = {cs["name"]: cs for cs in self.data.get("commonStructs", [])}

    # -- per-version layout -------------------------------------------------------------------

    def field_versions(self, f: dict) -> frozenset[int]:
        return parse_versions(f["versions"] if "versions" in f else f.get("taggedVersions", "none"))

    def nested_fields(self, f: dict):
        if "fields" in f:
            return f["fields"]
        base = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        if is_struct_type(f["type"]) and base in self.common:
            return self.common[base]["fields"]
        if is_struct_type(f["type"]):
            raise AssertionError(f"{self.path}: struct type {base} has no fields and no commonStruct")
        return None

    def layout(self, fields, v: int, path: str = "") -> dict:
        regular, tagged = [], {}
        msg_flexible = v in self.flexible
        for f in fields:
            name = self.renames.get(f"{path}{f['name']}", f["name"])
            if v not in self.field_versions(f):
                continue
            ftype = self.retypes.get(f"{path}{f['name']}", f["type"])
            field_flex = parse_versions(f["flexibleVersions"]) if "flexibleVersions" in f else self.flexible
            sub = self.nested_fields(f)
            entry = {
                "name": name,
                "type": ftype,
                "nullable": v in parse_versions(f.get("nullableVersions")),
                "flexible": msg_flexible and v in field_flex,
                "default": normalize_default(ftype, f),
                "struct": None if sub is None else self.layout(sub, v, f"{path}{f['name']}."),
            }
            if "tag" in f and v in parse_versions(f.get("taggedVersions")):
                if not msg_flexible:
                    raise AssertionError(f"{self.path}: tagged field {name} in non-flexible version {v}")
                entry["tag"] = int(f["tag"])
                tagged[entry["tag"]] = entry
            else:
                regular.append(entry)
        return {"fields": regular, "tagged": tagged}

    def version_layout(self, v: int) -> dict:
        return self.layout(self.data.get("fields", []), v)

    # -- defaults of every field, whatever the version ----------------------------------------

    def all_defaults(self, fields=None, path: str = "", key_path: str = "") -> dict[str, object]:
        """Dotted field path -> default, for every field of every version (struct fields included)."""
        out = {}
        for f in self.data.get("fields", []) if fields is None else fields:
            name = self.renames.get(f"{path}{f['name']}", f["name"])
            out[f"{key_path}{name}"] = normalize_default(self.retypes.get(f"{path}{f['name']}", f["type"]), f)
            sub = self.nested_fields(f)
            if sub is not None:
                out.update(self.all_defaults(sub, f"{path}{f['name']}.", f"{key_path}{name}."))
        return out


def diff_layout(ours: dict, ref: dict, where: str, newer_tags_ok: bool = False) -> list[str]:
    """Differences of two layouts; ``newer_tags_ok``: tagged fields the reference lacks are not
    counted (trunk's additions to a released Kafka's version, which that Kafka skips on read)."""
    if newer_tags_ok:
        ours = {**ours, "tagged": {t: e for t, e in ours["tagged"].items() if t in ref["tagged"]}}
    problems = []
    on = [e["name"] for e in ours["fields"]]
    rn = [e["name"] for e in ref["fields"]]
    if on != rn:
        problems.append(f"{where}: non-tagged fields are {on}, reference has {rn}")
    else:
        for o, r in zip(ours["fields"], ref["fields"]):
            problems += diff_entry(o, r, f"{where}.{o['name']}", newer_tags_ok)
    ot = {t: e["name"] for t, e in ours["tagged"].items()}
    rt = {t: e["name"] for t, e in ref["tagged"].items()}
    if ot != rt:
        problems.append(f"{where}: tagged fields are {ot}, reference has {rt}")
    else:
        for t in sorted(ot):
            problems += diff_entry(ours["tagged"][t], ref["tagged"][t], f"{where}.{ot[t]}(tag {t})", newer_tags_ok)
    return problems


def diff_entry(o: dict, r: dict, where: str, newer_tags_ok: bool = False) -> list[str]:
    problems = []
    for key in ("type", "nullable", "flexible", "default"):
        if o[key] != r[key]:
            problems.append(f"{where}: {key} is {o[key]!r}, reference has {r[key]!r}")
    if (o["struct"] is None) != (r["struct"] is None):
        problems.append(f"{where}: struct-ness differs")
    elif o["struct"] is not None:
        problems += diff_layout(o["struct"], r["struct"], where, newer_tags_ok)
    return problems


# --------------------------------------------------------------------------------------------
# Locating files
# --------------------------------------------------------------------------------------------

def our_schema_files() -> list[Path]:
    if not SCHEMAS.is_dir():
        return []
    return sorted(SCHEMAS.rglob("*.json"))


def find_reference(root: Path, name: str) -> Path | None:
    hits = sorted(root.rglob(f"{name}.json"))
    assert len(hits) <= 1, f"ambiguous reference schema {name}: {hits}"
    return hits[0] if hits else None


def renames_for(schema_name: str, table: dict = RENAMED_SINCE_39) -> dict[str, str]:
    """Map an older reference's dotted paths to the trunk field name, for the given schema."""
    return {path: new for (name, path), new in table.items() if name == schema_name}


def unstable_39_version(old_root: Path, schema_name: str) -> int | None:
    """The latest 3.9 version of an API whose 3.9 request marks it unstable (early access)."""
    api = schema_name.removesuffix("Request").removesuffix("Response")
    request = find_reference(old_root, SCHEMA_RENAMED_FROM.get(api + "Request", api + "Request"))
    if request is None:
        return None
    data = load_schema(request)
    return max(parse_versions(data["validVersions"])) if data.get("latestVersionUnstable") else None


def retypes_for(schema_name: str) -> dict[str, str]:
    return {path: new for (name, path), new in RETYPED_SINCE_39.items() if name == schema_name}


class References:
    """A pair of reference folders: current Kafka's schemas and 3.9's.

    ``exact``: schemas/ was generated from this pair, so our validVersions are exactly the union
    of theirs; a released Kafka's pair only has to be within ours (we also speak newer versions)."""

    def __init__(self, label: str, trunk: Path, old: Path, exact: bool):
        self.label, self.trunk, self.old, self.exact = label, trunk, old, exact


@pytest.fixture(scope="module", params=["kafka-4.3.1-jars", "trunk-record", "shared-trunk"])
def reference(request) -> References:
    if request.param == "trunk-record":         # the jars plus tests/data/kafka-trunk: what schemas/ was made from
        return References("Kafka trunk (jars + record)", *kafka_trunk_record.references("record"), exact=True)
    if request.param == "shared-trunk":
        return References("Kafka trunk", *kafka_trunk_record.references("shared"), exact=True)
    try:
        return References("Kafka 4.3.1", *kafka_schemas.jar_pair(), exact=False)
    except kafka_schemas.SchemasUnavailable as exc:
        unavailable(str(exc))


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------

def test_required_schema_files_present():
    missing = [r for r in REQUIRED if not (SCHEMAS / f"{r}.json").is_file()]
    assert not missing, f"required schema files missing from {SCHEMAS}: {missing}"


def test_every_reference_metadata_record_is_present(reference):
    names = {p.stem for root in (reference.trunk, reference.old) for p in (root / "metadata").glob("*.json")}
    ours = {p.stem for p in (SCHEMAS / "metadata").glob("*.json")}
    assert not names - ours, f"metadata records missing from schemas/metadata: {sorted(names - ours)}"


def test_every_reference_request_and_response_is_present(reference):
    names = _reference_names(reference, "clients", ("request", "response"))
    ours = {p.stem for p in (SCHEMAS / "clients").glob("*.json")}
    assert len(names) >= 180, f"expected every API's request and response, found {len(names)}"
    assert not names - ours, f"requests/responses missing from schemas/clients: {sorted(names - ours)}"


@pytest.mark.parametrize("folder", COORDINATOR_FOLDERS)
def test_every_coordinator_record_is_present(reference, folder):
    names = {p.stem for p in (reference.trunk / folder).glob("*.json")}
    ours = {p.stem for p in (SCHEMAS / "coordinators" / folder).glob("*.json")}
    assert names, f"no reference schemas in {reference.trunk / folder}"
    assert not names - ours, f"records missing from schemas/coordinators/{folder}: {sorted(names - ours)}"


def _ids(paths):
    return [str(p.relative_to(SCHEMAS)) for p in paths]


@pytest.mark.parametrize("path", our_schema_files(), ids=_ids(our_schema_files()))
def test_schema_file_is_ours_and_valid(path: Path):
    text = path.read_text(encoding="utf-8")
    assert text.startswith("//"), f"{path.name}: must start with our own // comment"
    assert "Licensed to the Apache Software Foundation" not in text, f"{path.name}: ASF header copied"
    data = load_schema(path)  # valid JSON once comments are removed: no trailing commas etc.
    for key in ("name", "type", "validVersions", "fields"):
        assert key in data, f"{path.name}: no {key!r}"
    parse_versions(data["validVersions"])


@pytest.mark.parametrize("path", our_schema_files(), ids=_ids(our_schema_files()))
def test_schema_matches_reference(reference, path: Path):
    ours = Schema(path)
    name = path.stem
    refs = []
    trunk_path = find_reference(reference.trunk, name)
    coordinator = "coordinators" in path.relative_to(SCHEMAS).parts
    old_path = None if coordinator else find_reference(reference.old, SCHEMA_RENAMED_FROM.get(name, name))
    if trunk_path and parse_versions(load_schema(trunk_path).get("validVersions")):
        refs.append((reference.label, Schema(trunk_path, {} if reference.exact else renames_for(name, RENAMED_SINCE_431))))
    else:
        trunk_path = None       # absent, or a stub of an API Kafka 4.0 removed ("validVersions": "none")
    if old_path:
        old = Schema(old_path, renames_for(name), retypes_for(name))
        unstable = unstable_39_version(reference.old, name)
        if trunk_path and unstable in refs[0][1].valid:
            old.valid = old.valid - {unstable}      # never shipped: current Kafka's layout counts
        refs.append(("Kafka 3.9", old))
    if not refs and not reference.exact:
        pytest.skip(f"{name} is newer than {reference.label}: compared with trunk's schemas only")
    assert refs, f"{path.name}: no reference schema named {name} under {reference.trunk} or {reference.old}"

    problems = []
    for label, ref in refs:
        for key in ("apiKey", "type", "name"):
            if key == "name" and ref.name != name and SCHEMA_RENAMED_FROM.get(name) == ref.name:
                continue
            if ours.data.get(key) != ref.data.get(key):
                problems.append(f"{key} is {ours.data.get(key)!r}, {label} has {ref.data.get(key)!r}")
        if ours.flexible != ref.flexible:
            problems.append(f"flexibleVersions is {ours.data.get('flexibleVersions')!r}, "
                            f"{label} has {ref.data.get('flexibleVersions')!r}")
    if reference.exact and trunk_path and "latestVersionUnstable" in refs[0][1].data:
        if ours.data.get("latestVersionUnstable") != refs[0][1].data["latestVersionUnstable"]:
            problems.append("latestVersionUnstable differs from Kafka trunk")

    union = frozenset().union(*(ref.valid for _, ref in refs))
    if ours.valid != union if reference.exact else not union <= ours.valid:
        problems.append(f"validVersions is {fmt_versions(ours.valid)}, union of references is {fmt_versions(union)}")

    # Layout differences, grouped so that one wrong field is reported once with its versions.
    by_problem: dict[str, dict[str, set[int]]] = {}
    for label, ref in refs:
        for v in sorted(ref.valid & ours.valid):
            for p in diff_layout(ours.version_layout(v), ref.version_layout(v), name, not reference.exact):
                by_problem.setdefault(p, {}).setdefault(label, set()).add(v)
    for p, where in by_problem.items():
        versions = ", ".join(f"v{fmt_versions(vs)} of {label}" for label, vs in where.items())
        problems.append(f"{p}  [at {versions}]")

    for label, ref in refs:
        our_defaults = ours.all_defaults()
        for key, value in ref.all_defaults().items():
            if key not in our_defaults:
                problems.append(f"field {key} of {label} is missing")
            elif our_defaults[key] != value:
                problems.append(f"default of {key} is {our_defaults[key]!r}, {label} has {value!r}")

    if problems:
        pytest.fail(f"{path.relative_to(SCHEMAS)} differs from the reference:\n  " + "\n  ".join(problems),
                    pytrace=False)
