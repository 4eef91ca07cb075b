"""`kafkawire api-versions` against Kafka 4.3.1's BrokerApiVersionsCommand (kafka-broker-api-versions),
text for text, on the same servers (issue 20, item 4):

* a 3-voter kafkawire quorum, through each voter as the bootstrap server (a follower's Metadata
  names the active controller beside itself, so two nodes print, in the order of Kafka's
  HashMap<Node, ...>);
* a real Kafka 4.3.1 broker (every broker API, the "usable" column computed from Kafka 4.3.1's
  ApiKeys on both sides);
* a real Kafka 4.3.1 controller, which has no Metadata API: both fail with
  ``Request METADATA failed on brokers [...]``, exit 1;
* a port nobody listens on: the same failure, and a WARN line per failed attempt on both sides.

Nothing is normalised in stdout. On stderr, log lines (``[date] LEVEL ...``) are set apart from
what the tool prints, and Kafka's Java stack trace after its error line is left out (a kept
difference, README). The tool's idea of Kafka 4.3.1's ApiKeys is also checked against the
jar's schemas, key for key.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkawire.codegen.kafka_api_keys import kafka_apis, module_text
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from tests.interop import kafka_dist
from kafkawire.tools.api_versions import ClientApi, kafka_client_apis

BROKER_API_VERSIONS = "org.apache.kafka.tools.BrokerApiVersionsCommand"
REPO = Path(__file__).resolve().parents[2]
CLUSTER_ID = "TLzTcTRqQLWMRmt0hKa_Gw"
LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (WARN|ERROR|INFO) ")


def ours(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "api-versions", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def printed_errors(stderr: str) -> list[str]:
    """stderr without log lines and without a Java stack trace (its 'java.' line and 'at' lines).
    The bootstrap nodes in ``failed on brokers [...]`` are sorted: Kafka's Cluster shuffles them
    (Collections.shuffle), ours keep the order given."""
    lines = [line for line in stderr.splitlines() if not LOG_LINE.match(line)]
    for i, line in enumerate(lines):
        if line.startswith(("java.", "org.apache.")) and i + 1 < len(lines) and lines[i + 1].startswith("\tat "):
            lines = lines[:i]
            break
    return [_sorted_node_list(line) for line in lines]


def _sorted_node_list(line: str) -> str:
    match = re.fullmatch(r"(Request METADATA failed on brokers \[)(.*)\]", line)
    if not match:
        return line
    return f"{match.group(1)}{', '.join(sorted(match.group(2).split(', ')))}]"


def log_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if LOG_LINE.match(line)]


def assert_same_output(kafka_tool, bootstrap: str) -> str:
    theirs = kafka_tool(BROKER_API_VERSIONS, "--bootstrap-server", bootstrap, timeout=120)
    mine = ours("--bootstrap-server", bootstrap)
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert (mine.returncode, mine.stderr) == (0, ""), mine.stderr
    assert mine.stdout == theirs.stdout, f"Kafka:\n{theirs.stdout}\nours:\n{mine.stdout}"
    return mine.stdout


@pytest.fixture(scope="module")
def kafkawire_quorum(tmp_path_factory):
    quorum = LocalQuorum(tmp_path_factory.mktemp("kafkawire-quorum"), voters=3)
    with quorum.started():
        quorum.wait_for_leader(60)
        yield quorum


def test_on_each_kafkawire_voter(kafka_tool, kafkawire_quorum):
    nodes_printed = 0
    for node_id in (1, 2, 3):
        host, port = kafkawire_quorum.address(node_id)
        text = assert_same_output(kafka_tool, f"{host}:{port}")
        nodes_printed += text.count(" -> (")
    print(f"\napi-versions on 3 kafkawire voters: {nodes_printed} node listings identical")
    assert nodes_printed >= 3


def test_local_table_is_what_a_node_advertises(kafkawire_quorum):
    """--local (no server asked) lists the same APIs and versions as a running node's answer."""
    host, port = kafkawire_quorum.address(1)
    asked = ours("--bootstrap-server", f"{host}:{port}")
    local = ours("--local")
    assert asked.returncode == local.returncode == 0, asked.stderr + local.stderr
    node_listing = asked.stdout.split(" -> (", 1)[1]
    assert local.stdout.split(" -> (", 1)[1] == node_listing.split("\n)\n", 1)[0] + "\n)\n"


