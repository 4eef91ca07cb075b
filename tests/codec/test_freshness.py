"""The committed codecs in kafkawire/messages are exactly what codegen makes of schemas/."""
from codegen.cli import DEFAULT_OUT, DEFAULT_SCHEMAS
from codegen.generate import generate, stale_files


def test_committed_codecs_are_fresh():
    outputs = generate([DEFAULT_SCHEMAS])
    committed = sorted(p.name for p in DEFAULT_OUT.glob("*.py"))
    assert committed == sorted(outputs), \
        "kafkawire/messages has modules codegen would not write, or lacks some: run `kafkawire codegen`"
    stale = stale_files(outputs, DEFAULT_OUT)
    assert not stale, f"stale generated modules (run `kafkawire codegen` and commit): {stale}"
