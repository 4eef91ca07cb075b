"""Write schemas/ files as the union of Kafka 3.9's and current Kafka's message schemas.

    python -m kafkawire.codegen.union            # write the missing request/response and coordinator schemas
    python -m kafkawire.codegen.union --check    # exit 1 if a file this tool wrote differs from what it writes now
    python -m kafkawire.codegen.union --trunk DIR --old DIR   # other reference folders than ../shared's

The references are ../shared's copies of Kafka trunk's and 3.9's schemas by default; without
../shared, ``python -m tests.kafka_trunk_record`` rebuilds both from Kafka's released jars and
the committed record of what trunk adds (tests/data/kafka-trunk/), and prints their folders.

Kafka 4.0 dropped old versions of many APIs (KIP-896) and whole APIs (the ZooKeeper-era
LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown); old clients still send them, so
our schema of an API accepts every version either release ships. For each API the tool merges
the two reference schemas field by field: a field present in both keeps current Kafka's
definition with its version ranges widened to cover the versions only 3.9 has; a field only
3.9 has (it existed only in dropped versions) is inserted after the field that precedes it in
3.9. A field range that cannot be written as one "N-M" or "N+" range is an error, never a guess.

Coordinator records (__consumer_offsets, __share_group_state, __transaction_state) come from
current Kafka only: Kafka 3.9 declares them as "data" whose version is the record type, which
names the same bytes differently (the key's int16 prefix) and cannot be merged by version.

Files already in schemas/ that this tool did not write (the hand-annotated ones) are left alone.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import dialect
from .union_text import describe

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"
REFERENCE = REPO.parent / "shared" / "reference"
TRUNK = REFERENCE / "kafka-schemas"
KAFKA_39 = REFERENCE / "kafka-schemas-3.9"
MARK = "// Written by codegen/union.py"
MAX_VERSION = 1000       # "N+" is read as N..MAX_VERSION-1, as in tests/test_schemas_match_reference.py

# An API Kafka renamed after 3.9 without changing its key or bytes: trunk name -> 3.9 name.
SCHEMA_RENAMED_SINCE_39 = {
    "ListConfigResourcesRequest": "ListClientMetricsResourcesRequest",
    "ListConfigResourcesResponse": "ListClientMetricsResourcesResponse",
}
# Fields renamed without touching the wire format: (trunk schema, dotted 3.9 path) -> (trunk name, trunk type).
FIELD_RENAMED_SINCE_39 = {
    ("VoteRequest", "Topics.Partitions.CandidateEpoch"): ("ReplicaEpoch", None),
    ("VoteRequest", "Topics.Partitions.CandidateId"): ("ReplicaId", None),
    ("VoteRequest", "Topics.Partitions.CandidateDirectoryId"): ("ReplicaDirectoryId", None),
    ("ListConfigResourcesResponse", "ClientMetricsResources"): ("ConfigResources", "[]ConfigResource"),
    ("ListConfigResourcesResponse", "ClientMetricsResources.Name"): ("ResourceName", None),
    ("TxnOffsetCommitRequest", "GenerationId"): ("GenerationIdOrMemberEpoch", None),
}
_RANGE_KEYS = ("versions", "nullableVersions", "taggedVersions", "flexibleVersions")


class UnionError(ValueError):
    pass


def parse_versions(spec) -> frozenset[int]:
    if spec is None or str(spec).strip() in ("", "none"):
        return frozenset()
    text = str(spec).strip()
    if text.endswith("+"):
        return frozenset(range(int(text[:-1]), MAX_VERSION))
    low, _, high = text.partition("-")
    return frozenset(range(int(low), int(high or low) + 1))


def range_text(present: frozenset[int], universe: frozenset[int], open_end: bool) -> str:
    """One Kafka version range R with R & universe == present (open-ended if the reference was)."""
    if not present:
        return "none"
    low, high = min(present), max(present)
    if any(v not in present for v in universe if low <= v <= high):
        raise UnionError(f"versions {sorted(present)} are not one range within {sorted(universe)}")
    if open_end and high == max(universe):
        return f"{low}+"
    return str(low) if low == high else f"{low}-{high}"


def shipped_39_versions(old: dict | None, trunk_versions: frozenset[int], unstable: int | None) -> frozenset[int]:
    versions = parse_versions(old["validVersions"]) if old else frozenset()
    return versions - {unstable} if unstable in trunk_versions else versions


def unstable_39_version(old_root: Path, schema_name: str) -> int | None:
    """The latest 3.9 version of an API whose 3.9 request marks it unstable (the response follows)."""
    api = schema_name.removesuffix("Request").removesuffix("Response")
    path = old_root / "clients" / f"{SCHEMA_RENAMED_SINCE_39.get(api + 'Request', api + 'Request')}.json"
    if not path.is_file():
        return None
    request = dialect.load(path)
    return max(parse_versions(request["validVersions"])) if request.get("latestVersionUnstable") else None


class Merger:
    """Merges one API's (or record's) trunk schema with its 3.9 schema."""

    def __init__(self, name: str, trunk: dict | None, old: dict | None, old_unstable: int | None = None):
        self.name = name
        self.trunk, self.old = trunk, old
        self.vt = parse_versions(trunk["validVersions"]) if trunk else frozenset()
        # A version 3.9 marked unstable (early-access share groups) was never shipped: where
        # current Kafka defines the same version, its layout is the one that counts.
        self.vo = shipped_39_versions(old, self.vt, old_unstable)
        self.universe = self.vt | self.vo

    def renamed(self, path: str, field: dict) -> dict:
        new = FIELD_RENAMED_SINCE_39.get((self.name, path))
        if new is None:
            return field
        name, ftype = new
        return {**field, "name": name, "type": ftype or field["type"], "_old_name": field["name"]}

    def merge_ranges(self, t: dict | None, o: dict | None, key: str) -> str | None:
        spec_t = t.get(key) if t else None
        spec_o = o.get(key) if o else None
        if spec_t is None and spec_o is None:
            return None
        present = (parse_versions(spec_t) & self.vt) | (parse_versions(spec_o) & self.vo)
        open_end = str(spec_t or spec_o).strip().endswith("+")
        try:
            return range_text(present, self.universe, open_end)
        except UnionError as exc:
            raise UnionError(f"{self.name}: field {(t or o)['name']} {key}: {exc}") from None

    def merge_field(self, t: dict | None, o: dict | None, path: str, old_path: str) -> dict:
        base = dict(t if t is not None else o)
        base.pop("_old_name", None)
        if t is not None and o is not None and t["type"] != o["type"]:
            raise UnionError(f"{self.name}: field {path}{t['name']} is {t['type']} in trunk, {o['type']} in 3.9")
        for key in _RANGE_KEYS:
            merged = self.merge_ranges(t, o, key)
            if merged is not None:
                base[key] = merged
        if "fields" in base:
            old_name = (o or {}).get("_old_name", base["name"])
            base["fields"] = self.merge_fields((t or {}).get("fields"), (o or {}).get("fields"),
                                               f"{path}{base['name']}.", f"{old_path}{old_name}.")
        return base

    def merge_fields(self, t_fields, o_fields, path: str, old_path: str | None = None) -> list[dict]:
        """Trunk's order, with each 3.9-only field placed after its 3.9 predecessor."""
        old_path = path if old_path is None else old_path
        t_fields = list(t_fields or [])
        o_fields = [self.renamed(f"{old_path}{f['name']}", f) for f in (o_fields or [])]
        t_by_name = {f["name"]: f for f in t_fields}
        o_by_name = {f["name"]: f for f in o_fields}
        order = [f["name"] for f in t_fields]
        previous = None
        for f in o_fields:
            if f["name"] not in t_by_name:
                order.insert(0 if previous is None else order.index(previous) + 1, f["name"])
            previous = f["name"]
        merged = []
        for name in order:
            t, o = t_by_name.get(name), o_by_name.get(name)
            merged.append(self.merge_field(t, o, path, old_path))
        return merged

    def merge_common_structs(self) -> list[dict]:
        t_structs = {s["name"]: s for s in (self.trunk or {}).get("commonStructs", [])}
        o_structs = {s["name"]: s for s in (self.old or {}).get("commonStructs", [])}
        names = list(t_structs) + [n for n in o_structs if n not in t_structs]
        out = []
        for name in names:
            t, o = t_structs.get(name), o_structs.get(name)
            struct = dict(t or o)
            versions = self.merge_ranges(t, o, "versions")
            if versions is not None:
                struct["versions"] = versions
            struct["fields"] = self.merge_fields((t or {}).get("fields"), (o or {}).get("fields"), f"{name}.")
            out.append(struct)
        return out

    def merge(self) -> dict:
        primary = self.trunk or self.old
        flexible = {parse_versions(s.get("flexibleVersions")) for s in (self.trunk, self.old) if s}
        if len(flexible) != 1:
            raise UnionError(f"{self.name}: flexibleVersions differ between Kafka 3.9 and trunk")
        out = {"apiKey": primary.get("apiKey"), "type": primary["type"],
               "listeners": (self.trunk or {}).get("listeners") or (self.old or {}).get("listeners"),
               "name": self.name,
               "validVersions": range_text(self.universe, self.universe, False)}
        deprecated = frozenset().union(*(parse_versions(s.get("deprecatedVersions")) & self.universe
                                         for s in (self.trunk, self.old) if s))
        if deprecated:
            out["deprecatedVersions"] = range_text(deprecated, self.universe, False)
        if "flexibleVersions" in primary:
            out["flexibleVersions"] = primary["flexibleVersions"]
        if self.trunk and "latestVersionUnstable" in self.trunk:
            out["latestVersionUnstable"] = self.trunk["latestVersionUnstable"]
        out["fields"] = self.merge_fields(self.trunk and self.trunk.get("fields"),
                                          self.old and self.old.get("fields"), "")
        if (self.trunk or {}).get("commonStructs") or (self.old or {}).get("commonStructs"):
            out["commonStructs"] = self.merge_common_structs()
        return {k: v for k, v in out.items() if v is not None}


