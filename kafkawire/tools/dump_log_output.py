"""Where dump-log's lines go: Kafka's text or one JSON object per line, written in blocks; and
the small text forms both share (Java's UTF-8 decoding, header keys, base64)."""
from __future__ import annotations

import base64
import json
from json.encoder import encode_basestring as json_str  # noqa: F401 - the JSON string literal, re-exported

from kafkawire.metadata.java_text import java_utf8


def java_string(data) -> str:
    """Java's ``new String(bytes, UTF_8)``: ill-formed sequences become U+FFFD by Java's rule."""
    return java_utf8(data)


def header_key(key: str) -> str:
    # The reader keeps invalid UTF-8 in header keys as surrogate escapes; Java shows U+FFFD.
    if key.isascii():
        return key
    return java_utf8(key.encode("utf-8", "surrogateescape"))


def json_b64(data) -> str:
    """``"<base64>"`` or ``null``, as JSON text."""
    return "null" if data is None else f'"{base64.b64encode(bytes(data)).decode()}"'


def json_header(key, value) -> str:
    return f'{{"key":{json_str(header_key(key))},"valueBase64":{json_b64(value)}}}'


class _BufferedLines:
    """Lines gathered and written in blocks (a 100 MB log is millions of lines)."""

    MAX_BLOCK_CHARS = 1 << 20

    def __init__(self, stream):
        self._stream = stream
        self._lines: list[str] = []
        self._block_chars = 0   # the characters of the blocks gathered (add_block)

    def flush(self):
        if self._lines:
            self._lines.append("")
            self._stream.write("\n".join(self._lines))
            self._lines.clear()
        self._block_chars = 0
        self._stream.flush()

    def add_block(self, text: str):
        """Many lines at once, joined by newlines (the C text loop's output)."""
        self._lines.append(text)
        self._block_chars += len(text)

    def maybe_flush(self):
        if len(self._lines) > 4096 or self._block_chars > self.MAX_BLOCK_CHARS:
            self.flush()


class TextOutput(_BufferedLines):
    """Kafka's text; ``line`` ignores the JSON object."""

    json = False

    def __init__(self, stream):
        super().__init__(stream)
        self.add = self._lines.append

    def line(self, text: str, obj=None):
        self.add(text)


class JsonOutput(_BufferedLines):
    """One JSON object per line; ``line`` ignores Kafka's text, ``raw`` takes ready JSON."""

    json = True

    def __init__(self, stream):
        super().__init__(stream)
        self.raw = self._lines.append
        self.dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def line(self, text: str, obj=None):
        if obj is not None:
            self._lines.append(self.dumps(obj))
