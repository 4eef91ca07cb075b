"""docs/node-and-configuration.md's "Settings" table names every server.properties key the node
reads (kafkawire.net.config_keys), with the default the node applies: a key added to the config
without a row, or a default changed without the doc, fails here."""
from pathlib import Path

from kafkawire.net import config

DOC = Path(__file__).resolve().parents[1] / "docs" / "node-and-configuration.md"


def documented_settings(doc: str) -> dict[str, str]:
    """setting -> default cell of the "Settings" table."""
    section = doc.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) >= 2 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1]
    return rows


def _expected_default(key) -> str:
    if key.default is config.REQUIRED:
        return "(required)"
    if key.default is None:
        return "(unset)"
    return key.default or "(empty)"


def test_every_setting_the_node_reads_is_documented_with_its_default():
    rows = documented_settings(DOC.read_text(encoding="utf-8"))
    missing = [k.name for k in config.KNOWN_KEYS.values() if k.name not in rows]
    assert not missing, f"settings the node reads that docs/node-and-configuration.md does not list: {missing}"
    wrong = {k.name: (rows[k.name], _expected_default(k)) for k in config.KNOWN_KEYS.values() if rows[k.name] != _expected_default(k)}
    assert not wrong, f"defaults in the doc that are not the node's (doc, node): {wrong}"
    unknown = sorted(set(rows) - {k.name for k in config.KNOWN_KEYS.values()})
    assert not unknown, f"settings in the doc that the node does not read: {unknown}"
