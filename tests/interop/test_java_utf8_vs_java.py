"""Our ``java_utf8`` against Java's own ``new String(bytes, offset, length, UTF_8)`` (what
Kafka's Utils.utf8 and so kafka-dump-log print keys, values and header keys with).

Java decodes every 1- and 2-byte sequence, every 3-byte sequence whose lead is C0-F7 with the
third byte from one byte of each class (and the class edges), every 4-byte sequence after an
E0-F7 lead over those bytes, and the checked-in table of tests/metadata/data; ours must give
the same UTF-16 code units for each. ``--rewrite`` writes that table again from Java's answers.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kafkawire.metadata.java_text import java_utf8
from tests.metadata.java_utf8_cases import GOLDEN, format_golden, golden_inputs, read_golden, utf16_hex

SOURCE = Path(__file__).parent / "java" / "utf8" / "Utf8Decode.java"

# one byte of each class the decoder tells apart, with the edges of each range
CLASS_EDGES = (0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
               0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF)


@pytest.fixture(scope="module")
def java_decode(tmp_path_factory):
    """java_decode(sequences) -> Java's code units (hex) for each."""
    if not shutil.which("javac") or not shutil.which("java"):
        from tests.conftest import unavailable
        unavailable("javac and java are needed to ask Java how it decodes UTF-8")
    classes = tmp_path_factory.mktemp("utf8-classes")
    subprocess.run(["javac", "-d", str(classes), str(SOURCE)], check=True, capture_output=True, timeout=120)

    def decode(sequences: list[bytes]) -> list[str]:
        result = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", str(classes), "Utf8Decode"],
                                input="".join(s.hex() + "\n" for s in sequences), capture_output=True,
                                text=True, timeout=120, check=True)
        answers = result.stdout.split("\n")[:-1]
        assert len(answers) == len(sequences), result.stderr[-2000:]
        return answers
    return decode


def exhaustive_inputs() -> list[bytes]:
    sequences = [bytes([a]) for a in range(256)]
    sequences += [bytes([a, b]) for a in range(256) for b in range(256)]
    sequences += [bytes([a, b, c]) for a in range(0xC0, 0xF8) for b in range(256) for c in CLASS_EDGES]
    sequences += [bytes([a, b, c, d]) for a in range(0xE0, 0xF8) for b in CLASS_EDGES for c in CLASS_EDGES
                  for d in CLASS_EDGES]
    return sequences


def mismatches(sequences, answers) -> list[str]:
    return [f"{s.hex()}: Java {j}, ours {utf16_hex(java_utf8(s))}"
            for s, j in zip(sequences, answers) if utf16_hex(java_utf8(s)) != j]


def test_every_short_sequence_decodes_as_java_does(java_decode):
    sequences = exhaustive_inputs()
    answers = java_decode(sequences)
    bad = mismatches(sequences, answers)
    differs_from_python = sum(1 for s, j in zip(sequences, answers) if utf16_hex(s.decode("utf-8", "replace")) != j)
    print(f"\nJava's UTF-8 decoding: {len(sequences)} sequences, {len(sequences) - len(bad)} identical; "
          f"Python's 'replace' differs from Java on {differs_from_python}")
    assert not bad, f"{len(bad)} sequences decode differently, e.g.\n" + "\n".join(bad[:20])
    assert differs_from_python > 0      # the cases that made this module necessary are in the set


def test_the_checked_in_table_is_what_java_says(java_decode, request):
    inputs = golden_inputs()
    answers = java_decode(inputs)
    if request.config.getoption("--rewrite"):
        GOLDEN.write_text(format_golden(zip(inputs, answers)))
    table = read_golden()
    assert [s for s, _ in table] == inputs, f"{GOLDEN} does not hold golden_inputs(); run with --rewrite"
    wrong = [f"{s.hex()}: table {units}, Java {j}" for (s, units), j in zip(table, answers) if units != j]
    assert not wrong, f"{GOLDEN} disagrees with Java on {len(wrong)} lines, e.g.\n" + "\n".join(wrong[:20])
