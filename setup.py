"""The optional C extension of the native record path (issue 26); everything else is in
pyproject.toml.

The extension is optional: without a C compiler or Python headers the build warns once and
installs the pure-Python package, which does everything the extension does, more slowly
(``kafkawire._native.status()`` says which one runs; ``KAFKAWIRE_PURE=1`` forces pure).

So are its codecs. lz4 and zstd are compiled from the sources under kafkawire/_native_src/vendor
(the very liblz4 and libzstd releases the pure path's cramjam bundles, so both paths write the
same bytes; statically, their symbols hidden: the extension needs no system liblz4 or libzstd).
zlib (gzip) and snappy are compiled in only when a probe finds their header and library (Debian:
zlib1g-dev, libsnappy-dev). A codec left out is compressed and decompressed by the pure-Python
path (cramjam, zlib), and ``status()`` names the codecs that run in C.
``KAFKAWIRE_NATIVE_CODECS=gzip,lz4`` (or ``none``) limits both.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import platform
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor

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
            self._add_vendored(ext)
            ext.define_macros.append(("KW_SOURCE_DIGEST", f'"{_source_digest()}"'))
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001 - CompileError, LinkError, missing headers
            if os.environ.get("KAFKAWIRE_REQUIRE_NATIVE") == "1":
                raise
            self._warn(e)

    def _add_vendored(self, ext):
        """Compile in the vendored codecs KAFKAWIRE_NATIVE_CODECS allows; one that fails to
        compile is left to the pure path (a warning)."""
        libraries = {name: spec for name, spec in _vendored(self.compiler).items() if name in _allowed_codecs()}
        built = _compile_vendored(self.compiler, libraries, _vendored_build_dir(self.compiler, self.build_temp))
        for name, objects in built.items():
            if isinstance(objects, Exception):  # CompileError: the codec stays in Python
                if os.environ.get("KAFKAWIRE_REQUIRE_NATIVE") == "1":
                    raise objects
                sys.stderr.write(f"WARNING: kafkawire's vendored {name} was not compiled ({objects}); "
                                 f"{name} runs in Python.\n")
                continue
            ext.extra_objects.extend(objects)
            ext.define_macros.extend([(CODEC_MACROS[name], "1"), *_VISIBILITY])
            ext.include_dirs.append(_VENDOR[name])
            sys.stderr.write(f"kafkawire: {name} (de)compressed in C (vendored)\n")

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


# (name, macro, header, library, a call that needs the library to link): the system libraries
CODECS = (("gzip", "KW_HAVE_ZLIB", "zlib.h", "z", "inflateEnd(0)"),
          ("snappy", "KW_HAVE_SNAPPY", "snappy-c.h", "snappy", "snappy_uncompressed_length(0, 0, 0)"))
CODEC_MACROS = {"lz4": "KW_HAVE_LZ4", "zstd": "KW_HAVE_ZSTD"}
_VENDOR = {"lz4": "kafkawire/_native_src/vendor/lz4", "zstd": "kafkawire/_native_src/vendor/zstd/lib"}
# The libraries' public functions hidden like the rest (their headers would make them visible):
# the extension exports its init function only, and cannot clash with another liblz4 or libzstd
# loaded into the process.
_VISIBILITY = [("LZ4LIB_VISIBILITY", ""), ("ZSTDLIB_VISIBLE", ""), ("ZSTDERRORLIB_VISIBLE", ""),
               ("ZDICTLIB_VISIBLE", "")]
# What the libraries' own Makefiles compile with: -O3 and no debug information (Python's -g would
# make zstd, most of the build's time, take 60% longer to compile); their warnings are theirs.
_VENDOR_FLAGS = ["-O3", "-g0", "-fvisibility=hidden", "-w"]


def _allowed_codecs() -> list[str]:
    return os.environ.get("KAFKAWIRE_NATIVE_CODECS", "gzip,snappy,lz4,zstd").replace(" ", "").split(",")


def _vendored(compiler) -> dict:
    """name: (sources, macros) of each vendored library. zstd is built as its lib/Makefile builds
    it without legacy formats, threads or dictionary builder; its x86-64 Huffman decoder in
    assembly only where the compiler takes GNU assembly (elsewhere zstd's C loop)."""
    zstd = sorted(glob.glob(os.path.join(_VENDOR["zstd"], "*", "*.c")))
    zstd_macros = [("XXH_NAMESPACE", "ZSTD_"), ("ZSTD_LEGACY_SUPPORT", "0"), *_VISIBILITY]
    if compiler.compiler_type == "unix" and platform.machine().lower() in ("x86_64", "amd64"):
        zstd += glob.glob(os.path.join(_VENDOR["zstd"], "decompress", "*.S"))
    else:
        zstd_macros.append(("ZSTD_DISABLE_ASM", "1"))
    lz4 = [os.path.join(_VENDOR["lz4"], name) for name in ("lz4.c", "lz4hc.c")]
    return {"lz4": (lz4, [("XXH_NAMESPACE", "LZ4_"), *_VISIBILITY]), "zstd": (zstd, zstd_macros)}


def _vendored_build_dir(compiler, build_temp: str) -> str:
    """Where the vendored libraries' object files go: under the checkout's build/ (ignored by git),
    in a directory named by a digest of what they are compiled from (every vendored file, this
    file, the compiler, the platform), so that the next install from the same checkout reuses
    them. An editable install (the README's commands, CI runs two) builds in a new temporary
    directory each time and would otherwise compile zstd again: about 40 s of a 50 s install.
    Where the checkout is not writable (or not one: an sdist unpacked by pip), build_temp."""
    root = os.path.dirname(os.path.abspath(__file__))
    if not os.path.exists(os.path.join(root, ".git")) or not os.access(root, os.W_OK):
        return os.path.join(build_temp, "vendor")
    digest = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(root, _SRC, "vendor", "**", "*.*"), recursive=True)) + [__file__]:
        with open(path, "rb") as f:
            digest.update(os.path.relpath(path, root).encode() + b"\0" + f.read())
    digest.update(repr((compiler.compiler_so, sysconfig.get_platform(), sys.implementation.cache_tag,
                        _VENDOR_FLAGS, os.environ.get("CFLAGS"))).encode())
    return os.path.join(root, "build", "vendored-" + digest.hexdigest()[:16])


