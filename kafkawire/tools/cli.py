"""The `kafkawire` command: one entry point, with subcommands named like Kafka's own tools.

Each subcommand is a module that defines ``COMMAND`` (its name), ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; they are listed in ``SUBCOMMANDS`` by name.

As Kafka's tools do, a usage error prints the error and the usage of the command it concerns
and exits 1, and every command takes ``--version`` (which also says whether the native path or
pure Python runs, kafkawire._native). A feature whose optional package is missing ends the
command with one line naming the extra to install (kafkawire._extras), not a traceback.

A command line that names its command imports that command's module only (and the version
line is computed only for ``--version``): importing every tool and importlib.metadata cost
`kafkawire server-start` about a fifth of its start-up (benchmarks/broker_startup.py).
"""
from __future__ import annotations

import argparse
import functools
import importlib
import sys
import warnings

from kafkawire._extras import MissingExtra

# Command name -> module, in the order `kafkawire --help` lists them. A new tool adds one line here.
SUBCOMMANDS = {
    "main": "kafkawire.tools.main_job",
    "codegen": "kafkawire.codegen.cli",
    "api-versions": "kafkawire.tools.api_versions",
    "dump-log": "kafkawire.tools.dump_log",
    "metadata-shell": "kafkawire.tools.metadata_shell",
    "storage": "kafkawire.tools.storage",
    "server-start": "kafkawire.tools.server_start",
    "test-raft-server": "kafkawire.tools.test_raft_server",
    "metadata-quorum": "kafkawire.tools.metadata_quorum",
    "features": "kafkawire.tools.features",
    "pcap": "kafkawire.tools.pcap",
}
KAFKA_VERSION = "4.3.1"        # the Apache Kafka release whose wire format and tools we follow
USAGE_ERROR = 1                # Kafka's CommandLineUtils.printUsageAndExit


@functools.cache
def version_line() -> str:
    """Read once: every subcommand's --version shows it, and reading the installed package's
    metadata a dozen times was a tenth of a second of every command's start."""
    from importlib import metadata
    from kafkawire._native import status as native_status
    try:
        ours = metadata.version("kafkawire")
    except metadata.PackageNotFoundError:
        ours = "unknown"
    return f"kafkawire {ours} (Apache Kafka {KAFKA_VERSION} protocol and tools; {native_status()})"


class KafkaStyleParser(argparse.ArgumentParser):
    """argparse, but a usage error exits 1 with this parser's own usage, as Kafka's tools do."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


class _VersionAction(argparse.Action):
    """argparse's "version" action, with the line computed only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show the version (and whether the native path runs) and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_line())
        parser.exit()


def build_parser(only: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and the commands' parsers: every command, or the one named ``only``."""
    parser = KafkaStyleParser(prog="kafkawire", description="Kafka's wire protocol and KRaft, in Python.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=KafkaStyleParser)
    commands = {}
    for command, name in SUBCOMMANDS.items():
        if only is not None and command != only:
            continue
        module = importlib.import_module(name)
        p = sub.add_parser(module.COMMAND, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        if not any("--version" in action.option_strings for action in p._actions):
            p.add_argument("--version", action=_VersionAction)
        p.set_defaults(run=module.run)
        commands[module.COMMAND] = p
    return parser, commands


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    argv = sys.argv[1:] if argv is None else argv
    # The command is the first argument (the top level has only -h and --version).
    parser, commands = build_parser(only=argv[0] if argv and argv[0] in SUBCOMMANDS else None)
    args, extras = parser.parse_known_args(argv)
    if extras:
        # A flag the subcommand lacks is its error, told with its usage (argparse would print
        # the top-level usage instead).
        _chosen(commands[args.command], args).error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost parser that ``args`` went through (``storage format``, not ``storage``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choice = getattr(args, action.dest, None)
            if choice in action.choices:
                return _chosen(action.choices[choice], args)
    return parser


def _native_notice_on_one_line() -> None:
    """The once-per-process notice that the C extension is not in use (its text names kafkawire),
    as one line instead of Python's ``file:line: Category: message`` and the source line (code a
    command's user never wrote). Matched by name: importing kafkawire._native here would load
    the extension for commands that do not need it. Other warnings keep Python's form."""
    python_form = warnings.formatwarning

    def formatwarning(message, category, filename, lineno, line=None):
        if category.__name__ == "NativeUnavailableWarning":
            return f"{message} (KAFKAWIRE_PURE=1 silences this)\n"
        return python_form(message, category, filename, lineno, line)
    warnings.formatwarning = formatwarning


def main(argv: list[str] | None = None) -> int:
    """The ``kafkawire`` command: parse ``argv`` (sys.argv[1:] by default), run the subcommand and
    return its exit status (0 when stdout is closed early, as by ``| head``).
    """
    _native_notice_on_one_line()
    args = parse(argv)
    try:
        return args.run(args)
    except BrokenPipeError:
        return 0
    except MissingExtra as exc:
        # an optional feature without its package: one line naming the extra, no traceback
        print(f"kafkawire {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
