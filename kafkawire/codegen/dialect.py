"""Kafka's JSON dialect: JSON plus // line comments and /* */ block comments.

Comments are removed by a small scanner rather than a regex so that "//" inside a string
(an `about` text with a URL, say) is left alone.
"""
from __future__ import annotations

import json
from pathlib import Path


def strip_comments(text: str) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError(f"unterminated /* comment starting at character {i}")
            # Keep line numbers stable for json's error messages.
            out.append("\n" * text.count("\n", i, end))
            i = end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(strip_comments(text))
    except (ValueError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON in Kafka's schema dialect: {exc}") from None