def _compile_vendored(compiler, libraries: dict, build_dir: str) -> dict:
    """name: the object files of each library of ``libraries`` (name: (sources, macros)), or the
    error compiling one of them. The files are compiled several at a time, the largest first
    (they are most of the build's time), each unless its object file is newer than every
    vendored file and this one already (rebuilds after a change to our own sources)."""
    if ".S" not in compiler.src_extensions:
        compiler.src_extensions.append(".S")
    vendored = glob.glob(os.path.join(_SRC, "vendor", "**", "*.*"), recursive=True)
    newest = max(os.path.getmtime(path) for path in [*vendored, __file__])

    def one(job):
        name, source, macros = job
        obj, = compiler.object_filenames([source], output_dir=build_dir)
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        try:
            if not (os.path.exists(obj) and os.path.getmtime(obj) >= newest):
                compiler.compile([source], output_dir=build_dir, macros=macros, extra_postargs=_VENDOR_FLAGS)
        except Exception as e:  # noqa: BLE001 - CompileError: reported for its library
            return name, e
        return name, obj

    jobs = sorted(((name, source, macros) for name, (sources, macros) in libraries.items() for source in sources),
                  key=lambda job: -os.path.getsize(job[1]))
    built: dict = {name: [] for name in libraries}
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        for name, obj in pool.map(one, jobs):
            if isinstance(obj, Exception) or isinstance(built[name], Exception):
                built[name] = built[name] if isinstance(built[name], Exception) else obj
            else:
                built[name].append(obj)
    return built


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
    """Compile in each system codec library that is there (and KAFKAWIRE_NATIVE_CODECS allows)."""
    allowed = _allowed_codecs()
    found = []
    for name, macro, header, library, call in CODECS:
        if name in allowed and _links(compiler, header, library, call):
            ext.define_macros.append((macro, "1"))
            ext.libraries.append(library)
            found.append(name)
    sys.stderr.write(f"kafkawire: system codec libraries used: {', '.join(found) or 'none'}\n")


_SRC = "kafkawire/_native_src/"
NATIVE = [Extension("kafkawire._native_records",
                    [_SRC + name for name in ("module.c", "parse.c", "buf_pool.c", "decode.c", "encode.c", "columns.c",
                                                  "columns_fast.c", "crc32c.c", "decompress.c", "compress.c",
                                                  "message_programs.c", "message_decode.c", "message_encode.c",
                                                  "message_methods.c", "struct_alloc.c", "dump_json.c", "dump_lines.c", "capture.c",
                                                  "reassemble.c")],
                    depends=[_SRC + "records.h", _SRC + "codecs.h", _SRC + "columns.h", _SRC + "message.h", _SRC + "dump_text.h"],
                    extra_compile_args=["-O3", "-std=gnu11", "-Wall", "-Wno-missing-field-initializers"])]

setup(ext_modules=[] if os.environ.get("KAFKAWIRE_PURE") == "1" else NATIVE,
      cmdclass={"build_ext": OptionalBuildExt})
