"""Apache Kafka's message JSON schemas, read out of Kafka's own jars from Maven Central.

    python -m tests.kafka_schemas          # materialise both versions (idempotent) and print their folders

The schema tests compare ours with Kafka's and round-trip every schema Kafka ships. Their
references are the schemas inside the released jars of Kafka 4.3.1 (the version kafkawire
behaves as) and of Kafka 3.9.1 (the last line with the protocol versions and ZooKeeper-era
APIs Kafka 4.0 dropped). ``tests/interop/kafka_schemas/pom.xml`` names the jars that carry them;
``mvn dependency:copy-dependencies`` brings them into the git-ignored ``.kafka-dist/``, and every
``*.json`` in them is written to ``.kafka-dist/schemas/<version>/<module>/``, one folder per Kafka
source module (clients, metadata, raft, group-coordinator, ...), with ``errors.tsv`` (Kafka's
Errors table: code, name, retriable, exception class, default message; printed by
``tests/interop/java/errors/ErrorsTable.java`` run against that kafka-clients), the layout of the copies in
``../shared/reference`` (kafka-schemas = trunk, kafka-schemas-3.9). Trunk's and the 3.9 branch's
schemas are rebuilt from these jars by tests/kafka_trunk_record.py; ../shared's copies, when
present, are held-out extras. A stamp holds the pom's sha256, so a warm cache costs one file
read. Java 17 and Maven are needed; without them a test that needs the jars calls
``tests.conftest.unavailable`` (a skip, a failure under CI).
"""
from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REFERENCE
from tests.interop import kafka_dist

POM = Path(__file__).resolve().parent / "interop" / "kafka_schemas" / "pom.xml"
ERRORS_TABLE = POM.parents[1] / "java" / "errors" / "ErrorsTable.java"
CURRENT, OLD = "4.3.1", "3.9.1"

# The Kafka source module each jar was built from: its folder in the reference layout.
MODULE_OF_ARTIFACT = {
    "kafka-clients": "clients", "kafka-metadata": "metadata", "kafka-raft": "raft",
    "kafka-group-coordinator": "group-coordinator", "kafka-share-coordinator": "share-coordinator",
    "kafka-transaction-coordinator": "transaction-coordinator", "kafka-storage": "storage",
    "kafka-streams": "streams",
}


class SchemasUnavailable(RuntimeError):
    """Java or Maven is missing, or Maven could not bring the jars."""


def schema_dir(version: str) -> Path:
    return kafka_dist.cache_dir() / "schemas" / version


def _stamp(version: str) -> str:
    return hashlib.sha256(POM.read_bytes() + ERRORS_TABLE.read_bytes() + version.encode()).hexdigest()


def _copy_jars(version: str, jars: Path) -> None:
    missing = kafka_dist.missing_tools()
    if missing:
        raise SchemasUnavailable(f"Kafka {version}'s schemas need {' and '.join(missing)} on PATH "
                                 f"(Maven brings Kafka's jars from Maven Central)")
    command = ["mvn", "-B", "-q", "-f", str(POM), "dependency:copy-dependencies", f"-Dkafka.version={version}",
               "-DexcludeTransitive=true", f"-DoutputDirectory={jars}"]
    if int(version.split(".")[0]) >= 4:
        command.append("-Dshare")
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as exc:
        raise SchemasUnavailable(f"mvn did not bring Kafka {version}'s jars within 600 s") from exc
    if result.returncode != 0:
        raise SchemasUnavailable(f"mvn dependency:copy-dependencies for Kafka {version} failed "
                                 f"({result.returncode}):\n{(result.stdout + result.stderr)[-3000:]}")


def _extract(version: str, jars: Path, out: Path) -> None:
    for artifact, module in MODULE_OF_ARTIFACT.items():
        jar = jars / f"{artifact}-{version}.jar"
        if not jar.exists():
            continue
        with zipfile.ZipFile(jar) as archive:
            for entry in archive.namelist():
                if entry.endswith(".json") and "/" in entry and entry.split("/")[-2] in ("message", "metadata"):
                    target = out / module / entry.rsplit("/", 1)[1]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(archive.read(entry))


def _errors_table(jars: Path, out: Path) -> None:
    """errors.tsv: Kafka's Errors enum as the kafka-clients jar in ``jars`` defines it."""
    command = ["java", "-Xmx64m", "-XX:TieredStopAtLevel=1", "-cp", str(jars / "*"), str(ERRORS_TABLE)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise SchemasUnavailable("ErrorsTable.java did not finish within 120 s") from exc
    if result.returncode != 0 or not result.stdout.startswith("code\t"):
        raise SchemasUnavailable(f"ErrorsTable.java failed ({result.returncode}):\n{result.stderr[-3000:]}")
    (out / "errors.tsv").write_text(result.stdout, encoding="utf-8")


def ensure(version: str) -> Path:
    """Kafka ``version``'s schemas, one folder per module; fetched and extracted unless warm."""
    out = schema_dir(version)

    def build() -> None:
        if out.exists():
            shutil.rmtree(out)
        jars = out.parent / f"jars-{version}"
        if jars.exists():
            shutil.rmtree(jars)
        _copy_jars(version, jars)
        _extract(version, jars, out)
        _errors_table(jars, out)
        if not any(out.glob("clients/*Request.json")):
            raise SchemasUnavailable(f"no common/message/*Request.json in kafka-clients-{version}.jar")
    return stamped_folder(out, _stamp(version), build)


def stamped_folder(out: Path, stamp: str, build) -> Path:
    """``out``, made by ``build()`` unless its ``stamp`` file already says ``stamp``. Several test
    processes (pytest-xdist's workers, two runs side by side) may find it missing at once: one
    builds it under a lock, and the others wait and find it built."""
    def built() -> bool:
        return (out / "stamp").is_file() and (out / "stamp").read_text().strip() == stamp
    if built():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built():
            build()
            (out / "stamp").write_text(stamp + "\n")
    return out


def errors_tables() -> dict[str, Path]:
    """Kafka's errors.tsv by source: Kafka 4.3.1's jar, when Maven can bring it (trunk's is
    tests/kafka_trunk_record.py's)."""
    try:
        return {"Kafka 4.3.1": ensure(CURRENT) / "errors.tsv"}
    except SchemasUnavailable:
        return {}


def jar_pair() -> tuple[Path, Path]:
    """(Kafka 4.3.1's schemas, Kafka 3.9.1's schemas) from the jars; SchemasUnavailable without Maven."""
    return ensure(CURRENT), ensure(OLD)


def shared_pair() -> tuple[Path, Path] | None:
    """(trunk's schemas, 3.9's schemas) from ../shared/reference, when that is present."""
    trunk, old = REFERENCE / "kafka-schemas", REFERENCE / "kafka-schemas-3.9"
    return (trunk, old) if trunk.is_dir() and old.is_dir() else None


def why() -> str:
    try:
        jar_pair()
    except SchemasUnavailable as exc:
        return f"Kafka's schemas are not available: {exc}"
    return "Kafka's schemas are available"


def main() -> int:
    try:
        for folder in jar_pair():
            print(folder)
    except SchemasUnavailable as exc:
        print(f"kafka_schemas: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
