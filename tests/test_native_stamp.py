"""The C extension is used only when it was built from the sources beside it (kafkawire._native,
kafkawire._native_digest): a checkout updated without a rebuild runs the pure path with a
warning, instead of calling functions that may not match the Python code (an AttributeError at
import, or worse, arguments of an older signature)."""
from __future__ import annotations

import pytest

from kafkawire import _native, _native_digest


def test_the_built_extension_carries_the_digest_of_the_sources_beside_it():
    if _native.records is None:
        pytest.skip("the C extension is not built (or KAFKAWIRE_PURE=1)")
    assert _native.records.SOURCE_DIGEST == _native_digest.source_digest()


def test_an_extension_built_from_other_sources_is_not_used(monkeypatch):
    if _native.records is None:
        pytest.skip("the C extension is not built (or KAFKAWIRE_PURE=1)")
    monkeypatch.setattr(_native, "source_digest", lambda: "0" * 16)
    monkeypatch.delenv("KAFKAWIRE_REQUIRE_NATIVE", raising=False)
    with pytest.warns(_native.NativeUnavailableWarning, match="built from other sources"):
        assert _native._load() is None
    monkeypatch.setenv("KAFKAWIRE_REQUIRE_NATIVE", "1")
    with pytest.raises(ImportError, match="built from other sources"):
        _native._load()


def test_the_digest_covers_every_source_file_and_nothing_else(tmp_path):
    (tmp_path / "a.c").write_bytes(b"int a;")
    (tmp_path / "b.h").write_bytes(b"int b;")
    (tmp_path / "notes.txt").write_bytes(b"x")
    first = _native_digest.source_digest(str(tmp_path))
    (tmp_path / "notes.txt").write_bytes(b"y")
    assert _native_digest.source_digest(str(tmp_path)) == first
    (tmp_path / "b.h").write_bytes(b"int b2;")
    assert _native_digest.source_digest(str(tmp_path)) != first
    assert _native_digest.source_digest(str(tmp_path / "missing")) is None
