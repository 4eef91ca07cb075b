"""The byte sequences of the checked-in table of Java's UTF-8 decoding (data/java_utf8_cases.txt)
and how to read it. The table was written by tests/interop/test_java_utf8_vs_java.py from
Java's own ``new String(bytes, UTF_8)`` (``pytest tests/interop/test_java_utf8_vs_java.py
--rewrite`` writes it again); the interop test also checks that Java still gives every line.

Every sequence of one to three bytes over an alphabet with one byte of each class the
decoder tells apart (ASCII, the continuation ranges 80-8F, 90-9F, A0-BF, bad leads C0/C1 and
F5-FF, and the leads C2-DF, E0, E1-EC, ED, F0, F1-F3, F4), and four-byte sequences after the
leads whose second byte has a narrowed range. Lines: ``<bytes hex> <UTF-16 code units hex>``.
"""
from __future__ import annotations

from pathlib import Path

GOLDEN = Path(__file__).with_name("data") / "java_utf8_cases.txt"

ALPHABET = (0x41, 0x80, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xE1, 0xED, 0xF0, 0xF1, 0xF4, 0xF5)
FOUR_BYTE_LEADS = (0xE0, 0xED, 0xF0, 0xF1, 0xF4)
FOLLOWERS = (0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF)


def golden_inputs() -> list[bytes]:
    sequences = [bytes([a]) for a in ALPHABET]
    sequences += [bytes([a, b]) for a in ALPHABET for b in ALPHABET]
    sequences += [bytes([a, b, c]) for a in ALPHABET for b in ALPHABET for c in ALPHABET]
    sequences += [bytes([a, b, c, d]) for a in FOUR_BYTE_LEADS for b in FOLLOWERS for c in FOLLOWERS
                  for d in FOLLOWERS]
    return sequences


def utf16_hex(text: str) -> str:
    return text.encode("utf-16-be", "surrogatepass").hex()


def read_golden() -> list[tuple[bytes, str]]:
    """(input bytes, Java's UTF-16 code units as hex) for every line of the table."""
    cases = []
    for number, line in enumerate(GOLDEN.read_text().splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        source, _, units = line.partition(" ")
        try:
            cases.append((bytes.fromhex(source), units))
        except ValueError:
            raise ValueError(f"{GOLDEN}:{number}: not '<hex bytes> <hex code units>': {line!r}") from None
    return cases


def format_golden(cases) -> str:
    header = ("# Java's new String(bytes, UTF_8) on each byte sequence: <bytes> <UTF-16 code units>.\n"
              "# Written by tests/interop/test_java_utf8_vs_java.py --rewrite; see tests/metadata/java_utf8_cases.py.\n")
    return header + "".join(f"{source.hex()} {units}\n" for source, units in cases)
