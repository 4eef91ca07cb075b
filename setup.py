"""The optional C extension of the native record path (issue 26); everything else is in
pyproject.toml.

The extension is optional: without a C compiler or Python headers the build warns once and
installs the pure-Python package, which does everything the extension does, more slowly
(``kafkawire._native.status()`` says which one runs; ``KAFKAWIRE_PURE=1`` forces pure).

So are its codecs: each of zlib (gzip), snappy, lz4 and zstd is compiled in only when a probe
finds its header and library (Debian: zlib1g-dev, libsnappy-dev, liblz4-dev, libzstd-dev); a
codec left out is compressed and decompressed by the pure-Python path (cramjam, zlib), and
``status()`` names the codecs that run in C. ``KAFKAWIRE_NATIVE_CODECS=gzip,lz4`` (or ``none``) limits the probe.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that turns a failed compile into a warning: the pure path still installs."""

    warned = False

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - no compiler at all (DistutilsPlatformError, ...)
            if os.environ.get("KAFKAWIRE_REQUIRE_NATIVE") == "1":
                raise
            self._warn(e)

    def build_extension(self, ext):
        if ext.name == "kafkawire._native_records":
            _add_codecs(self.compiler, ext)
            ext.define_macros.append(("KW_SOURCE_DIGEST", f'"{_source_digest()}"'))
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001 - CompileError, LinkError, missing headers
            if os.environ.get("KAFKAWIRE_REQUIRE_NATIVE") == "1":
                raise
            self._warn(e)

    def _warn(self, error):
        if OptionalBuildExt.warned:  # the editable install's copy step fails after the compile
            return
        OptionalBuildExt.warned = True
        sys.stderr.write(f"WARNING: kafkawire's C extension was not built ({error}); kafkawire will "
                         "run its pure-Python path (same results, slower).\n")


def _source_digest() -> str:
    """kafkawire._native_digest.source_digest of the sources being built (loaded by path: kafkawire
    itself cannot be imported before its extension is built)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_kw_native_digest", os.path.join("kafkawire", "_native_digest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.source_digest(os.path.join("kafkawire", "_native_src")) or ""


# (name, macro, header, library, a call that needs the library to link)
CODECS = (("gzip", "KW_HAVE_ZLIB", "zlib.h", "z", "inflateEnd(0)"),
          ("snappy", "KW_HAVE_SNAPPY", "snappy-c.h", "snappy", "snappy_uncompressed_length(0, 0, 0)"),
          ("lz4", "KW_HAVE_LZ4", "lz4.h", "lz4", "LZ4_decompress_safe(0, 0, 0, 0)"),
          ("zstd", "KW_HAVE_ZSTD", "zstd.h", "zstd", "ZSTD_isError(0)"))


@contextlib.contextmanager
def _quiet_stderr():
    """The probes' compiler errors are expected where a library is missing: not shown."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _links(compiler, header: str, library: str, call: str) -> bool:
    """Whether a program including ``header`` and calling into ``library`` compiles and links."""
    with tempfile.TemporaryDirectory() as tmp, _quiet_stderr():
        source = os.path.join(tmp, "probe.c")
        with open(source, "w") as f:
            f.write(f"#include <{header}>\nint main(void) {{ return (int){call}; }}\n")
        try:
            objects = compiler.compile([source], output_dir=tmp)
            compiler.link_executable(objects, "probe", output_dir=tmp, libraries=[library])
        except Exception:  # noqa: BLE001 - CompileError, LinkError: the codec stays in Python
            return False
    return True


def _add_codecs(compiler, ext) -> None:
    """Compile in each codec whose library is there (and KAFKAWIRE_NATIVE_CODECS allows)."""
    allowed = os.environ.get("KAFKAWIRE_NATIVE_CODECS", "gzip,snappy,lz4,zstd").replace(" ", "").split(",")
    found = []
    for name, macro, header, library, call in CODECS:
        if name in allowed and _links(compiler, header, library, call):
            ext.define_macros.append((macro, "1"))
            ext.libraries.append(library)
            found.append(name)
    sys.stderr.write(f"kafkawire: codecs (de)compressed in C: {', '.join(found) or 'none'}\n")


_SRC = "kafkawire/_native_src/"
NATIVE = [Extension("kafkawire._native_records",
                    [_SRC + name for name in ("module.c", "parse.c", "buf_pool.c", "decode.c", "encode.c", "columns.c",
                                                  "columns_fast.c", "crc32c.c", "decompress.c", "compress.c",
                                                  "message_programs.c", "message_decode.c", "message_encode.c",
                                                  "message_methods.c", "struct_alloc.c", "dump_json.c", "dump_lines.c", "capture.c")],
                    depends=[_SRC + "records.h", _SRC + "codecs.h", _SRC + "columns.h", _SRC + "message.h", _SRC + "dump_text.h"],
                    extra_compile_args=["-O3", "-std=gnu11", "-Wall", "-Wno-missing-field-initializers"])]

setup(ext_modules=[] if os.environ.get("KAFKAWIRE_PURE") == "1" else NATIVE,
      cmdclass={"build_ext": OptionalBuildExt})
