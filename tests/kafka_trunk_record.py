"""What Kafka trunk's schemas add beyond the released jars, as committed diffs, so the checks that
need trunk run from a fresh clone.

    python -m tests.kafka_trunk_record            # materialise both folders (idempotent) and print them
    python -m tests.kafka_trunk_record --write    # rewrite the diffs from ../shared's copies (maintainers)

``schemas/`` is the union of current Kafka's schemas (trunk, newer than 4.3.1) and 3.9's
(codegen/union.py), and docs/apis.md's table is made from the same two references. ../shared
holds those copies; a fresh clone has the released jars only (tests/kafka_schemas.py brings
Kafka 4.3.1's and 3.9.1's from Maven). ``tests/data/kafka-trunk/`` holds, as unified diffs, how
the trunk copy differs from 4.3.1's jars and how the 3.9-branch copy differs from 3.9.1's, with
their provenance in SOURCE.md. Applying them to the jars' folders gives the two references
``schemas/`` was made from, file for file (``tests/codec/test_union.py`` checks that against
../shared whenever it is present, so the record cannot drift from the copies it describes).

The diffs are plain ``diff -u`` text (``a/`` and ``b/`` prefixes, ``/dev/null`` for a new file),
readable in review; the applier here is strict: a context or removed line that does not match
the jar's file is an error, never a fuzzy apply.
"""
from __future__ import annotations

import difflib
import hashlib
import re
import shutil
import sys
from pathlib import Path

from tests import kafka_schemas
from tests.conftest import REFERENCE

RECORD = Path(__file__).resolve().parent / "data" / "kafka-trunk"
# (diff file, folder of ../shared/reference it describes, the jar version it starts from)
DIFFS = {
    "trunk": ("trunk-beyond-4.3.1.diff", "kafka-schemas", kafka_schemas.CURRENT),
    "3.9": ("3.9-branch-beyond-3.9.1.diff", "kafka-schemas-3.9", kafka_schemas.OLD),
}
NO_NEWLINE = "\\ No newline at end of file\n"
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class RecordMismatch(ValueError):
    """A diff does not apply to the jar's files: the record and the jars disagree."""


def compared_files(root: Path) -> dict[str, Path]:
    """The files a reference folder and a jar's folder both describe: each module's schemas and
    errors.tsv (README.md, clients-test/ and the other tsv files exist in ../shared only)."""
    found = {p.relative_to(root).as_posix(): p for p in root.glob("*/*.json")
             if p.parent.name != "clients-test"}
    if (root / "errors.tsv").is_file():
        found["errors.tsv"] = root / "errors.tsv"
    return found


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _marked(lines) -> str:
    """diff -u text for difflib's lines: a last line without its newline gets diff's marker."""
    return "".join(line if line.endswith("\n") else line + "\n" + NO_NEWLINE for line in lines)


def make_diff(base: Path, new: Path) -> str:
    """The unified diff from the jar's folder ``base`` to the reference folder ``new``."""
    old_files, new_files = compared_files(base), compared_files(new)
    out = []
    for name in sorted(set(old_files) | set(new_files)):
        before = old_files[name].read_text(encoding="utf-8") if name in old_files else ""
        after = new_files[name].read_text(encoding="utf-8") if name in new_files else ""
        if before == after:
            continue
        out.append(_marked(difflib.unified_diff(
            _lines(before), _lines(after), "a/" + name if name in old_files else "/dev/null",
            "b/" + name if name in new_files else "/dev/null")))
    return "".join(out)


def _sections(diff: str):
    """(old name or None, new name or None, hunks) per file; a hunk is (old start, old length, lines)."""
    lines = _lines(diff)
    i = 0
    while i < len(lines):
        if not (lines[i].startswith("--- ") and lines[i + 1].startswith("+++ ")):
            raise RecordMismatch(f"line {i + 1}: expected a file header, found {lines[i]!r}")
        old, new = (lines[i][4:].strip(), lines[i + 1][4:].strip())
        i += 2
        hunks = []
        while i < len(lines) and lines[i].startswith("@@"):
            match = HUNK.match(lines[i])
            if not match:
                raise RecordMismatch(f"line {i + 1}: a bad hunk header {lines[i]!r}")
            start, length = int(match[1]), int(match[2] if match[2] is not None else 1)
            old_left, new_left = length, int(match[4] if match[4] is not None else 1)
            body = []
            i += 1
            while old_left or new_left or (i < len(lines) and lines[i] == NO_NEWLINE):
                if i == len(lines) or lines[i][:1] not in (" ", "-", "+", "\\"):
                    raise RecordMismatch(f"line {i + 1}: a hunk ends before its header's line counts")
                if lines[i] == NO_NEWLINE:
                    body[-1] = body[-1][:-1]          # the line before has no newline in its file
                else:
                    body.append(lines[i])
                    old_left -= lines[i][0] in " -"
                    new_left -= lines[i][0] in " +"
                i += 1
            hunks.append((start, length, body))
        yield (None if old == "/dev/null" else old[2:]), (None if new == "/dev/null" else new[2:]), hunks


