"""README's table of supported APIs is what codegen/api_table_md.py makes of schemas/ (issue 13)."""
from pathlib import Path

from kafkawire.codegen.api_table_md import markdown
from kafkawire.protocol.apis import api_table
from tests.conftest import REFERENCE, require

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_lists_every_api_of_the_table():
    require(REFERENCE / "kafka-schemas")      # hand-written schemas' histories come from the references
    table = markdown()
    assert table in README.read_text(encoding="utf-8"), "README's API table is stale: run python -m kafkawire.codegen.api_table_md"
    rows = [line for line in table.splitlines()[2:]]
    assert len(rows) == len(api_table()) >= 95
    assert all(row.split("|")[4].strip() for row in rows), "an API without its version history"
