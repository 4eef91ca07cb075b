"""The README's first command, end to end: `kafkawire main` on a fresh directory."""
import os
import re
import subprocess
import sys


def _without_java(tmp_path) -> dict:
    """The job's environment on a machine without Java (an empty PATH, no JAVA_HOME): the read
    step then reads with the Spark data source's task reader, not a JVM (tests/spark covers the
    step with Spark, on the test session's SparkSession, for less than a JVM start)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(empty)
    return env


def test_the_main_job_runs_a_quorum_fails_over_and_dumps_the_log(tmp_path):
    data = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "main", "--data-dir", str(data)],
                            capture_output=True, text=True, timeout=240, env=_without_java(tmp_path))
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:]
    # The first election may need a second epoch (a split vote on a loaded machine): any epoch.
    first = int(re.search(r"^leader: node (\d) in epoch \d+$", out, re.M).group(1))
    assert re.search(r"^broker 100 registered with broker epoch \d+ and unfenced; topic demo-events created", out, re.M)
    statuses = re.findall(r"^LeaderId:\s+(\d+)$", out, re.M)
    assert len(statuses) == 2 and int(statuses[0]) == first and int(statuses[1]) != first
    assert f"node {first} exited with 0" in out
    rows = [line.split("\t") for line in out.splitlines() if re.match(r"^\d\s+\t", line)]
    assert sorted(r[6].strip() for r in rows) == ["Follower", "Follower", "Leader"]
    # The dump of the new leader's log shows what the controller wrote (an unfenced broker is a
    # BrokerRegistrationChangeRecord at this metadata.version, as Kafka writes it).
    for record in ("FEATURE_LEVEL_RECORD", "REGISTER_CONTROLLER_RECORD", "REGISTER_BROKER_RECORD",
                   "BROKER_REGISTRATION_CHANGE_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "NO_OP_RECORD"):
        assert f'"type":"{record}"' in out, record
    assert "LeaderChange:" in out
    assert (data / "node-1" / "meta.properties").exists()
    # The combined node (broker and controller in one process): kafka-python produced to it, a
    # consumer in a group read every record back, in order, and committed; a read_committed
    # consumer read the committed transaction's records, not the aborted one's.
    assert re.findall(r"^produced order-(\d) to demo-orders-0 at offset (\d)$", out, re.M) == \
        [(str(i), str(i)) for i in range(5)]
    assert re.findall(r"^consumed offset (\d): order-(\d) = \d items$", out, re.M) == [(str(i), str(i)) for i in range(5)]
    assert "group demo-billing committed offset 5 of demo-orders-0" in out
    assert "transaction committed: paid-1, paid-2\ntransaction aborted: cancelled-3\n" in out
    assert "read_committed consumer read: paid-1, paid-2\n" in out
    assert "00000000000000000000.log" in out and "node 1 stopped with 0" in out
    # The stopped node's directory read as Spark reads it, read_committed: without Java, by the
    # data source's own planning and task reader, which read what the consumer read.
    assert re.search(r"^not with Spark: (no Java runtime|pyspark is not installed)", out, re.M), out[-2000:]
    reader = "the Spark data source's task reader, without Spark"
    assert f"read with {reader}: paid-1, paid-2\nread with {reader}: the same records as the read_committed " \
        f"consumer\n" in out


def _node_pids(data) -> set[int]:
    """The server-start processes whose command line names a config file under ``data``."""
    found = subprocess.run(["pgrep", "-f", f"server-start {data}"], capture_output=True, text=True)
    return {int(p) for p in found.stdout.split()}


def _wait_until(predicate, timeout_s: float) -> bool:
    import time
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def _foreground_job(data, env):
    proc = subprocess.Popen([sys.executable, "-m", "kafkawire.tools.cli", "main", "--data-dir", str(data), "--foreground"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    for line in proc.stdout:              # bounded by the job's own 60 s waits
        lines.append(line)
        if "running in the foreground" in line:
            break
    assert _wait_until(lambda: _node_pids(data), 30), "".join(lines)
    return proc


import pytest  # noqa: E402


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGKILL"])     # SIGHUP takes SIGTERM's path
def test_no_node_outlives_the_foreground_job(tmp_path, signame):
    import signal
    data = tmp_path / "demo"
    proc = _foreground_job(data, _without_java(tmp_path))
    try:
        proc.send_signal(getattr(signal, signame))
        proc.wait(timeout=60)
        # SIGTERM and SIGHUP stop the nodes on the way out; after SIGKILL the nodes are told by
        # the kernel (PR_SET_PDEATHSIG) and stop by themselves.
        assert _wait_until(lambda: not _node_pids(data), 30), f"nodes still running: {_node_pids(data)}"
    finally:
        for pid in _node_pids(data):
            subprocess.run(["kill", "-9", str(pid)])
        if proc.poll() is None:
            proc.kill()


def test_the_broker_step_on_three_combined_nodes(tmp_path, monkeypatch, capsys):
    """`kafkawire main --brokers 3`'s step, in this process (the quorum steps before it are the
    test above's): three combined nodes, a three-voter quorum of brokers; both topics created with
    replication factor 3 and every replica in sync; produced with acks=all, consumed in a group,
    the transactions; each node's directory holds the transactions' partition, and the leader's,
    read as Spark reads it (without Java here), holds what the read_committed consumer read."""
    pytest.importorskip("kafka", reason="the broker step uses kafka-python: pip install -e '.[dev]'")
    pytest.importorskip("pyarrow", reason="the read step builds Arrow batches: pip install -e '.[dev]'")
    from kafkawire.tools.main_broker import run_broker_step, start_combined_nodes
    from kafkawire.tools.main_read import SparkStart
    monkeypatch.setenv("PATH", str(tmp_path))           # no java: the task reader reads
    monkeypatch.delenv("JAVA_HOME", raising=False)
    base = tmp_path / "combined"
    nodes = start_combined_nodes(str(base), 3)
    try:
        run_broker_step(nodes, lambda text: print(f"=== {text}"), SparkStart("."))
    finally:
        nodes.kill()
    out = capsys.readouterr().out
    assert "=== 3 combined nodes: a 3-voter quorum whose voters are also brokers" in out, out
    for topic in ("demo-orders", "demo-payments"):
        assert re.search(rf"^created {topic}: 1 partition, replicas \[1, 2, 3\], leader [123], in sync \[1, 2, 3\]$",
                         out, re.M), out
    assert re.findall(r"^consumed offset (\d): order-(\d) = \d items$", out, re.M) == [(str(i), str(i)) for i in range(5)]
    assert "group demo-billing committed offset 5 of demo-orders-0" in out
    assert [line for line in out.splitlines() if re.match(r"^node \d stopped with", line)] == \
        [f"node {i} stopped with 0" for i in (1, 2, 3)]
    for i in (1, 2, 3):
        assert (base / f"node-{i}" / "demo-payments-0" / "00000000000000000000.log").stat().st_size > 0
    assert re.search(r"^log directory: .*/combined/node-[123]$", out, re.M), out
    reader = "the Spark data source's task reader, without Spark"
    assert "not with Spark: no Java runtime" in out
    assert f"read with {reader}: paid-1, paid-2\nread with {reader}: the same records as the read_committed " \
        f"consumer\n" in out
