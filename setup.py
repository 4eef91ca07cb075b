"""The optional C extension of the native record path (issue 26); everything else is in
pyproject.toml.

The extension is optional: without a C compiler or Python headers the build warns once and
installs the pure-Python package, which does everything the extension does, more slowly
(``kafkawire._native.status()`` says which one runs; ``KAFKAWIRE_PURE=1`` forces pure).
"""
from __future__ import annotations

import os
import sys

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


_SRC = "kafkawire/_native_src/"
NATIVE = [Extension("kafkawire._native_records",
                    [_SRC + name for name in ("module.c", "parse.c", "buf_pool.c", "decode.c", "encode.c", "columns.c",
                                                  "columns_fast.c", "crc32c.c",
                                                  "message_programs.c", "message_decode.c", "message_encode.c",
                                                  "message_methods.c", "dump_json.c", "dump_lines.c", "capture.c")],
                    depends=[_SRC + "records.h", _SRC + "columns.h", _SRC + "message.h", _SRC + "dump_text.h"],
                    extra_compile_args=["-O3", "-std=gnu11", "-Wall", "-Wno-missing-field-initializers"])]

setup(ext_modules=[] if os.environ.get("KAFKAWIRE_PURE") == "1" else NATIVE,
      cmdclass={"build_ext": OptionalBuildExt})
