"""`kafkawire pcap CAPTURE`: Kafka frames in a pcap/pcapng, summarised, as JSON, or checked for conformance.

The reading is kafkawire.capture.read_capture's; this module only chooses and formats.

One line per frame, like tshark's Kafka summary: packet number, time since the first packet,
TCP stream, endpoints, API, version, request or response, correlation id, client id, size and
the non-zero error codes in the body. --json prints each frame as one JSON object (the header
and body in Kafka's JsonConverter form). --check decodes and re-encodes every body and exits 1
if any is not byte-identical or is of an API/version we do not know.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from kafkawire.capture.records import records_of
from kafkawire.protocol import framing
from kafkawire.protocol.apis import api_table

COMMAND = "pcap"
HELP = "decode Kafka traffic in a pcap/pcapng capture; --check for byte-exact conformance"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", type=Path, help="a .pcap or .pcapng file (tcpdump, dumpcap, Wireshark)")
    parser.add_argument("--port", default=None,
                        help="comma-separated Kafka ports (default: 9092,9093,9094,19092,29092 and any stream "
                             "whose first bytes parse as a Kafka request)")
    parser.add_argument("--json", action="store_true", help="one JSON object per frame")
    parser.add_argument("--check", action="store_true",
                        help="re-encode every frame; exit 1 if one differs or is unknown")
    parser.add_argument("--api", default=None, help="only these APIs: comma-separated names or keys (Fetch,Produce,18)")
    parser.add_argument("--decode-records", action="store_true",
                        help="also decode record batches (and __cluster_metadata, __consumer_offsets, "
                             "__transaction_state, __share_group_state records)")


def _ports(text: str | None) -> tuple[int, ...] | None:
    """The --port list; None (read_capture's default ports, and any port) without one."""
    if text is None:
        return None
    try:
        ports = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise ValueError(f"--port {text!r}: expected comma-separated port numbers") from None
    if not ports or any(not 0 < p < 65536 for p in ports):
        raise ValueError(f"--port {text!r}: ports are 1-65535")
    return ports


def _api_filter(text: str | None) -> set[int] | None:
    if text is None:
        return None
    by_name = {api.name.lower(): key for key, api in api_table().items()}
    keys = set()
    for item in (part.strip() for part in text.split(",") if part.strip()):
        if item.lstrip("-").isdigit():
            keys.add(int(item))
        elif item.lower() in by_name:
            keys.add(by_name[item.lower()])
        else:
            raise ValueError(f"--api: no API named {item!r} (names as in `kafkawire api-versions`, or API keys)")
    return keys


def summary_line(f, fast: bool = False) -> str:
    """The frame's line; ``fast`` finds its error codes without its JSON form (the same codes)."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.capture.kafka import endpoint_text
    from kafkawire.capture.check import error_codes
    from kafkawire.capture.fast_check import body_error_codes
    kind = "Request" if f.role == "request" else "Response"
    version = "" if f.api_version is None else f" v{f.api_version}"
    line = (f"{f.packet:>6} {f.time:>11.6f} {f.stream:>3} {endpoint_text(f.src)} → {endpoint_text(f.dst)} "
            f"Kafka {f.api_name if f.api_key is not None else '?'}{version} {kind} corr={f.correlation_id}")
    if f.role == "request" and f.client_id is not None:
        line += f" client_id={f.client_id!r}"
    line += f" len={len(f.payload) + 4}"
    if f.body is not None:
        codes = body_error_codes(f.body, f.api_version) if fast else error_codes(f.body.to_json(f.api_version))
        if codes:
            line += " errors=" + ",".join(str(c) for c in sorted(set(codes)))
    if f.status != "decoded":
        line += f" [{f.status}: {f.problem}]"
    elif f.check == "differs":
        line += f" [differs: {f.difference}]"
    return line


def frame_json(f, decode_records: bool) -> dict:
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.capture.check import error_codes
    out = {"packet": f.packet, "time": round(f.time, 6), "stream": f.stream, "src": list(f.src), "dst": list(f.dst),
           "role": f.role, "apiKey": f.api_key, "apiName": f.api_name if f.api_key is not None else None,
           "apiVersion": f.api_version, "correlationId": f.correlation_id, "clientId": f.client_id,
           "size": len(f.payload) + 4, "status": f.status}
    if f.problem:
        out["problem"] = f.problem
    if f.check:
        out["check"] = f.check
    if f.difference and f.status == "decoded":
        out["difference"] = f.difference
    if f.body is not None:
        version = (framing.request_header_version if f.role == "request" else framing.response_header_version)(
            f.api_key, f.api_version)
        out["header"] = f.header.to_json(version)
        out["body"] = f.body.to_json(f.api_version)
        out["errorCodes"] = sorted(set(error_codes(out["body"])))
        if decode_records:
            out["records"] = records_of(f.body, f.api_version)
    return out


def check_summary(frames) -> tuple[str, bool]:
    counted = [f for f in frames if f.status != "unpaired"]
    identical = sum(1 for f in counted if f.check == "identical")
    differ = [f for f in counted if f.check == "differs"]
    unknown = [f for f in counted if f.status == "unknown"]
    unpaired = len(frames) - len(counted)
    line = f"{len(counted)} frames, {identical} identical, {len(differ)} differ, {len(unknown)} unknown"
    if unpaired:
        line += f" ({unpaired} responses whose request is not in the capture were not checked)"
    return line, bool(differ or unknown)


def run(args: argparse.Namespace) -> int:
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.capture.read import collector_paused
    with collector_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from kafkawire.capture import CaptureError, read_capture
    try:
        ports = _ports(args.port)
        wanted = _api_filter(args.api)
        capture = read_capture(args.capture, ports=ports, check=args.check)
        frames, problems, fast = capture.frames, capture.problems, capture.fast
    except (ValueError, CaptureError) as exc:
        print(f"kafkawire pcap: {exc}", file=sys.stderr)
        return 2
    if wanted is not None:
        frames = [f for f in frames if f.api_key in wanted]
    for f in frames:
        print(json.dumps(frame_json(f, args.decode_records), default=str) if args.json else summary_line(f, fast))
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if not args.check:
        return 0
    line, failed = check_summary(frames)
    for f in frames:
        if f.check == "differs" or f.status == "unknown":
            print(f"  stream {f.stream} packet {f.packet} {f.role} {f.api_name} v{f.api_version} "
                  f"corr={f.correlation_id}: {f.difference or f.problem}", file=sys.stderr if args.json else sys.stdout)
    print(line, file=sys.stderr if args.json else sys.stdout)
    return 1 if failed else 0
