"""Every logger in kafkawire/ is named by its module (``logging.getLogger(__name__)``), so a
log line's name says which file wrote it and an operator can set levels per module or per
package (``kafkawire.net``, ``kafkawire.raft.node``, ...). The exceptions are names documented
as an interface (README), each with its reason."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Fixed names an operator relies on (the README names them).
DOCUMENTED = {
    "kafkawire.authorizer": "authorization denials are logged at INFO on it (Listener security)",
    "kafkawire.admin": "the admin tools' WARN lines end with it (The KRaft node, metadata-quorum)",
}


def fixed_logger_names() -> list[tuple[str, int, str]]:
    """(file, line, name) of every getLogger call given a string literal."""
    found = []
    for path in sorted((REPO / "kafkawire").rglob("*.py")):
        if "messages" in path.relative_to(REPO).parts[1:2]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "getLogger" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.append((str(path.relative_to(REPO)), node.lineno, node.args[0].value))
    return found


def test_loggers_are_named_by_module_except_the_documented_names():
    undocumented = [f"{file}:{line}: getLogger({name!r})" for file, line, name in fixed_logger_names()
                    if name not in DOCUMENTED]
    assert not undocumented, "use logging.getLogger(__name__):\n" + "\n".join(undocumented)


def test_every_documented_name_is_still_used():
    assert {name for _, _, name in fixed_logger_names()} == set(DOCUMENTED)
