"""docs/testing.md's table of the claims the ../shared corpora check and the tests that check them
without ../shared: every file and test it names exists, and every claim has a test without it."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "testing.md"
START, END = "<!-- held-out table: start -->", "<!-- held-out table: end -->"
# `tests/x.py`, `tests/x.py::test_name`, or `::test_name` (of the file named last in the cell)
NAMED = re.compile(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`")


def table_rows() -> list[list[str]]:
    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index(START) + len(START):text.index(END)]
    rows = [line.strip().strip("|").split("|") for line in table.strip().splitlines()]
    return [[cell.strip() for cell in row] for row in rows[2:]]      # past the header and its rule


def named_tests(cell: str) -> list[tuple[str, str | None]]:
    """(file, test or None) for each name in a cell."""
    found, current = [], None
    for path, test in NAMED.findall(cell):
        current = path or current
        assert current, f"{cell!r}: a ::test before any file"
        found.append((current, test or None))
    return found


def test_every_file_and_test_the_table_names_exists():
    rows = table_rows()
    assert len(rows) >= 15
    missing = []
    for claim, without, extra in rows:
        assert named_tests(without), f"{claim}: no test without ../shared"
        for path, test in named_tests(without) + named_tests(extra):
            source = REPO / path
            if not source.is_file():
                missing.append(path)
            elif test and not re.search(rf"^def {test}\(", source.read_text(encoding="utf-8"), re.M):
                missing.append(f"{path}::{test}")
    assert not missing, missing


def test_the_names_are_read_as_written():
    cell = "`tests/a.py::test_one`, `::test_two`, `tests/b.py` (note)"
    assert named_tests(cell) == [("tests/a.py", "test_one"), ("tests/a.py", "test_two"), ("tests/b.py", None)]