# ---------------------------------------------------------------------------------------------
# Text of a schema file
# ---------------------------------------------------------------------------------------------

def _field_text(field: dict, indent: str) -> list[str]:
    plain = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in field.items() if k != "fields")
    if "fields" not in field:
        return [f"{indent}{{ {plain} }}"]
    lines = [indent + "{ " + plain + ', "fields": [']
    lines += _fields_text(field["fields"], indent + "  ")
    lines.append(f"{indent}]}}")
    return lines


def _fields_text(fields: list[dict], indent: str) -> list[str]:
    lines = []
    for i, field in enumerate(fields):
        block = _field_text(field, indent)
        if i < len(fields) - 1:
            block[-1] += ","
        lines += block
    return lines


def schema_text(schema: dict, header: list[str]) -> str:
    lines = [f"// {line}" if line else "//" for line in header] + [MARK + ": do not edit by hand.", "{"]
    top = [(k, v) for k, v in schema.items() if k not in ("fields", "commonStructs")]
    for key, value in top:
        lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
    lines.append('  "fields": [')
    lines += _fields_text(schema["fields"], "    ")
    if "commonStructs" in schema:
        lines.append("  ],")
        lines.append('  "commonStructs": [')
        lines += _fields_text(schema["commonStructs"], "    ")
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def version_history(trunk: dict | None, old: dict | None, old_unstable: int | None = None) -> str:
    vt = parse_versions(trunk["validVersions"]) if trunk else frozenset()
    vo = shipped_39_versions(old, vt, old_unstable)
    label = {(True, False): "as in Kafka 3.9 (dropped by Kafka 4.0)", (True, True): "as in Kafka 3.9 and 4.x",
             (False, True): "as in Kafka 4.x"}
    runs: list[list] = []
    for v in sorted(vt | vo):
        where = (v in vo, v in vt)
        if runs and runs[-1][1] == where and runs[-1][0][-1] == v - 1:
            runs[-1][0].append(v)
        else:
            runs.append([[v], where])
    parts = [f"{vs[0] if len(vs) == 1 else f'{vs[0]}-{vs[-1]}'} {label[where]}" for vs, where in runs]
    text = "Versions: " + "; ".join(parts) + "."
    if trunk and trunk.get("latestVersionUnstable"):
        text += f" v{max(vt)} is unstable in current Kafka (latestVersionUnstable)."
    return text


