"""`kafkawire main --with-kafka-brokers N`: real Kafka 4.3.1 brokers on the main job's kafkawire
controllers (issue 16). The fixtures' distribution (.kafka-dist) is what the job runs."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import time


def _pids_under(data) -> set[int]:
    """Processes (controllers and broker JVMs) whose command line names a file under ``data``."""
    found = subprocess.run(["pgrep", "-f", str(data)], capture_output=True, text=True)
    return {int(p) for p in found.stdout.split()}


def _job(data, brokers: int):
    return [sys.executable, "-m", "kafkawire.tools.cli", "main", "--with-kafka-brokers", str(brokers),
            "--data-dir", str(data)]


def _start_until_unfenced(data):
    """The job with one broker, read until its broker is unfenced (bounded by the job's own waits,
    60 s + 120 s); then its controllers and broker run under ``data``."""
    proc = subprocess.Popen(_job(data, 1), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if "registered and unfenced" in line:
                break
        assert _pids_under(data), "".join(lines)
    except BaseException:
        _kill_everything(data, proc)
        raise
    return proc, lines


def _wait_until_gone(data, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while _pids_under(data) and time.monotonic() < deadline:
        time.sleep(0.2)


def _kill_everything(data, proc) -> None:
    for pid in _pids_under(data):
        subprocess.run(["kill", "-9", str(pid)])
    if proc.poll() is None:
        proc.kill()


def test_two_kafka_brokers_on_the_main_jobs_controllers_carry_records(kafka_libs, tmp_path):
    data = tmp_path / "demo"
    began = time.monotonic()
    result = subprocess.run(_job(data, 2), capture_output=True, text=True, timeout=300)
    took = time.monotonic() - began
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    assert re.search(r"^brokers \[4, 5\] registered and unfenced", out, re.M), out
    acknowledged = re.findall(r"^  demo-orders-(\d) offset (\d+): order-(\d+)$", out, re.M)
    assert sorted(int(v) for _, _, v in acknowledged) == list(range(10))
    assert len({(p, o) for p, o, _ in acknowledged}) == 10
    assert "produced 10, consumed 10" in out
    assert re.findall(r"^broker (\d) exited with (-?\d+|None)$", out, re.M) == [("4", "143"), ("5", "143")]
    assert (data / "broker-4" / "data" / "demo-orders-0").is_dir()
    assert not _pids_under(data), "a controller or broker outlived the job"
    print(f"\n[main --with-kafka-brokers 2] {took:.1f} s end to end")


def test_sigterm_stops_the_brokers_and_the_controllers(kafka_libs, tmp_path):
    data = tmp_path / "demo"
    proc, lines = _start_until_unfenced(data)
    try:
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=90)
        assert proc.returncode == 130, "".join(lines) + rest
        assert "interrupted: stopping the brokers and the controllers" in rest
        _wait_until_gone(data)
        assert not _pids_under(data), f"still running after SIGTERM: {_pids_under(data)}"
    finally:
        _kill_everything(data, proc)


def test_kill_9_of_the_job_leaves_no_broker_or_controller_behind(kafka_libs, tmp_path):
    """The job cannot clean up after SIGKILL: its children die with it (PR_SET_PDEATHSIG)."""
    data = tmp_path / "demo"
    proc, lines = _start_until_unfenced(data)
    try:
        proc.kill()
        proc.wait(timeout=30)
        _wait_until_gone(data)
        assert not _pids_under(data), f"still running after kill -9 of the job: {_pids_under(data)}"
    finally:
        _kill_everything(data, proc)
