"""`kafkawire codegen SCHEMA_DIR... --out DIR`: regenerate message codecs from Kafka schemas."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .generate import write_package
from .model import SchemaError

DEFAULT_SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "kafkawire" / "messages"

COMMAND = "codegen"
HELP = "regenerate message codecs from Kafka JSON schemas"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("schema_dirs", nargs="*", type=Path,
                        help=f"directories of Kafka message JSON schemas (default: {DEFAULT_SCHEMAS})")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"the package directory to write (default: {DEFAULT_OUT})")


def run(args: argparse.Namespace) -> int:
    schema_dirs = args.schema_dirs or [DEFAULT_SCHEMAS]
    out = args.out or DEFAULT_OUT
    try:
        written = write_package(schema_dirs, out)
    except SchemaError as exc:
        print(f"kafkawire codegen: {exc}", file=sys.stderr)
        return 2
    print(f"generated {len(written) - 1} message modules into {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``kafkawire codegen [SCHEMA_DIR...] [--out DIR]``: regenerate the codecs (by default from
    ``schemas/`` into ``kafkawire/messages``). Returns the exit status: 0, or 2 for a bad schema.
    """
    parser = argparse.ArgumentParser(prog="kafkawire codegen", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
