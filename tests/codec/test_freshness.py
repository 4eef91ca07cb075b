"""The committed codecs in kafkawire/messages are exactly what codegen makes of schemas/."""
from codegen.cli import DEFAULT_OUT, DEFAULT_SCHEMAS
from codegen.generate import write_package


def test_committed_codecs_are_fresh(tmp_path):
    written = write_package([DEFAULT_SCHEMAS], tmp_path / "messages")
    committed = sorted(p.name for p in DEFAULT_OUT.glob("*.py"))
    assert committed == written, "kafkawire/messages has modules codegen would not write, or lacks some: run `kafkawire codegen`"
    stale = [name for name in written
             if (tmp_path / "messages" / name).read_text() != (DEFAULT_OUT / name).read_text()]
    assert not stale, f"stale generated modules (run `kafkawire codegen` and commit): {stale}"
