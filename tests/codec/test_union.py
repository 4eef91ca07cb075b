"""codegen/union.py: merging Kafka 3.9's and current Kafka's schemas of an API, and the files it wrote."""
from __future__ import annotations

import pytest

from kafkawire.codegen import union
from tests.conftest import REFERENCE, require


def _field(name, versions, **extra):
    return {"name": name, "type": "int32", "versions": versions, **extra}


def _schema(valid, fields, flexible="none", **extra):
    return {"apiKey": 99, "type": "request", "name": "TestRequest", "validVersions": valid,
            "flexibleVersions": flexible, "fields": fields, **extra}


def test_versions_are_the_union_and_a_dropped_only_field_keeps_its_place():
    old = _schema("0-5", [_field("A", "0+"), _field("Gone", "0-1"), _field("B", "0+")])
    trunk = _schema("2-7", [_field("A", "0+"), _field("B", "0+"), _field("C", "6+")])
    merged = union.Merger("TestRequest", trunk, old).merge()
    assert merged["validVersions"] == "0-7"
    assert [(f["name"], f["versions"]) for f in merged["fields"]] == [
        ("A", "0+"), ("Gone", "0-1"), ("B", "0+"), ("C", "6+")]


def test_a_field_trunk_narrowed_is_widened_to_the_3_9_versions():
    old = _schema("0-4", [_field("X", "0-4")])
    trunk = _schema("3-9", [_field("X", "3-9")])
    assert union.Merger("TestRequest", trunk, old).merge()["fields"][0]["versions"] == "0-9"


def test_a_range_that_is_not_one_range_is_refused_naming_the_field():
    old = _schema("0-4", [_field("X", "0-1")])
    trunk = _schema("3-9", [_field("X", "3+")])
    with pytest.raises(union.UnionError, match="TestRequest: field X versions"):
        union.Merger("TestRequest", trunk, old).merge()


def test_different_flexible_versions_are_refused():
    with pytest.raises(union.UnionError, match="flexibleVersions differ"):
        union.Merger("TestRequest", _schema("0-3", [], "3+"), _schema("0-3", [], "2+")).merge()


def test_an_unstable_3_9_version_gives_way_to_current_kafka():
    old = _schema("0", [_field("A", "0+"), _field("B", "0+")])
    trunk = _schema("0-1", [_field("A", "0+"), _field("New", "0+"), _field("B", "0+")])
    merged = union.Merger("TestRequest", trunk, old, old_unstable=0).merge()
    assert [f["name"] for f in merged["fields"]] == ["A", "New", "B"]


def test_written_text_is_kafka_dialect_with_our_header():
    from kafkawire.codegen import dialect
    merged = union.Merger("TestRequest", _schema("0-1", [_field("A", "0+")]), None).merge()
    text = union.schema_text(merged, ["Test request.", "Versions: 0-1."])
    assert text.startswith("// Test request.\n// Versions: 0-1.\n" + union.MARK)
    assert dialect.json.loads(dialect.strip_comments(text)) == merged


def test_committed_union_schemas_are_what_the_tool_writes():
    require(REFERENCE / "kafka-schemas")
    texts = union.outputs()
    assert len(texts) >= 190
    stale = sorted(str(p.relative_to(union.SCHEMAS)) for p, t in texts.items()
                   if not p.exists() or p.read_text(encoding="utf-8") != t)
    assert not stale, f"run `python -m kafkawire.codegen.union` and commit: {stale}"
