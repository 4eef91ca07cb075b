"""The fixtures themselves: Kafka's storage tool, a Kafka controller, and a Kafka tool against it."""
import re

from tests.interop.kafka_procs import METADATA_QUORUM, STORAGE_TOOL


def test_random_uuid_is_a_kafka_uuid(kafka_tool):
    result = kafka_tool(STORAGE_TOOL, "random-uuid", check=True)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}\n", result.stdout), result.stdout


def test_standalone_kafka_controller_leads_and_describes_itself(kafka_controller, kafka_tool):
    node = kafka_controller(1, "MkU3OEVBNTcwNTJENDM2Qg", "--standalone")
    status = kafka_tool(METADATA_QUORUM, "--bootstrap-controller", node.controller_address,
                        "describe", "--status", check=True, timeout=60).stdout
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["ClusterId"].strip() == "MkU3OEVBNTcwNTJENDM2Qg"
    assert fields["LeaderId"].strip() == "1"
    assert int(fields["HighWatermark"]) > 0
    node.kill()
    assert not node.alive()


def test_a_kafka_broker_joins_a_kafka_controller(kafka_controller, kafka_broker, kafka_tool):
    controller = kafka_controller(1, "MkU3OEVBNTcwNTJENDM2Qg", "--standalone")
    broker = kafka_broker(2, "MkU3OEVBNTcwNTJENDM2Qg", controller.controller_address)
    status = kafka_tool(METADATA_QUORUM, "--bootstrap-controller", controller.controller_address,
                        "describe", "--replication", check=True, timeout=60).stdout
    assert any(line.split()[0] == "2" and line.split()[-1] == "Observer" for line in status.splitlines()[1:]), status
    assert broker.alive()


def test_a_tool_run_in_the_shared_jvm_answers_as_in_a_jvm_of_its_own(kafka_libs, tmp_path):
    """A run in the shared tool JVM (tool_runs.run_in_shared_jvm, what run_kafka_tool uses for
    kafka_procs.SHARED_JVM_TOOLS) gives what the tool's own JVM gives:
    the exit status Exit.exit passes, stdout, and stderr with the tool's log lines (log4j follows the
    run's System.err), up to log timestamps, retry counts and the stack frames below the tool."""
    from tests.interop.kafka_procs import CONFIGS, TOPICS, run_in_own_jvm
    from tests.interop.tool_runs import run_in_shared_jvm

    short = tmp_path / "short-timeouts.properties"
    short.write_text("default.api.timeout.ms=1500\nrequest.timeout.ms=1000\n")
    nobody = ("--bootstrap-server", "127.0.0.1:1")

    def comparable(result):
        lines = [re.sub(r"^\[[^]]+\] ", "", line) for line in result.stderr.splitlines()
                 if not line.startswith("\tat ") and "could not be established" not in line]
        return result.returncode, result.stdout, lines

    for run in [(CONFIGS, *nobody, "--describe"), (TOPICS, *nobody, "--list", "--command-config", short)]:
        own, shared = run_in_own_jvm(run[0], run[1:], 60, None), run_in_shared_jvm(*run, timeout=60)
        assert own.returncode == 1 and comparable(shared) == comparable(own), run
    assert "ERROR org.apache.kafka.common.errors.TimeoutException" in shared.stderr
