"""Print the APIs and versions kafkawire supports, in kafka-broker-api-versions' format."""
from __future__ import annotations

import argparse

COMMAND = "api-versions"
HELP = "print the supported APIs and versions, as kafka-broker-api-versions does"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--include-unstable", action="store_true",
                        help="also count the latest version of APIs whose schema marks it unstable")


def format_api_versions(title: str, include_unstable: bool = False) -> str:
    from kafkawire.protocol.apis import api_table
    lines = [f"{title} -> ("]
    apis = list(api_table().values())
    for i, api in enumerate(apis):
        high = api.max_version
        if api.request.LATEST_VERSION_UNSTABLE and not include_unstable:
            high -= 1
        comma = "," if i < len(apis) - 1 else ""
        lines.append(f"\t{api.name}({api.key}): {api.min_version} to {high} [usable: {high}]{comma}")
    lines.append(")")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    print(format_api_versions("kafkawire (local codecs)", args.include_unstable))
    return 0
