"""The README's first command, end to end: `kafkawire main` on a fresh directory."""
import re
import subprocess
import sys


def test_the_main_job_runs_a_quorum_fails_over_and_dumps_the_log(tmp_path):
    data = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "tools.cli", "main", "--data-dir", str(data)],
                            capture_output=True, text=True, timeout=240)
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:]
    first = int(re.search(r"^leader: node (\d) in epoch 1$", out, re.M).group(1))
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
