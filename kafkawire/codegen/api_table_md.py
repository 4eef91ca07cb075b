"""The README's table of supported APIs, from the generated API table and the schemas' headers.

    python -m kafkawire.codegen.api_table_md      # prints the table; tests/test_readme_api_table.py keeps README equal
"""
from __future__ import annotations

import re
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def _history(schema_path: str) -> str:
    """The "Versions: ..." header line of a schema: which release each version comes from."""
    text = (SCHEMAS.parent / schema_path).read_text(encoding="utf-8")
    match = re.search(r"^// Versions: (.*?)\.?$", text, re.M)
    if match:
        return match.group(1)
    # A hand-written schema that does not say: the same words, from the two references (union
    # reads them; imported only when a schema needs it).
    from . import dialect, union
    name = Path(schema_path).stem
    trunk, old = union.TRUNK / "clients" / f"{name}.json", union.KAFKA_39 / "clients" / f"{name}.json"
    history = union.version_history(dialect.load(trunk) if trunk.exists() else None,
                                    dialect.load(old) if old.exists() else None)
    return history.removeprefix("Versions: ").split(".")[0]


def markdown() -> str:
    # Here, not at the top: codegen must import even when the generated package does not (it
    # is what regenerates it). Importing kafkawire.messages installs the registry api_table reads.
    import kafkawire.messages  # noqa: F401
    from kafkawire.protocol.apis import api_table
    lines = ["| key | API | versions | where they come from |", "|---:|---|---|---|"]
    for key, api in sorted(api_table().items()):
        unstable = " (latest unstable)" if api.request.LATEST_VERSION_UNSTABLE else ""
        versions = str(api.min_version) if api.min_version == api.max_version else f"{api.min_version}-{api.max_version}"
        lines.append(f"| {key} | {api.name} | {versions}{unstable} "
                     f"| {_history(api.request.SCHEMA)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
