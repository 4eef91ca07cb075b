"""The import layers of kafkawire (docs/architecture.md, "Layout"): every hand-written module under kafkawire/
imports only from the layers below its own, never from a sibling in the same row.

Every import counts: at the top, inside a function, under ``if TYPE_CHECKING``. kafkawire/messages
is generated and not read (it imports only kafkawire.protocol); it is a layer all the same.
A violation names file:line, the import and the rule it breaks.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The rows, lowest first: a module may import from any row below its own. Layers in one row
# are siblings and may not import each other (the raft node and the controller meet only in
# kafkawire.raft.contract; `kafkawire server-start` joins them). A layer is a module prefix;
# the longest prefix wins (kafkawire.raft.node is its own layer, not the pure core's).
ROWS: list[tuple[str, ...]] = [
    # leaves: Kafka's release and feature levels; the optional packages, each named by its extra
    ("kafkawire.feature_versions", "kafkawire._extras", "kafkawire.single_broker"),
    ("kafkawire.protocol",),                         # the runtime: never imports generated code
    ("kafkawire.messages",),                         # generated codecs (import only the runtime)
    ("kafkawire.records",),
    ("kafkawire.storage",),
    ("kafkawire.metadata",),
    ("kafkawire.capture",),
    ("kafkawire.net",),
    ("kafkawire.raft",),                             # the pure core, kafkawire/raft/*.py
    ("kafkawire.raft.simulate", "kafkawire.raft.node", "kafkawire.controller", "kafkawire.broker"),
    # what people run; imported by none (kafkawire.testing: the embedded broker for users' tests)
    ("kafkawire.tools", "kafkawire.spark", "kafkawire.codegen", "kafkawire.testing"),
]

# Imports that break a rule today, each with the work that removes it. The test fails when one
# of them is gone too (so the list only shrinks): delete its line then.
KNOWN: dict[tuple[str, str], str] = {}

# Imports that go against the rows by design, each with the reason it is right. Unlike KNOWN
# these stay; the test fails if one is gone (delete it then) or if any other import of the
# same kind appears.
ALLOWED: dict[tuple[str, str], str] = {
    ("kafkawire/protocol/registry.py", "kafkawire.messages"):
        "installed() imports the generated codecs, inside the function, when no registry was installed "
        "yet: importing any module is enough to frame and decode (issue 25: no import-order trap)",
    ("kafkawire/tools/main_read.py", "kafkawire.spark"):
        "`kafkawire main` ends by reading what its broker wrote as Spark reads it (issue 29); without Java it "
        "runs the data source's planning and task reader itself, imported inside the functions, only then",
}


def layer_of(module: str, rows=ROWS) -> tuple[int, str] | None:
    """(row, layer) of a module name: the longest layer prefix that matches; None outside kafkawire."""
    best = None
    for row, layers in enumerate(rows):
        for layer in layers:
            if (module == layer or module.startswith(layer + ".")) and (best is None or len(layer) > len(best[1])):
                best = (row, layer)
    return best


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path):
    """(line, module) for every import in the file, relative ones resolved; ``from pkg import name``
    counts as pkg.name when that is a module or package of the tree, else as pkg."""
    this = module_name(path, root)
    package = this.split(".") if path.name == "__init__.py" else this.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                relative = Path(*candidate.split("."))
                if (root / relative).is_dir() or (root / relative).with_suffix(".py").exists():
                    yield node.lineno, candidate
                else:
                    yield node.lineno, module


def violations(root: Path, rows=ROWS, skip=("kafkawire.messages",)) -> list[tuple[str, int, str, str]]:
    """(file, line, imported module, rule broken) for every import against the rows, in the
    hand-written modules of root/kafkawire."""
    found = []
    for path in sorted((root / "kafkawire").rglob("*.py")):
        name = module_name(path, root)
        if any(name == s or name.startswith(s + ".") for s in skip):
            continue
        source = layer_of(name, rows)
        if source is None:
            continue
        for line, target_name in imported_modules(path, root):
            target = layer_of(target_name, rows)
            if target is None or target[1] == source[1]:
                continue
            rel = str(path.relative_to(root))
            if target[0] > source[0]:
                found.append((rel, line, target_name,
                              f"{source[1]} (row {source[0]}) may not import {target[1]}, a row above it (row {target[0]})"))
            elif target[0] == source[0]:
                found.append((rel, line, target_name,
                              f"{source[1]} and {target[1]} are siblings (row {source[0]}): neither imports the other"))
    return found


def _report(found) -> str:
    return "\n".join(f"{file}:{line}: imports {module}: {rule}" for file, line, module, rule in found)


def test_every_import_goes_down_the_layers():
    found = violations(REPO)
    unexpected = [v for v in found if (v[0], layer_of(v[2])[1]) not in KNOWN | ALLOWED]
    assert not unexpected, "imports against the layer order (docs/architecture.md, Layout):\n" + _report(unexpected)
    still_there = {(v[0], layer_of(v[2])[1]) for v in found}
    fixed = [key for key in KNOWN | ALLOWED if key not in still_there]
    assert not fixed, f"these exceptions are gone: delete them from KNOWN or ALLOWED: {fixed}"


def test_no_layer_is_left_out():
    """Every package under kafkawire/ belongs to a layer (a new folder needs its row)."""
    packages = {module_name(p.parent / "__init__.py", REPO) for p in (REPO / "kafkawire").rglob("__init__.py")}
    orphans = sorted(p for p in packages if p != "kafkawire" and layer_of(p) is None)
    assert not orphans, f"packages in no row of ROWS: {orphans}"


def documented_layers(doc: str) -> list[str]:
    """The kafkawire layers of docs/architecture.md's "Layout" table, top to bottom, as module names
    (its first column: `kafkawire/raft/node/`, `kafkawire/feature_versions.py`, ...)."""
    section = doc.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        for cell in line.split("|")[1].split(","):
            path = cell.strip().strip("`")
            if path.startswith("kafkawire/"):
                layers.append(path.removesuffix("/").removesuffix(".py").replace("/", "."))
    return layers


def test_the_documented_layout_is_the_one_enforced():
    """docs/architecture.md's Layout table lists the layers of ROWS, in ROWS' order: the table readers
    go by is the rule this file checks."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert documented_layers(doc) == [layer for row in ROWS for layer in row], \
        "docs/architecture.md's Layout table and ROWS disagree: change both together"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_checker_names_each_bad_import_with_its_line_and_rule(tmp_path):
    root = _tree(tmp_path, {
        "kafkawire/__init__.py": "",
        "kafkawire/protocol/__init__.py": "",
        "kafkawire/protocol/framing.py": "import struct\n\n\ndef f():\n    from kafkawire.messages import by_name\n",
        "kafkawire/messages/__init__.py": "from kafkawire.protocol import framing\n",
        "kafkawire/net/__init__.py": "",
        "kafkawire/net/server.py": "from kafkawire.protocol import framing\n",
        "kafkawire/raft/__init__.py": "",
        "kafkawire/raft/contract.py": "from kafkawire.net import server\n",
        "kafkawire/raft/node/__init__.py": "",
        "kafkawire/raft/node/driver.py": "from ..contract import X\nfrom kafkawire.controller.factory import f\n",
        "kafkawire/controller/__init__.py": "",
        "kafkawire/controller/factory.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                            "    from kafkawire.raft.node import driver\n"),
        "kafkawire/records/__init__.py": "from kafkawire.tools import cli\n",
        "kafkawire/tools/__init__.py": "",
        "kafkawire/tools/cli.py": "from kafkawire.raft.node import driver\nfrom kafkawire import codegen\n",
        "kafkawire/codegen/__init__.py": "",
    })
    found = violations(root)
    assert _report(found).splitlines() == [
        "kafkawire/controller/factory.py:3: imports kafkawire.raft.node.driver: kafkawire.controller and "
        "kafkawire.raft.node are siblings (row 9): neither imports the other",
        "kafkawire/protocol/framing.py:5: imports kafkawire.messages: kafkawire.protocol (row 1) may not import "
        "kafkawire.messages, a row above it (row 2)",
        "kafkawire/raft/node/driver.py:2: imports kafkawire.controller.factory: kafkawire.raft.node and "
        "kafkawire.controller are siblings (row 9): neither imports the other",
        "kafkawire/records/__init__.py:1: imports kafkawire.tools.cli: kafkawire.records (row 3) may not import "
        "kafkawire.tools, a row above it (row 10)",
        "kafkawire/tools/cli.py:2: imports kafkawire.codegen: kafkawire.tools and kafkawire.codegen are siblings "
        "(row 10): neither imports the other",
    ]


def test_the_real_tree_with_one_bad_import_fails(tmp_path):
    """A copy of kafkawire/ (no generated code) with the raft core importing the node."""
    copy = tmp_path / "kafkawire"
    for path in (REPO / "kafkawire").rglob("*.py"):
        if "messages" in path.relative_to(REPO / "kafkawire").parts[:1]:
            continue
        target = copy / path.relative_to(REPO / "kafkawire")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    before = violations(tmp_path)
    types = copy / "raft" / "types.py"
    types.write_text(types.read_text(encoding="utf-8") + "\n\ndef late():\n    from .node import driver\n",
                     encoding="utf-8")
    new = [v for v in violations(tmp_path) if v not in before]
    assert [(file, module, rule) for file, _, module, rule in new] == [
        ("kafkawire/raft/types.py", "kafkawire.raft.node.driver",
         "kafkawire.raft (row 8) may not import kafkawire.raft.node, a row above it (row 9)")]
