"""java_utf8 decodes as Java's ``new String(bytes, UTF_8)``: the table in data/ was taken from
Java's answers (tests/interop/test_java_utf8_vs_java.py regenerates and compares it)."""
from __future__ import annotations

from kafkawire.metadata.java_text import java_utf8
from tests.metadata.java_utf8_cases import golden_inputs, read_golden, utf16_hex


def test_every_line_of_javas_table():
    table = read_golden()
    assert [s for s, _ in table] == golden_inputs()
    wrong = [f"{s.hex()}: Java {units}, ours {utf16_hex(java_utf8(s))}"
             for s, units in table if utf16_hex(java_utf8(s)) != units]
    assert not wrong, f"{len(wrong)} of {len(table)} cases differ from Java, e.g.\n" + "\n".join(wrong[:20])


def test_the_table_holds_the_cases_where_python_differs():
    differing = [s for s, units in read_golden() if utf16_hex(s.decode("utf-8", "replace")) != units]
    assert len(differing) > 100 and all(b"\xed" in s for s in differing)


def test_surrogates_and_cut_off_sequences():
    assert java_utf8(b"\xed\xa0\x80") == "\ufffd"                    # Python: three U+FFFD
    assert java_utf8(b"\xed\xa0A") == "\ufffdA"                     # Python: two, then A
    assert java_utf8(b"x\xed\xbf") == "x\ufffd"                     # cut off by the end: one
    assert java_utf8(b"\xf0\x90\x80") == "\ufffd"
    assert java_utf8(b"\xf5\x80\x80\x80") == "\ufffd" * 4
    assert java_utf8(b"\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80") == "été 😀"
    assert java_utf8(memoryview(b"ok")) == "ok"
