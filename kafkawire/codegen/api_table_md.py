"""The table of supported APIs in docs/apis.md, from the generated API table and the schemas' headers.

    python -m kafkawire.codegen.api_table_md           # prints the table
    python -m kafkawire.codegen.api_table_md --write   # puts it in docs/apis.md, between its markers
    python -m kafkawire.codegen.api_table_md --check   # exit 1 when docs/apis.md's table is stale

A hand-written schema without a "Versions:" header takes its history from the two references
codegen/union.py reads (../shared's copies by default; ``--trunk``/``--old`` name others, e.g. the
folders ``python -m tests.kafka_trunk_record`` rebuilds from Kafka's jars).

tests/test_api_table_doc.py keeps docs/apis.md equal to what this makes of schemas/.
"""
from __future__ import annotations

import re
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
APIS_DOC = SCHEMAS.parent / "docs" / "apis.md"
# The generated table sits between these two lines of docs/apis.md; everything else there is prose.
BEGIN = "<!-- api-table: written by python -m kafkawire.codegen.api_table_md --write; do not edit -->"
END = "<!-- end of api-table -->"


def _history(schema_path: str, references: tuple[Path, Path] | None) -> str:
    """The "Versions: ..." header line of a schema: which release each version comes from."""
    text = (SCHEMAS.parent / schema_path).read_text(encoding="utf-8")
    match = re.search(r"^// Versions: (.*?)\.?$", text, re.M)
    if match:
        return match.group(1)
    # A hand-written schema that does not say: the same words, from the two references (union
    # reads them; imported only when a schema needs it).
    from . import dialect, union
    name = Path(schema_path).stem
    trunk_root, old_root = references or (union.TRUNK, union.KAFKA_39)
    trunk, old = trunk_root / "clients" / f"{name}.json", old_root / "clients" / f"{name}.json"
    history = union.version_history(dialect.load(trunk) if trunk.exists() else None,
                                    dialect.load(old) if old.exists() else None)
    return history.removeprefix("Versions: ").split(".")[0]


def markdown(references: tuple[Path, Path] | None = None) -> str:
    """The table; ``references`` = (current Kafka's schema folder, 3.9's), ../shared's by default."""
    # Here, not at the top: codegen must import even when the generated package does not (it
    # is what regenerates it). Importing kafkawire.messages installs the registry api_table reads.
    import kafkawire.messages  # noqa: F401
    from kafkawire.protocol.apis import api_table
    lines = ["| key | API | versions | where they come from |", "|---:|---|---|---|"]
    for key, api in sorted(api_table().items()):
        unstable = " (latest unstable)" if api.request.LATEST_VERSION_UNSTABLE else ""
        versions = str(api.min_version) if api.min_version == api.max_version else f"{api.min_version}-{api.max_version}"
        lines.append(f"| {key} | {api.name} | {versions}{unstable} "
                     f"| {_history(api.request.SCHEMA, references)} |")
    return "\n".join(lines)


def documented_table(doc: str) -> str:
    """The table between the markers of docs/apis.md's text; ValueError when a marker is missing."""
    if doc.count(BEGIN) != 1 or doc.count(END) != 1:
        raise ValueError(f"{APIS_DOC} needs one {BEGIN!r} line and one {END!r} line")
    return doc.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def with_table(doc: str, table: str) -> str:
    """docs/apis.md's text with the table between its markers replaced."""
    documented_table(doc)
    before, rest = doc.split(BEGIN, 1)
    return f"{before}{BEGIN}\n{table}\n{END}{rest.split(END, 1)[1]}"


def union_references(args) -> tuple[Path, Path] | None:
    """(--trunk, --old) when both are given; None for ../shared's copies; SystemExit for one alone."""
    if (args.trunk is None) != (args.old is None):
        raise SystemExit("--trunk and --old go together")
    return None if args.trunk is None else (args.trunk, args.old)


def main(argv: list[str] | None = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m kafkawire.codegen.api_table_md", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"replace the table in {APIS_DOC}")
    mode.add_argument("--check", action="store_true", help=f"exit 1 when the table in {APIS_DOC} is stale")
    parser.add_argument("--trunk", type=Path, help="current Kafka's schema folder (default: ../shared's copy)")
    parser.add_argument("--old", type=Path, help="Kafka 3.9's schema folder (default: ../shared's copy)")
    args = parser.parse_args(argv)
    table = markdown(union_references(args))
    if not (args.write or args.check):
        print(table)
        return 0
    doc = APIS_DOC.read_text(encoding="utf-8")
    if args.check:
        stale = documented_table(doc) != table
        print(f"{APIS_DOC}: {'stale: run python -m kafkawire.codegen.api_table_md --write' if stale else 'up to date'}")
        return 1 if stale else 0
    APIS_DOC.write_text(with_table(doc, table), encoding="utf-8")
    print(f"wrote the table of {len(table.splitlines()) - 2} APIs into {APIS_DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