# ---------------------------------------------------------------------------------------------
# What to write
# ---------------------------------------------------------------------------------------------

def _by_name(root: Path, folders: list[str]) -> dict[str, Path]:
    return {p.stem: p for folder in folders for p in sorted((root / folder).glob("*.json"))}


def planned(trunk_root: Path = TRUNK, old_root: Path = KAFKA_39) -> dict[str, tuple[str, dict | None, dict | None]]:
    """Our file (relative to schemas/) -> (schema name, trunk schema, 3.9 schema)."""
    plan = {}
    trunk_clients = _by_name(trunk_root, ["clients"])
    old_clients = _by_name(old_root, ["clients"])
    renamed_old = set(SCHEMA_RENAMED_SINCE_39.values())
    for name in sorted(set(trunk_clients) | set(old_clients)):
        if name in renamed_old:
            continue
        trunk = dialect.load(trunk_clients[name]) if name in trunk_clients else None
        if trunk is not None and not parse_versions(trunk.get("validVersions")):
            trunk = None        # a stub: Kafka 4.0 removed the API and keeps only its name
        old_name = SCHEMA_RENAMED_SINCE_39.get(name, name)
        old = dialect.load(old_clients[old_name]) if old_name in old_clients else None
        if (trunk or old)["type"] in ("request", "response"):
            plan[f"clients/{name}.json"] = (name, trunk, old, unstable_39_version(old_root, name))
    for folder in ("group-coordinator", "share-coordinator", "transaction-coordinator"):
        for name, path in _by_name(trunk_root, [folder]).items():
            plan[f"coordinators/{folder}/{name}.json"] = (name, dialect.load(path), None, None)
    return plan


