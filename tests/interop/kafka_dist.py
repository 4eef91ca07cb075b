"""Apache Kafka 4.3.1 from Maven Central, as a distribution's libs/ folder, for the tests.

    python -m tests.interop.kafka_dist          # materialise (idempotent) and print the classpath

``tests/interop/kafka/pom.xml`` names what a Kafka distribution's ``libs/`` holds for our
purposes; ``mvn dependency:copy-dependencies`` copies it into a git-ignored cache folder
(``.kafka-dist/`` beside the repo's README, or ``$KAFKAWIRE_KAFKA_DIST``). A stamp file holds the
pom's sha256, so a warm cache costs one file read. Without Java or Maven the tests that need
Kafka skip, saying why, except under CI (``CI=true``), where that is an error.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

KAFKA_VERSION = "4.3.1"
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
POM = HERE / "kafka" / "pom.xml"
LOG4J_SERVER = HERE / "kafka" / "log4j2-server.properties"
LOG4J_TOOLS = HERE / "kafka" / "log4j2-tools.properties"


class KafkaDistUnavailable(RuntimeError):
    """Java or Maven is missing, or Maven could not bring the jars."""


def cache_dir() -> Path:
    return Path(os.environ.get("KAFKAWIRE_KAFKA_DIST") or REPO / ".kafka-dist")


def libs_dir() -> Path:
    return cache_dir() / "libs"


def _pom_stamp() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def missing_tools() -> list[str]:
    return [tool for tool in ("java", "mvn") if shutil.which(tool) is None]


def is_warm() -> bool:
    stamp = cache_dir() / "stamp"
    return stamp.exists() and stamp.read_text().strip() == _pom_stamp() and any(libs_dir().glob("kafka_2.13-*.jar"))


def ensure(quiet: bool = True) -> Path:
    """Copy the jars into the cache unless it is already warm for this pom; return libs/.
    Several test processes (pytest-xdist's workers on a fresh clone, two runs side by side) may
    find it cold at once: one copies under a lock, the others wait and find it warm (each
    removing and refilling libs/ under the other's Maven run failed them)."""
    if is_warm():
        return libs_dir()
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".libs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_warm():
            return libs_dir()
        return _copy_jars(quiet)


def _copy_jars(quiet: bool) -> Path:
    missing = missing_tools()
    if missing:
        raise KafkaDistUnavailable(f"Apache Kafka {KAFKA_VERSION} needs {' and '.join(missing)} on PATH "
                                   f"(Java 17 and Maven bring its jars from Maven Central)")
    libs = libs_dir()
    server_archive().unlink(missing_ok=True)        # made from the jars being replaced
    if libs.exists():
        shutil.rmtree(libs)
    libs.mkdir(parents=True)
    command = ["mvn", "-B", "-f", str(POM), "dependency:copy-dependencies",
               f"-DoutputDirectory={libs}", "-DincludeScope=runtime"]
    if quiet:
        command.insert(1, "-q")
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise KafkaDistUnavailable(f"mvn dependency:copy-dependencies failed ({result.returncode}):\n"
                                   f"{(result.stdout + result.stderr)[-3000:]}")
    (cache_dir() / "stamp").write_text(_pom_stamp() + "\n")
    return libs


def classpath() -> str:
    return str(libs_dir() / "*")


def server_archive() -> Path:
    """The class-data-sharing archive of a Kafka node's classes (tests/interop/kafka_cds.py)."""
    return cache_dir() / f"kafka-{KAFKA_VERSION}-server.jsa"


# The flags every Kafka JVM of the tests runs with; a class-data-sharing archive is used only by
# a JVM started with the flags it was dumped with.
JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")


def java_command(main_class: str, *args: str, heap: str = "256m", log4j: Path = LOG4J_TOOLS,
                 system_properties: dict | None = None, archive: bool = True) -> list[str]:
    """The command line that runs one of Kafka's main classes, as its bin/ scripts would; with
    the class-data-sharing archive when there is one (kafka_cds.py), which a JVM whose classpath
    or JDK differs from the archive's ignores: silently, as the warning would go to stdout, which
    the tests read as the tool's output."""
    props = {"log4j2.configurationFile": str(log4j), **(system_properties or {})}
    shared = server_archive()
    cds = [f"-XX:SharedArchiveFile={shared}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"] \
        if archive and not main_class.endswith(".java") and shared.exists() else []
    return ["java", f"-Xmx{heap}", *JVM_FLAGS, *cds,
            *(f"-D{k}={v}" for k, v in props.items()), "-cp", classpath(), main_class, *args]


def main(argv=None) -> int:
    try:
        ensure(quiet="--verbose" not in (argv or sys.argv[1:]))
    except KafkaDistUnavailable as exc:
        print(f"kafka_dist: {exc}", file=sys.stderr)
        return 1
    from tests.interop.kafka_cds import ensure_archive
    ensure_archive()            # faster Kafka JVM starts; without it (it says why) only slower
    print(classpath())
    return 0


if __name__ == "__main__":
    sys.exit(main())
