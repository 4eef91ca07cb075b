"""docs/apis.md's table of supported APIs is what codegen/api_table_md.py makes of schemas/, and
`python -m kafkawire.codegen.api_table_md --write` is what puts it there."""
import pytest

from kafkawire.codegen import api_table_md
from kafkawire.codegen.api_table_md import APIS_DOC, documented_table, markdown, with_table
from kafkawire.protocol.apis import api_table
from tests import kafka_trunk_record


@pytest.mark.parametrize("source", ["record", "shared"])
def test_docs_apis_lists_every_api_of_the_table(source):
    """Hand-written schemas' histories come from the references: rebuilt from Kafka's jars and
    tests/data/kafka-trunk ("record", from a fresh clone), or ../shared's copies when present."""
    table = markdown(kafka_trunk_record.references(source))
    assert documented_table(APIS_DOC.read_text(encoding="utf-8")) == table, \
        "docs/apis.md's API table is stale: run python -m kafkawire.codegen.api_table_md --write"
    rows = table.splitlines()[2:]
    assert len(rows) == len(api_table()) >= 95
    assert all(row.split("|")[4].strip() for row in rows), "an API without its version history"


def test_write_replaces_only_the_table_between_the_markers(tmp_path, monkeypatch, capsys):
    """--write rewrites a stale table and leaves the prose around it; --check then passes, and
    fails on the stale page."""
    doc = tmp_path / "apis.md"
    stale = f"# APIs\n\nprose before\n\n{api_table_md.BEGIN}\n| key | API |\n|---|---|\n| 0 | Old |\n{api_table_md.END}\n\nprose after\n"
    doc.write_text(stale, encoding="utf-8")
    monkeypatch.setattr(api_table_md, "APIS_DOC", doc)
    monkeypatch.setattr(api_table_md, "markdown", lambda references=None: "| key | API |\n|---|---|\n| 0 | Produce |")
    assert api_table_md.main(["--check"]) == 1
    assert api_table_md.main(["--write"]) == 0
    written = doc.read_text(encoding="utf-8")
    assert written == stale.replace("| 0 | Old |", "| 0 | Produce |")
    assert api_table_md.main(["--check"]) == 0
    assert with_table(written, "| key | API |\n|---|---|\n| 0 | Produce |") == written
    capsys.readouterr()


def test_a_page_without_markers_is_refused_by_name(tmp_path):
    try:
        documented_table("# APIs\n\nno table here\n")
    except ValueError as exc:
        assert "api-table" in str(exc)
    else:
        raise AssertionError("a page without the markers was accepted")