def written_by_us(path: Path) -> bool:
    return path.is_file() and MARK in path.read_text(encoding="utf-8")


def outputs(schemas: Path = SCHEMAS, trunk_root: Path = TRUNK, old_root: Path = KAFKA_39) -> dict[Path, str]:
    """Every file the tool owns (new, or written by it before) -> its text."""
    texts = {}
    for relative, (name, trunk, old, old_unstable) in planned(trunk_root, old_root).items():
        target = schemas / relative
        if target.exists() and not written_by_us(target):
            continue        # hand-written and annotated: ours to keep
        merged = Merger(name, trunk, old, old_unstable).merge()
        folder = Path(relative).parent.name if relative.startswith("coordinators/") else None
        header = [describe(merged, folder), version_history(trunk, old, old_unstable)]
        if old_unstable is not None and old_unstable in parse_versions(merged["validVersions"]):
            header.append(f"Kafka 3.9's v{old_unstable} was unstable (early access); current Kafka's v{old_unstable} is the one here.")
        if old is not None and old["name"] != name:
            header.append(f"Kafka 3.9 names it {old['name']}; the bytes are the same.")
        texts[target] = schema_text(merged, header)
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkawire.codegen.union", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if a file would change")
    parser.add_argument("--trunk", type=Path, default=TRUNK, help="current Kafka's schema folder (default: %(default)s)")
    parser.add_argument("--old", type=Path, default=KAFKA_39, help="Kafka 3.9's schema folder (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        texts = outputs(trunk_root=args.trunk, old_root=args.old)
    except UnionError as exc:
        print(f"kafkawire.codegen.union: {exc}", file=sys.stderr)
        return 2
    stale = [p for p, text in texts.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"would change: {path.relative_to(SCHEMAS)}")
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(texts[path], encoding="utf-8")
    print(f"{len(texts)} union schemas, {len(stale)} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
