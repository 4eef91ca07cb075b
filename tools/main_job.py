"""The README's first command: regenerate the codecs from schemas/ and print what they support."""
from __future__ import annotations

import argparse
import importlib
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="fail instead of rewriting if the committed codecs differ from schemas/")


def run(args: argparse.Namespace) -> int:
    from codegen.cli import DEFAULT_OUT, DEFAULT_SCHEMAS
    from codegen.generate import generate, write_package

    outputs = generate([DEFAULT_SCHEMAS])
    stale = [name for name, text in outputs.items()
             if not (DEFAULT_OUT / name).exists() or (DEFAULT_OUT / name).read_text(encoding="utf-8") != text]
    if args.check and stale:
        print(f"kafkawire main: {len(stale)} generated modules differ from schemas/: {', '.join(sorted(stale)[:5])}",
              file=sys.stderr)
        return 1
    write_package([DEFAULT_SCHEMAS], DEFAULT_OUT)
    print(f"codegen: {len(outputs) - 1} schemas in {DEFAULT_SCHEMAS} -> {DEFAULT_OUT} "
          f"({len(stale)} modules rewritten)")
    importlib.invalidate_caches()
    from tools.api_versions import format_api_versions
    print(format_api_versions("kafkawire (local codecs)"))
    return 0