def _patched(name: str, base: list[str], hunks) -> str:
    out, at = [], 0
    for start, length, body in hunks:
        begin = start if length == 0 else start - 1     # diff's convention for an empty old range
        if begin < at:
            raise RecordMismatch(f"{name}: hunks out of order")
        out += base[at:begin]
        at = begin
        for line in body:
            kind, text = line[0], line[1:]
            if kind in " -":
                if at >= len(base) or base[at] != text:
                    raise RecordMismatch(f"{name}: line {at + 1} of the jar's file is not the record's {text!r}")
                at += 1
            if kind in " +":
                out.append(text)
    return "".join(out + base[at:])


def apply(diff: str, base: Path, out: Path) -> None:
    """``out`` becomes a copy of ``base``'s compared files with ``diff`` applied."""
    if out.exists():
        shutil.rmtree(out)
    for name, path in compared_files(base).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / name)
    for old, new, hunks in _sections(diff):
        name = new or old
        if old and not (base / old).is_file():
            raise RecordMismatch(f"{old}: the record changes a file the jar does not have")
        before = _lines((base / old).read_text(encoding="utf-8")) if old else []
        if new is None:
            (out / old).unlink()
            continue
        (out / new).parent.mkdir(parents=True, exist_ok=True)
        (out / new).write_text(_patched(name, before, hunks), encoding="utf-8")


def diff_text(which: str) -> str:
    return (RECORD / DIFFS[which][0]).read_text(encoding="utf-8")


def folder(which: str) -> Path:
    """The reference folder ``which`` ("trunk" or "3.9") rebuilt from its jar and the record,
    under .kafka-dist/schemas/; SchemasUnavailable without Java and Maven."""
    _, _, version = DIFFS[which]
    base = kafka_schemas.ensure(version)
    out = kafka_schemas.schema_dir(f"record-{which}")
    stamp = hashlib.sha256(diff_text(which).encode() + (base / "stamp").read_bytes()).hexdigest()
    return kafka_schemas.stamped_folder(out, stamp, lambda: apply(diff_text(which), base, out))


def record_pair() -> tuple[Path, Path]:
    """(trunk's schemas, the 3.9 branch's schemas) as schemas/ was made from them, rebuilt from the
    jars of 4.3.1 and 3.9.1 and the committed record."""
    return folder("trunk"), folder("3.9")


def references(source: str) -> tuple[Path, Path]:
    """The (trunk, 3.9) pair schemas/ was made from: "record" rebuilds it from the jars and the
    committed diffs (unavailable() without Java and Maven: a skip, under CI a failure);
    "shared" is ../shared's held-out copies (a skip when absent: an optional extra)."""
    import pytest
    from tests.conftest import unavailable
    if source == "shared":
        pair = kafka_schemas.shared_pair()
        if pair is None:
            pytest.skip(f"{REFERENCE} (kafka-schemas, kafka-schemas-3.9) is not present: optional held-out copies")
        return pair
    try:
        return record_pair()
    except kafka_schemas.SchemasUnavailable as exc:
        unavailable(str(exc))


def write() -> int:
    for which, (name, shared_folder, version) in DIFFS.items():
        source = REFERENCE / shared_folder
        if not source.is_dir():
            print(f"kafka_trunk_record: {source} is missing", file=sys.stderr)
            return 1
        (RECORD / name).write_text(make_diff(kafka_schemas.ensure(version), source), encoding="utf-8")
        print(RECORD / name)
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        return write()
    try:
        for path in record_pair():
            print(path)
    except kafka_schemas.SchemasUnavailable as exc:
        print(f"kafka_trunk_record: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
