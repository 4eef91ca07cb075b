"""codegen/union.py: merging Kafka 3.9's and current Kafka's schemas of an API, and the files it wrote."""
from __future__ import annotations

import pytest

from kafkawire.codegen import union
from tests import kafka_schemas, kafka_trunk_record


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


@pytest.mark.parametrize("source", ["record", "shared"])
def test_committed_union_schemas_are_what_the_tool_writes(source):
    """schemas/'s union files are what codegen/union.py writes from Kafka trunk's and 3.9's schemas:
    "record" rebuilds those from Kafka 4.3.1's and 3.9.1's jars and tests/data/kafka-trunk (so a
    fresh clone checks it), "shared" reads ../shared's held-out copies when present."""
    trunk, old = kafka_trunk_record.references(source)
    texts = union.outputs(trunk_root=trunk, old_root=old)
    assert len(texts) >= 190
    stale = sorted(str(p.relative_to(union.SCHEMAS)) for p, t in texts.items()
                   if not p.exists() or p.read_text(encoding="utf-8") != t)
    assert not stale, f"run `python -m kafkawire.codegen.union` and commit: {stale}"


def test_the_record_is_what_the_shared_copies_add_to_the_jars():
    """tests/data/kafka-trunk's diffs, applied to the jars of Kafka 4.3.1 and 3.9.1, give ../shared's
    copies of trunk and the 3.9 branch file for file, and are what the writer makes of them now."""
    shared = kafka_trunk_record.references("shared")
    rebuilt = kafka_trunk_record.references("record")
    for which, copy, built in zip(("trunk", "3.9"), shared, rebuilt):
        ours, theirs = kafka_trunk_record.compared_files(built), kafka_trunk_record.compared_files(copy)
        assert sorted(ours) == sorted(theirs), f"{which}: files differ from {copy}"
        differing = [name for name in ours if ours[name].read_bytes() != theirs[name].read_bytes()]
        assert not differing, f"{which}: rebuilt files differ from {copy}: {differing}"
        version = kafka_trunk_record.DIFFS[which][2]
        assert kafka_trunk_record.make_diff(kafka_schemas.ensure(version), copy) == kafka_trunk_record.diff_text(which)


def test_the_record_applies_strictly(tmp_path):
    """A diff whose removed or context line is not the jar's file is refused, never applied fuzzily."""
    base, out = tmp_path / "jar", tmp_path / "out"
    (base / "clients").mkdir(parents=True)
    (base / "clients" / "A.json").write_text("one\ntwo\nthree", encoding="utf-8")
    (tmp_path / "new" / "clients").mkdir(parents=True)
    (tmp_path / "new" / "clients" / "A.json").write_text("one\n2\nthree", encoding="utf-8")
    (tmp_path / "new" / "clients" / "B.json").write_text("new\n", encoding="utf-8")
    diff = kafka_trunk_record.make_diff(base, tmp_path / "new")
    kafka_trunk_record.apply(diff, base, out)
    assert (out / "clients" / "A.json").read_text(encoding="utf-8") == "one\n2\nthree"
    assert (out / "clients" / "B.json").read_text(encoding="utf-8") == "new\n"
    (base / "clients" / "A.json").write_text("one\nTWO\nthree", encoding="utf-8")
    with pytest.raises(kafka_trunk_record.RecordMismatch, match="clients/A.json: line 2"):
        kafka_trunk_record.apply(diff, base, out)
