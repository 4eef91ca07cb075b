"""The README's first command: regenerate the codecs from schemas/ and print what they support."""
from __future__ import annotations

import argparse
import importlib
import sys

COMMAND = "main"
HELP = "the main job: regenerate the codecs from schemas/ and print the supported APIs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="fail instead of rewriting if the committed codecs differ from schemas/")


def run(args: argparse.Namespace) -> int:
    from codegen.cli import DEFAULT_OUT, DEFAULT_SCHEMAS
    from codegen.generate import generate, stale_files, write_outputs

    outputs = generate([DEFAULT_SCHEMAS])
    stale = stale_files(outputs, DEFAULT_OUT)
    if args.check and stale:
        print(f"kafkawire main: {len(stale)} generated modules differ from schemas/: {', '.join(stale[:5])}",
              file=sys.stderr)
        return 1
    write_outputs(outputs, DEFAULT_OUT)
    print(f"codegen: {len(outputs) - 1} schemas in {DEFAULT_SCHEMAS} -> {DEFAULT_OUT} "
          f"({len(stale)} modules rewritten)")
    importlib.invalidate_caches()
    from tools.api_versions import format_api_versions
    print(format_api_versions("kafkawire (local codecs)"))
    return 0
