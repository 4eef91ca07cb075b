"""The `kafkawire` command: one entry point, with subcommands named like Kafka's own tools.

Each subcommand is a module that defines ``COMMAND`` (its name), ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; they are listed in ``SUBCOMMANDS``.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Modules, in the order `kafkawire --help` lists them. A new tool adds one line here.
SUBCOMMANDS = (
    "tools.main_job",
    "codegen.cli",
    "tools.api_versions",
    "tools.dump_log",
    "tools.metadata_shell",
    "tools.storage",
    "tools.server_start",
    "tools.test_raft_server",
    "tools.metadata_quorum",
    "tools.features",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafkawire", description="Kafka's wire protocol and KRaft, in Python.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        module = importlib.import_module(name)
        p = sub.add_parser(module.COMMAND, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
