"""Under CI (CI=true) a missing Java, JDK, Maven, kcat, tshark/dumpcap, storage emulator
(.tools/) or package of the [dev] extra (pyspark, the peer clients, build...) fails the run at
its start, naming each, instead of letting their tests skip (tests/conftest.py); a developer's
run without them still skips."""
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import CI_PROGRAMS, CI_TOOLS, dev_distributions, missing_for_ci

REPO = Path(__file__).resolve().parents[1]


def test_everything_ci_needs_is_listed_when_absent():
    missing = missing_for_ci(which=lambda name: None, installed=lambda dist: False, present=lambda path: False)
    names = [line.split(":")[0] for line in missing]
    assert names == [*CI_PROGRAMS, *CI_TOOLS, *dev_distributions()]
    assert {"java", "javac", "mvn", "kcat", "tshark", "dumpcap", "pyspark", "pyarrow", "build"} <= set(names)
    assert "kcat: kcat (Debian package kcat)" in missing
    assert ".tools/gcs/bin/gcp-storage-emulator" in names
    assert missing_for_ci(which=lambda name: f"/usr/bin/{name}", installed=lambda dist: True,
                          present=lambda path: True) == []


def _collect(ci: str | None, path: Path) -> subprocess.CompletedProcess:
    """Collect one small test file with no program on PATH (no java, mvn, kcat, tshark)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = str(path)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests/test_error_codes.py"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_under_ci_a_missing_program_fails_the_run_naming_it(tmp_path):
    result = _collect("true", tmp_path)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    out = result.stdout + result.stderr
    for name in ("java", "javac", "mvn", "kcat", "tshark", "dumpcap"):
        assert f"\n  {name}: " in out, out[-2000:]
    assert "CI=true, and tests would skip for want of" in out


def test_without_ci_the_same_run_goes_on(tmp_path):
    for ci in (None, "false", ""):
        result = _collect(ci, tmp_path)
        assert result.returncode == 0, (ci, result.stdout[-2000:] + result.stderr[-2000:])
        assert "tests collected" in result.stdout or "test_error_codes.py" in result.stdout


# A skip written as pytest.skip or skipif that names one of these is a test CI would lose
# silently: such a test must call tests.conftest.unavailable (a failure under CI). (importorskip
# of a package is left alone: every [dev] distribution is checked at the session's start.)
CI_NEEDS = re.compile(r"\b(java|javac|jdk|mvn|maven|kcat|tshark|dumpcap|pyspark|spark|apache kafka)\b", re.I)
SKIPS = re.compile(r"pytest\.skip\(|pytest\.mark\.skip(if)?\(")


def test_no_test_skips_for_want_of_a_program_ci_must_have():
    """Every skip whose reason names Java, Maven, kcat, tshark/dumpcap, Spark or Kafka's jars goes
    through tests.conftest.unavailable, so that under CI=true it fails instead."""
    found = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            statement = " ".join(lines[number:number + 2])      # a reason may be on the next line
            if SKIPS.search(line) and CI_NEEDS.search(statement):
                found.append(f"{path.relative_to(REPO)}:{number + 1}: {line.strip()}")
    assert not found, "skips CI would not see fail (use tests.conftest.unavailable):\n" + "\n".join(found)
