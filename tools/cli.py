"""The `kafkawire` command: one entry point, with subcommands named like Kafka's own tools."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafkawire", description="Kafka's wire protocol and KRaft, in Python.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    from codegen import cli as codegen_cli
    p = sub.add_parser("codegen", help="regenerate message codecs from Kafka JSON schemas")
    codegen_cli.add_arguments(p)
    p.set_defaults(run=codegen_cli.run)

    from tools import api_versions
    p = sub.add_parser("api-versions", help="print the supported APIs and versions, as kafka-broker-api-versions does")
    api_versions.add_arguments(p)
    p.set_defaults(run=api_versions.run)

    from tools import main_job
    p = sub.add_parser("main", help="the main job: regenerate the codecs from schemas/ and print the supported APIs")
    main_job.add_arguments(p)
    p.set_defaults(run=main_job.run)

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
