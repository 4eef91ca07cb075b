"""Every schema Apache Kafka ships generates, imports and round-trips in every version: those inside
the jars of Kafka 4.3.1 and 3.9.1 (tests/kafka_schemas.py, from Maven at test time), and Kafka
trunk's and the 3.9 branch's: ../shared's copies when present, else rebuilt from those jars and
tests/data/kafka-trunk (tests/kafka_trunk_record.py)."""
from __future__ import annotations

import hashlib
import importlib
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkawire.codegen.generate import write_package
from tests import kafka_schemas, kafka_trunk_record
from tests.conftest import REFERENCE, require, unavailable
from tests.codec.strategies import instances, without_unknown_tags

def _roots() -> tuple[dict[str, Path], str | None]:
    """Package name -> its folder of Kafka schemas; and why the jars' schemas are missing, if they are.
    Trunk's and the 3.9 branch's are ../shared's copies when present, else rebuilt from the jars
    and tests/data/kafka-trunk (the same files: tests/codec/test_union.py checks it)."""
    shared = {"kafka_trunk": REFERENCE / "kafka-schemas", "kafka_39": REFERENCE / "kafka-schemas-3.9"}
    shared = {package: root for package, root in shared.items() if root.is_dir()}
    try:
        current, old = kafka_schemas.jar_pair()
        rebuilt = dict(zip(("kafka_trunk", "kafka_39"), kafka_trunk_record.record_pair()))
    except kafka_schemas.SchemasUnavailable as exc:
        return shared, str(exc)
    return {"kafka_431": current, "kafka_391": old, **rebuilt, **shared}, None


ROOTS, JARS_MISSING = _roots()


def _schema_files(root):
    return sorted(root.rglob("*.json"))


@pytest.fixture
def jars_present():
    if JARS_MISSING:
        unavailable(JARS_MISSING)


@pytest.fixture(scope="session")
def reference_packages(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference_codecs")
    packages = {}
    for package, root in ROOTS.items():
        # Every module folder of the reference, generated together as one package.
        dirs = sorted(p for p in root.iterdir() if p.is_dir())
        write_package(dirs, out / package)
        packages[package] = package
    sys.path.insert(0, str(out))
    yield {p: importlib.import_module(p) for p in packages}
    sys.path.remove(str(out))


ALL_FILES = [(package, path) for package, root in ROOTS.items() for path in _schema_files(root)]


def _distinct(files):
    """Each schema text once, under the first package that has it: a file byte-identical to one
    already listed generates the same codec (a Kafka schema file is self-contained), and about half
    of ../shared's trunk and 3.9 copies are identical to the jars' 4.3.1 and 3.9.1 files."""
    seen: set[str] = set()
    for package, path in files:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            yield package, path


CASES = list(_distinct(ALL_FILES))
IDS = [f"{p}/{f.parent.name}/{f.stem}" for p, f in CASES]


def test_kafka_jars_schemas_present(jars_present):
    jar_cases = [path for package, path in ALL_FILES if package in ("kafka_431", "kafka_391")]
    assert len(jar_cases) > 500, f"expected every schema of Kafka 4.3.1's and 3.9.1's jars, found {len(jar_cases)}"


def test_shared_reference_schemas_present():
    require(REFERENCE / "kafka-schemas")
    shared = [path for package, path in ALL_FILES if package in ("kafka_trunk", "kafka_39")]
    assert len(shared) > 500, f"expected the whole reference set, found {len(shared)} schema files"


@pytest.mark.parametrize("package,path", CASES, ids=IDS)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_round_trip_every_version(reference_packages, package, path, data):
    from kafkawire.codegen import dialect
    name = dialect.load(Path(path))["name"]
    cls = reference_packages[package].by_name(name)
    for version in cls.versions():
        message = data.draw(instances(cls, version), label=f"{name} v{version}")
        encoded = message.encode(version)
        decoded = cls.decode(encoded, version)
        assert decoded == message, f"{name} v{version} did not round-trip"
        assert decoded.encode(version) == encoded
        # Kafka's JsonConverter leaves unknown tagged fields out, so JSON is checked as a fixed point.
        plain = without_unknown_tags(message)
        assert cls.from_json(plain.to_json(version), version) == plain


def test_cli_generates_from_kafkas_own_folder(tmp_path, jars_present):
    from kafkawire.tools.cli import main
    clients = ROOTS["kafka_431"] / "clients"
    assert main(["codegen", str(clients), "--out", str(tmp_path / "kafka_clients")]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        package = importlib.import_module("kafka_clients")
        vote = package.by_api_key(52, "request")
        assert vote.NAME == "VoteRequest" and vote.decode(vote().encode(2), 2) == vote()
    finally:
        sys.path.remove(str(tmp_path))


# Our own package: every schema in schemas/ (the union of both references), in every version.
def _our_messages():
    from kafkawire import messages
    return sorted(name for name, _, _, _ in messages.REGISTRY.index)


@pytest.mark.parametrize("name", _our_messages())
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_our_messages_round_trip_every_version(name, data):
    from kafkawire import messages
    cls = messages.by_name(name)
    for version in cls.versions():
        message = data.draw(instances(cls, version), label=f"{name} v{version}")
        encoded = message.encode(version)
        decoded = cls.decode(encoded, version)
        assert decoded == message, f"{name} v{version} did not round-trip"
        assert decoded.encode(version) == encoded
        plain = without_unknown_tags(message)
        assert cls.from_json(plain.to_json(version), version) == plain


def test_every_api_key_of_both_references_is_in_our_table():
    from kafkawire.protocol.apis import api_table
    keys = set()
    if not ROOTS:
        unavailable(JARS_MISSING)
    for root in ROOTS.values():
        for path in (root / "clients").glob("*Request.json"):
            from kafkawire.codegen import dialect
            schema = dialect.load(path)
            if schema.get("type") == "request" and schema.get("validVersions") != "none":
                keys.add(schema["apiKey"])
    table = api_table()
    assert len(keys) >= 90 and not keys - set(table), f"API keys missing from the table: {sorted(keys - set(table))}"
