import os
import re
import shutil
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests import lost_exceptions, rdkafka_clients

# Property tests check what holds, not how fast inputs come: on a loaded 2-core machine one
# draw can stall for seconds, which would fail a run through Hypothesis's timing checks alone.
settings.register_profile("kafkawire", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("kafkawire")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Put back a parametrized Hypothesis test's settings after each of its cases.

    Hypothesis's pytest plugin (6.170) wraps the test function's settings in one more settings
    object on every parametrized case, on the function all the cases share: a test with ~960
    cases (every Kafka schema, with ../shared present) ends in a RecursionError inside
    Hypothesis itself. Each case starts from the settings its decorator gave."""
    function = getattr(item, "obj", None)
    function = getattr(function, "__func__", function)
    own = getattr(function, "_hypothesis_internal_use_settings", None)
    try:
        yield
    finally:
        if own is not None:
            function._hypothesis_internal_use_settings = own

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the repo holds extra held-out corpora (schemas of Kafka trunk, real KRaft data, pcaps);
# KAFKAWIRE_SHARED points elsewhere (KAFKAWIRE_SHARED=/nonexistent runs the suite as a fresh clone would).
SHARED = Path(os.environ.get("KAFKAWIRE_SHARED") or REPO.parent / "shared")
REFERENCE = SHARED / "reference"

# The programs the tests run as peers and oracles. Without one its tests skip, saying why, on a
# developer's machine; under CI (CI=true) that would make a green run that tested less, so there
# the run fails at its start, listing what is missing (and the helpers fail instead of skipping).
CI_PROGRAMS = {
    "java": "Java 17 (tests/interop, tests/spark)",
    "javac": "a JDK 17 (tests/interop compiles its Java oracles)",
    "mvn": "Maven (brings Apache Kafka's jars for tests/interop)",
    "kcat": "kcat (Debian package kcat)",
    "tshark": "tshark (Debian package tshark)",
    "dumpcap": "dumpcap (Debian package tshark)",
}
# the storage emulators of tests/spark/test_spark_remote_stores.py, installed under .tools/
CI_TOOLS = {
    ".tools/azurite/node_modules/.bin/azurite-blob": "Azurite, Azure storage's emulator (.ci/install-emulators)",
    ".tools/gcs/bin/gcp-storage-emulator": "Google Cloud Storage's emulator (.ci/install-emulators)",
    ".tools/hdfs/.installed": "Hadoop's MiniDFSCluster jars, from Maven (.ci/install-emulators)",
}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# Under CI, pytest keeps the test modules it rewrites (for its assertion messages) in
# __pycache__ even where the environment sets PYTHONDONTWRITEBYTECODE, as the project's machines
# do (.ci/run compiles the package's bytecode anyway): rewriting all of them again cost each
# run's collection 12 s of CPU (18 s against 6 s, 2026-11-29), and the second pytest run of .ci/run
# reads what the first wrote. This process only: the processes the tests start keep the setting.
if in_ci():
    sys.dont_write_bytecode = False


def dev_distributions() -> list[str]:
    """The distributions CI installs: pyproject's [dev] and [kerberos] extras (pyspark, pyarrow,
    the peer clients, build, gssapi...)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    # CI installs '.[dev,kerberos]' (.ci/run): kerberos builds from source, so it is not in dev
    return [re.match(r"[A-Za-z0-9._-]+", req).group() for req in extras["dev"] + extras["kerberos"]]


def _installed(distribution: str) -> bool:
    try:
        metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def missing_for_ci(which=shutil.which, installed=_installed, present=lambda path: (REPO / path).exists()) -> list[str]:
    """What CI needs and this machine lacks: programs on PATH, the emulators under .tools/,
    and the [dev] extra's distributions."""
    missing = [f"{name}: {why}" for name, why in CI_PROGRAMS.items() if which(name) is None]
    missing += [f"{path}: {why}" for path, why in CI_TOOLS.items() if not present(path)]
    missing += [f"{dist}: pip install -e '.[dev,kerberos]'" for dist in dev_distributions() if not installed(dist)]
    return missing


def unavailable(reason: str):
    """Skip the calling test saying why, or under CI fail it: a test CI cannot run is a failure there."""
    __tracebackhide__ = True        # pytest reports the caller's line, as for its own skip
    if in_ci():
        pytest.fail(f"CI=true and this test cannot run: {reason}")
    pytest.skip(reason)


def pytest_configure(config):
    rdkafka_clients.install(config)       # librdkafka clients a test leaves open: closed or named
    lost_exceptions.install(config)       # asyncio's "Task exception was never retrieved": named per test


@pytest.hookimpl(trylast=True)        # after tests/interop/conftest.py has marked its tests kafka
def pytest_collection_modifyitems(config, items):
    """The files that start JVMs or many processes (any test marked kafka or slow) first, each
    file's tests in their order, the rest after them in theirs. The README's test command runs
    the files on two pytest-xdist workers in this order (--no-loadscope-reorder; xdist would
    otherwise start with the files of most tests, the codec's, and leave the few long ones for
    the end, where one worker runs them while the other has nothing left)."""
    costly = {item.path for item in items if item.get_closest_marker("kafka") or item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in costly)


def pytest_sessionstart(session):
    if in_ci():
        missing = missing_for_ci()
        if missing:
            pytest.exit("CI=true, and tests would skip for want of:\n  " + "\n  ".join(missing), returncode=1)


def require(path: Path) -> Path:
    """Skip the calling test, saying why, when reference material in ../shared is absent."""
    if not path.exists():
        pytest.skip(f"reference material not available: {path} is missing (it lives in ../shared beside the repo)")
    return path


def pytest_addoption(parser):
    parser.addoption("--rewrite", action="store_true",
                     help="rewrite the expected output of the datadriven files in tests/kraft/testdata")


@pytest.fixture(autouse=True)
def _no_tool_log_handler_leaks():
    """A network tool run in-process installs its WARN-to-stderr handler on the root logger for
    the rest of the process (tools.admin_client.show_warnings), as a CLI process wants; between
    tests that would send later tests' log records to their stderr. Take it off after each test."""
    import logging
    root = logging.getLogger()
    level = root.level
    yield
    for handler in [h for h in root.handlers if getattr(h, "kafkawire_tool_warnings", False)]:
        root.removeHandler(handler)
    root.setLevel(level)
