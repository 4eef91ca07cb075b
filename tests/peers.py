"""Real peers the tests run when this machine has them (Debian packages kcat and tshark):
each helper skips the calling test, saying why, when its program is missing (under CI=true it
fails it instead: tests/conftest.py, unavailable)."""
from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager

from tests.conftest import unavailable


def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        unavailable("kcat is not installed (Debian package kcat: apt-get install -y kcat)")
    return path


@contextmanager
def loopback_capture(port: int, capture_path):
    """dumpcap on lo for ``tcp port PORT`` into ``capture_path`` while the block runs; skips
    when tshark/dumpcap are missing or this machine does not allow capturing."""
    dumpcap = shutil.which("dumpcap")
    if shutil.which("tshark") is None or dumpcap is None:
        unavailable("tshark/dumpcap are not installed (Debian package tshark)")
    proc = subprocess.Popen([dumpcap, "-i", "lo", "-f", f"tcp port {port}", "-w", str(capture_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 15)
        started = proc.stderr.readline() if ready else "(dumpcap said nothing for 15 s)"
        if "Capturing on" not in started:
            proc.kill()
            unavailable(f"dumpcap cannot capture on lo here: {started.strip() or proc.stderr.read()[:200]}")
        _until_capturing(port, capture_path, proc)
        yield
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=15)


CAPTURE_WAIT_S = 30
MARKER_CLIENT = "capture-marker"


def _until_capturing(port: int, capture_path, proc) -> None:
    """Connect to the port (and close) until the capture file holds packets beyond its header:
    dumpcap says "Capturing on" before its filter is in place, so on a loaded machine the first
    packets of the block would be missed (a fixed 0.5 s pause only made that less likely)."""
    header, deadline = 0, time.monotonic() + CAPTURE_WAIT_S
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        except OSError:
            pass                # nothing listens yet: the SYN is captured all the same
        time.sleep(0.05)
        size = os.path.getsize(capture_path) if os.path.exists(capture_path) else 0
        if header and size > header:
            return
        header = header or size             # dumpcap writes its header after "Capturing on"
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            unavailable(f"dumpcap captured nothing on 127.0.0.1:{port} within {CAPTURE_WAIT_S} s")


def until_captured(port: int, capture_path) -> None:
    """One last ApiVersions exchange with the Kafka listener on ``port``, then wait (bounded)
    until the capture file holds its response: dumpcap hands packets over in blocks, and
    stopping it at once could lose the last clients' frames."""
    from kafkawire.capture import read_capture
    from kafkawire.messages.api_versions_request import ApiVersionsRequest
    from kafkawire.protocol import framing
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(framing.encode_request(ApiVersionsRequest(client_software_name="marker",
                                                               client_software_version="1"), 3, 1, MARKER_CLIENT))
        assert conn.recv(4), "no ApiVersions response"
    deadline = time.monotonic() + CAPTURE_WAIT_S
    while True:
        try:
            frames = read_capture(capture_path, ports=[port]).frames
        except Exception:       # a block dumpcap is still writing
            frames = []
        streams = {f.stream for f in frames if f.role == "request" and f.client_id == MARKER_CLIENT}
        if any(f.stream in streams and f.role == "response" for f in frames):
            return
        assert time.monotonic() < deadline, f"the capture did not hold the last exchange within {CAPTURE_WAIT_S} s"
        time.sleep(0.1)
