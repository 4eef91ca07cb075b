"""The committed codecs in kafkawire/messages are exactly what codegen makes of schemas/."""
from kafkawire.codegen.cli import DEFAULT_OUT, DEFAULT_SCHEMAS
from kafkawire.codegen.generate import generate, stale_files


def test_committed_codecs_are_fresh():
    outputs = generate([DEFAULT_SCHEMAS])
    committed = sorted(p.name for p in DEFAULT_OUT.glob("*.py"))
    assert committed == sorted(outputs), \
        "kafkawire/messages has modules codegen would not write, or lacks some: run `kafkawire codegen`"
    stale = stale_files(outputs, DEFAULT_OUT)
    assert not stale, f"stale generated modules (run `kafkawire codegen` and commit): {stale}"


def test_every_generated_file_is_marked_as_generated_the_conventional_way():
    """`# Code generated ... DO NOT EDIT.` on the first line, which editors, linters and review
    tools recognise (the regular expression Go's tools use)."""
    import re
    from pathlib import Path
    marker = re.compile(r"^# Code generated .* DO NOT EDIT\.$")
    package = Path(__file__).resolve().parents[2] / "kafkawire" / "messages"
    files = sorted(package.glob("*.py"))
    assert len(files) > 100
    unmarked = [f.name for f in files if not marker.match(f.read_text(encoding="utf-8").split("\n", 1)[0])]
    assert unmarked == []
