"""Real peers the tests run when this machine has them (Debian packages kcat and tshark):
each helper skips the calling test, saying why, when its program is missing (under CI=true it
fails it instead: tests/conftest.py, unavailable)."""
from __future__ import annotations

import select
import shutil
import signal
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
        # "Capturing on" comes before the capture filter is in place on a loaded machine; the
        # first packets could otherwise be missed.
        time.sleep(0.5)
        yield
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=15)
