"""The generator refuses what Apache Kafka's generator refuses, naming file, message and field."""
from __future__ import annotations

import json

import pytest

from kafkawire.codegen.model import SchemaError, parse_message
from kafkawire.codegen.dialect import strip_comments


def message(fields, **top):
    base = {"apiKey": 99, "type": "request", "name": "TestRequest", "validVersions": "0-3", "flexibleVersions": "2+",
            "fields": fields}
    base.update(top)
    return base


def field(**kw):
    base = {"name": "Foo", "type": "int32", "versions": "0+"}
    base.update(kw)
    return base


BAD = [
    ("duplicate tags", message([field(name="A", taggedVersions="2+", tag=0, versions="2+"),
                                field(name="B", taggedVersions="2+", tag=0, versions="2+")]), "B", "tag 0 is used by both"),
    ("gapped tags", message([field(name="A", taggedVersions="2+", tag=0, versions="2+"),
                             field(name="B", taggedVersions="2+", tag=2, versions="2+")]), None, "tag 1 is missing"),
    ("tagged outside flexible", message([field(taggedVersions="1+", tag=0, versions="1+")]), "Foo", "flexible"),
    ("closed flexibleVersions", message([field()], flexibleVersions="2-3"), None, "open-ended"),
    ("closed taggedVersions", message([field(taggedVersions="2-3", tag=0, versions="2+")]), "Foo", "open-ended"),
    ("nullable uuid", message([field(type="uuid", nullableVersions="0+")]), "Foo", "can never be null"),
    ("nullable int", message([field(nullableVersions="0+")]), "Foo", "can never be null"),
    ("null default on non-nullable", message([field(type="string", default="null")]), "Foo", "not all versions of this field are nullable"),
    ("null default partly nullable", message([field(type="string", default="null", nullableVersions="1+")]), "Foo", "not all versions"),
    ("versions outside validVersions", message([field(versions="5+")]), "Foo", "outside the message's validVersions"),
    ("unknown type", message([field(type="int128")]), "Foo", "unknown type 'int128'"),
    ("unknown key", message([field(nulableVersions="0+")]), "Foo", "unknown key"),
    ("tag without taggedVersions", message([field(tag=0)]), "Foo", "needs taggedVersions"),
    ("taggedVersions without tag", message([field(taggedVersions="2+")]), "Foo", "has no tag"),
    ("tagged not subset of versions", message([field(taggedVersions="2+", tag=0, versions="3+")]), "Foo", "subset of versions"),
    ("default out of range", message([field(type="int8", default="300")]), "Foo", "does not fit"),
    ("bad bool default", message([field(type="bool", default="yes")]), "Foo", "invalid default"),
    ("array default", message([field(type="[]int32", default="5")]), "Foo", "only default to null or empty"),
    ("bad field name", message([field(name="foo-bar")]), "foo-bar", "must match"),
    ("no versions", message([{"name": "Foo", "type": "int32"}]), "Foo", "needs versions"),
    ("duplicate field", message([field(), field()]), "Foo", "duplicate field name"),
    ("zeroCopy on string", message([field(type="string", zeroCopy=True)]), "Foo", "zeroCopy"),
    ("flexibleVersions override on int", message([field(flexibleVersions="none")]), "Foo", "override flexibleVersions"),
    ("entityType mismatch", message([field(entityType="topicName")]), "Foo", "entityType topicName needs type string"),
    ("struct without fields", message([field(type="Missing")]), "Foo", "not a common struct"),
    ("common struct inline", message([field(type="Common", fields=[field(name="X")])],
                                     commonStructs=[{"name": "Common", "versions": "0+", "fields": [field(name="X")]}]),
     "Foo", "cannot be re-specified inline"),
    ("struct name reused", message([field(name="A", type="S", fields=[field(name="X")]),
                                    field(name="B", type="S", fields=[field(name="Y")])]), "B", "used twice"),
    ("tagged mapKey", message([field(taggedVersions="2+", tag=0, mapKey=True, versions="2+")]), "Foo", "mapKey"),
    ("partly nullable tagged", message([field(type="string", taggedVersions="2+", tag=0, versions="2+", nullableVersions="3+")]),
     "Foo", "nullable in all of its taggedVersions"),
    ("unstable response", message([field()], type="response", latestVersionUnstable=True), None, "only allowed on requests"),
    ("unknown message type", message([field()], type="thing"), None, "unknown message type"),
    ("missing flexibleVersions", {k: v for k, v in message([field()]).items() if k != "flexibleVersions"}, None,
     "flexibleVersions is required"),
    ("bad uuid default", message([field(type="uuid", default="abc")]), "Foo", "22-character"),
]


@pytest.mark.parametrize("raw,field_name,rule", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_schema_is_refused(tmp_path, raw, field_name, rule):
    path = tmp_path / "TestRequest.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(SchemaError) as info:
        parse_message(path)
    error = info.value
    assert rule in str(error)
    assert str(path) in str(error)
    assert error.message == raw.get("name")
    if field_name is not None:
        assert error.field_path == field_name, str(error)


def test_cli_reports_bad_schema_without_traceback(tmp_path, capsys):
    from kafkawire.codegen.cli import main
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "TestRequest.json").write_text(json.dumps(BAD[0][1]))
    assert main([str(tmp_path / "in"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "TestRequest.json" in err and "field B" in err and "tag 0 is used by both" in err


def test_dialect_accepts_kafka_spellings(tmp_path):
    text = """// a comment
    { "apiKey": 99, "type": "request", "name": "TestRequest",
      /* a block
         comment */
      "validVersions": "0-3", "flexibleVersions": "2+",
      "fields": [
        { "name": "Url", "type": "string", "versions": "0+", "about": "see http://x//y /* not a comment */" },
        { "name": "Big", "type": "int32", "versions": "0+", "default": "0x7fffffff" },
        { "name": "Neg", "type": "int64", "versions": "0+", "default": "-1" },
        { "name": "Flag", "type": "bool", "versions": "0+", "default": "TRUE" },
        { "name": "Tagged", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": "0" }
      ] }"""
    path = tmp_path / "TestRequest.json"
    path.write_text(text)
    spec = parse_message(path)
    by_name = {f.name: f for f in spec.fields}
    assert by_name["Url"].about == "see http://x//y /* not a comment */"
    assert by_name["Big"].default == 0x7FFFFFFF
    assert by_name["Neg"].default == -1
    assert by_name["Flag"].default is True
    assert by_name["Tagged"].tag == 0
    assert "http://x//y" in strip_comments(text)


def test_removed_api_stub_is_accepted(tmp_path):
    path = tmp_path / "StopReplicaRequest.json"
    path.write_text('{"apiKey": 5, "type": "request", "name": "StopReplicaRequest", "validVersions": "none"}')
    spec = parse_message(path)
    assert spec.valid_versions.empty and spec.fields == []