def test_on_a_kafka_broker(kafka_tool, kafka_controller, kafka_broker):
    controller = kafka_controller(1, CLUSTER_ID, "--standalone")
    broker = kafka_broker(2, CLUSTER_ID, controller.controller_address)
    text = assert_same_output(kafka_tool, broker.broker_address)
    print(f"\napi-versions on a Kafka broker: {text.count(chr(10))} lines identical")


def assert_same_failure(kafka_tool, bootstrap: str):
    theirs = kafka_tool(BROKER_API_VERSIONS, "--bootstrap-server", bootstrap, timeout=120)
    mine = ours("--bootstrap-server", bootstrap)
    assert (mine.returncode, mine.stdout) == (theirs.returncode, theirs.stdout) == (1, ""), \
        f"Kafka: {theirs.returncode} {theirs.stdout}{theirs.stderr[-2000:]}\nours: {mine.returncode} {mine.stderr}"
    assert printed_errors(mine.stderr) == printed_errors(theirs.stderr), \
        f"Kafka's stderr:\n{theirs.stderr[-2000:]}\nours:\n{mine.stderr}"
    return theirs, mine


def test_on_a_kafka_controller(kafka_tool, kafka_controller):
    """A Kafka controller's listener has no Metadata API: Kafka's tool gives up on it."""
    controller = kafka_controller(1, CLUSTER_ID, "--standalone")
    _, mine = assert_same_failure(kafka_tool, controller.controller_address)
    assert printed_errors(mine.stderr) == [f"Request METADATA failed on brokers [{controller.controller_address} "
                                           f"(id: -1 rack: null isFenced: false)]"]


def test_nobody_listening(kafka_tool):
    dead = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    theirs, mine = assert_same_failure(kafka_tool, dead)
    # A WARN per failed attempt on both sides (Kafka's NetworkClient logs two per node).
    assert len(log_lines(mine.stderr)) == 2 and len(log_lines(theirs.stderr)) >= 2, mine.stderr
    assert all("request.timeout.ms" in line for line in log_lines(mine.stderr))


def test_client_api_keys_are_kafka_4_3_1s(kafka_libs):
    """What the tool takes for a Kafka 4.3.1 client's ApiKeys (our schemas, corrected by the
    generated kafkawire/protocol/kafka_api_keys.py) is, key for key, what the jar's schemas say.
    If our schemas change, regenerate the module: python -m kafkawire.codegen.kafka_api_keys JAR."""
    jar = kafka_dist.libs_dir() / f"kafka-clients-{kafka_dist.KAFKA_VERSION}.jar"
    kafkas = {key: ClientApi(key, *row) for key, row in kafka_apis(str(jar)).items()}
    assert kafka_client_apis() == kafkas, \
        f"stale kafkawire/protocol/kafka_api_keys.py? it would now be:\n{module_text(str(jar))}"
    print(f"\n{len(kafkas)} API keys of Kafka 4.3.1 agree")


@pytest.mark.parametrize("args", [
    ("--command-config", "x.properties"),
    ("--bootstrap-server", "nonsense"),
    ("--bootstrap-server", "127.0.0.1:1", "--command-config", "/nonexistent.properties"),
], ids=str)
def test_refusals(kafka_tool, args):
    """The line Kafka's tool prints first on stderr, and exit 1 (its option table after a missing
    argument and its stack traces are not compared)."""
    theirs = kafka_tool(BROKER_API_VERSIONS, *args, timeout=120)
    mine = ours(*args)
    assert (mine.returncode, mine.stdout) == (theirs.returncode, theirs.stdout) == (1, ""), theirs.stderr[-2000:]
    assert mine.stderr.splitlines() == printed_errors(theirs.stderr)[:1], theirs.stderr[-2000:]


def test_no_option_prints_help_on_stderr(kafka_tool):
    """The help texts are each tool's own (argparse's and joptsimple's)."""
    theirs, mine = kafka_tool(BROKER_API_VERSIONS, timeout=120), ours()
    assert (theirs.returncode, theirs.stdout) == (mine.returncode, mine.stdout) == (1, "")
    assert "--bootstrap-server" in theirs.stderr and "--bootstrap-server" in mine.stderr
