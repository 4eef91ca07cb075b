"""Kafka 4.3.1's MetadataQuorumCommand and FeatureCommand against ours, on the same quorum
(issue 11 §2): Kafka's tools against a kafkawire quorum print what ours print against it, and
ours against a Kafka quorum print what Kafka's print.

The quorums are idle (``metadata.max.idle.interval.ms=0``: no NoOpRecords on either side), so
offsets, epochs and lags stand still between the two runs and are compared as they are. What
is normalised, and nothing else:

* ``describe --status``: the value of ``MaxFollowerLagTimeMs`` (a difference of two
  LastCaughtUpTimestamps), which must be an integer on both sides;
* ``describe --replication [--human-readable]``: the cells of LastFetchTimestamp and
  LastCaughtUpTimestamp (epoch milliseconds, or ``N ms ago``) other than ``-1``, and so the
  padding of those two columns; each table's own padding is checked on its own (every cell
  padded to its column's width, then a tab);
* errors: the first line of stderr is compared with kafkawire's `` (last error: ...)`` suffix
  cut off (a kept difference, see README); Kafka's tools log to a file here, so their stderr
  holds only what the tool printed.

Each quorum is started once per module, and so is the one JVM in which every Kafka tool run of
the module runs, one at a time (tests/interop/java/tools/ToolRuns.java calls each tool's
mainNoExit, which its main hands to Exit.exit): a JVM start per run cost 1.5-3 s.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkawire.storage.state_files import uuid_to_kafka
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from tests.interop.kafka_procs import KafkaNode
from tests.interop.tool_runs import KafkaToolRuns, KafkaToolSession, ToolRunsUnavailable

TOOL_TIMEOUT_S = 90
READY_TIMEOUT_S = 180          # a JVM start on a busy 2-core machine
IDLE = {"metadata.max.idle.interval.ms": "0"}            # no NoOpRecords: the log stands still
CLUSTER_ID = "TLzTcTRqQLWMRmt0hKa_Gw"
DESCRIBES = [("metadata-quorum", "describe", "--status"),
             ("metadata-quorum", "describe", "--replication"),
             ("metadata-quorum", "describe", "--replication", "--human-readable"),
             ("features", "describe")]
TIMESTAMP_COLUMNS = ("LastFetchTimestamp", "LastCaughtUpTimestamp")


# --- running both tools -------------------------------------------------------------------------------

class Runner:
    """Runs a tool both ways: Kafka's in the module's tool JVM, whose logging goes to a file, ours as
    ``python -m kafkawire.tools.cli``."""

    def __init__(self, work_dir: Path):
        self.log4j = work_dir / "log4j2-quiet.properties"
        self.log4j.write_text(
            "status = warn\nappender.file.type = File\nappender.file.name = FILE\n"
            f"appender.file.fileName = {work_dir / 'kafka-tools.log'}\n"
            "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = WARN\nrootLogger.appenderRef.file.ref = FILE\n")
        # The no-controller cases: a short Admin deadline on both sides, in Kafka's own keys.
        self.short_timeouts = work_dir / "short-timeouts.properties"
        self.short_timeouts.write_text("default.api.timeout.ms=1500\nrequest.timeout.ms=1500\n")
        try:
            self.session: KafkaToolSession = KafkaToolRuns(work_dir).session(log4j=self.log4j)
        except ToolRunsUnavailable as exc:           # as the kafka_libs fixture: an error only under CI
            (pytest.fail if os.environ.get("CI") else pytest.skip)(f"Kafka's tools cannot run in one JVM: {exc}")

    def kafka(self, tool: str, *args: str) -> subprocess.CompletedProcess:
        result = self.session.call(tool, *map(str, args), timeout=TOOL_TIMEOUT_S)
        return subprocess.CompletedProcess([tool, *map(str, args)], result.status, result.out, result.err)

    def ours(self, tool: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", tool, *map(str, args)], capture_output=True,
                              text=True, timeout=TOOL_TIMEOUT_S, stdin=subprocess.DEVNULL)


def run_both(runner: Runner, tool: str, *args: str):
    """(Kafka's, ours), each a CompletedProcess; Kafka's first (ours is the faster to start)."""
    return runner.kafka(tool, *args), runner.ours(tool, *args)


# --- normalising: only the timestamps -------------------------------------------------------------------

def normalised_status(text: str) -> str:
    """The ``describe --status`` text with MaxFollowerLagTimeMs's value masked."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("MaxFollowerLagTimeMs:"):
            label, value = line[:24], line[24:]
            assert re.fullmatch(r"-?\d+", value), f"MaxFollowerLagTimeMs is not a number: {line!r}"
            lines[i] = label + "<ms>"
    return "\n".join(lines)


def table_cells(text: str) -> list[list[str]]:
    """prettyPrintTable's text as rows of cells, after checking its layout: every line ends with
    a tab, and every cell of a column is padded to the same width."""
    assert text.endswith("\n"), f"no final newline: {text!r}"
    rows = [line.split("\t") for line in text[:-1].split("\n")]
    for row in rows:
        assert row[-1] == "" and len(row) == len(rows[0]), f"not a tab-ended row of the table: {row!r}"
    for column in range(len(rows[0]) - 1):
        widths = {len(row[column]) for row in rows}
        assert len(widths) == 1, f"column {rows[0][column].strip()!r} is not padded to one width: {widths}"
    return [[cell.rstrip() for cell in row[:-1]] for row in rows]


def normalised_replication(text: str, human_readable: bool) -> list[list[str]]:
    """The table's cells with the known timestamps masked (-1, unknown, stays)."""
    rows = table_cells(text)
    header = rows[0]
    pattern = r"\d+ ms ago" if human_readable else r"\d{13}"
    for row in rows[1:]:
        for name in TIMESTAMP_COLUMNS:
            i = header.index(name)
            if row[i] != "-1":
                assert re.fullmatch(pattern, row[i]), f"{name} {row[i]!r} is not a timestamp ({pattern})"
                row[i] = "<timestamp>"
    return rows


def normalised(args: tuple[str, ...], stdout: str):
    if args[:3] == ("metadata-quorum", "describe", "--status"):
        return normalised_status(stdout)
    if args[:3] == ("metadata-quorum", "describe", "--replication"):
        return normalised_replication(stdout, "--human-readable" in args)
    return stdout                                               # features describe: as it is


def first_error_line(stderr: str) -> str:
    """The first line the tool printed: log lines (ours show each failed attempt at WARN, as
    Kafka's client does; Kafka's go to a file here) are set apart."""
    printed = [line for line in stderr.split("\n") if not re.match(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] ", line)]
    return re.sub(r" \(last error: .*\)$", "", printed[0])


def assert_same_describe(runner: Runner, bootstrap_flag: str, bootstrap: str, args: tuple[str, ...]):
    tool, *rest = args
    kafka, ours = run_both(runner, tool, bootstrap_flag, bootstrap, *rest)
    assert kafka.returncode == 0, f"Kafka's {' '.join(args)} failed:\n{kafka.stderr[-3000:]}"
    assert (ours.returncode, ours.stderr) == (0, ""), f"ours failed: {ours.stderr}"
    assert kafka.stderr == ""
    assert normalised(args, ours.stdout) == normalised(args, kafka.stdout), \
        f"Kafka's:\n{kafka.stdout}\nours:\n{ours.stdout}"


# --- quorums -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runner(kafka_libs, tmp_path_factory) -> Runner:
    runner = Runner(tmp_path_factory.mktemp("quorum-tools"))
    yield runner
    runner.session.close()


def wait_idle(describe, what: str, *, observers: int = 0, timeout_s: float = 120):
    """Until every replica's log end offset is the high watermark and ``observers`` observers
    fetch, the same twice in a row 0.5 s apart: registrations and catch-up are over.
    ``describe()`` returns what DescribeQuorum says (voters and observers with log_end_offset)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            view = describe()
        except Exception as exc:                                  # noqa: BLE001 (still starting)
            last = exc
        else:
            replicas = list(view.voters) + list(view.observers)
            state = (view.leader_id, view.high_watermark, tuple(r.log_end_offset for r in replicas))
            if len(view.observers) == observers and state == last \
                    and all(r.log_end_offset == view.high_watermark for r in replicas):
                return view
            last = state
        time.sleep(0.5)
    raise AssertionError(f"{what} did not settle within {timeout_s} s (last: {last})")


@pytest.fixture(scope="module")
def kafkawire_quorum(tmp_path_factory):
    """Three kafkawire voters and one observer (node 4, formatted --no-initial-controllers)."""
    quorum = LocalQuorum(tmp_path_factory.mktemp("kafkawire-quorum"), voters=3, extra_nodes=1, properties=IDLE)
    with quorum.started(graceful=False):
        wait_idle(lambda: quorum.wait_for_leader(120), "the kafkawire quorum", observers=1)
        yield quorum


@contextmanager
def kafka_logs_on_failure(nodes):
    """A quorum that does not settle says so with the tail of each Kafka node's log."""
    try:
        yield
    except AssertionError as exc:
        tails = "".join(f"\n--- Kafka node {n.node_id} ({n.roles}): {n.log_path}\n{n.log_tail(30)}" for n in nodes)
        raise AssertionError(f"{exc}{tails}") from None


def describe_with_our_tool(bootstrap: str):
    from kafkawire.tools.metadata_quorum import describe_quorum
    return describe_quorum(bootstrap, timeout_ms=3000)


@pytest.fixture(scope="module")
def kafka_standalone(kafka_libs, tmp_path_factory):
    """A Kafka 4.3.1 controller formatted --standalone; its address."""
    node = KafkaNode(tmp_path_factory.mktemp("kafka-standalone"), 1, "controller", properties=IDLE)
    try:
        node.format(CLUSTER_ID, "--standalone")
        node.start()
        node.wait_ready(READY_TIMEOUT_S)
        with kafka_logs_on_failure([node]):
            wait_idle(lambda: describe_with_our_tool(node.controller_address), "the Kafka controller")
        yield node.controller_address
    finally:
        node.kill()


@dataclass(frozen=True)
class KafkaCluster:
    controllers: str            # the three controllers' addresses
    broker: str                 # the broker's (node 4, an observer of the quorum)


@pytest.fixture(scope="module")
def kafka_three_voters(kafka_libs, tmp_path_factory) -> KafkaCluster:
    """Three Kafka 4.3.1 controllers formatted with --initial-controllers, and a broker (node 4)."""
    from kafkawire.tools.storage import random_uuid
    base = tmp_path_factory.mktemp("kafka-three")
    ports = free_ports(3)
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    quorum_props = dict(IDLE, **{"controller.quorum.bootstrap.servers": bootstrap})
    nodes = [KafkaNode(base / f"c{i}", i, "controller", controller_port=ports[i - 1], properties=quorum_props)
             for i in (1, 2, 3)]
    initial = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}:{uuid_to_kafka(random_uuid())}" for n in nodes)
    # A broker-only node still needs its controllers' listener in the protocol map.
    broker = KafkaNode(base / "b4", 4, "broker", properties=dict(
        quorum_props, **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"}))
    try:
        for node in nodes:
            node.format(CLUSTER_ID, "--initial-controllers", initial)
        broker.format(CLUSTER_ID, "--no-initial-controllers")
        for node in nodes + [broker]:
            node.start()
        for node in nodes + [broker]:
            node.wait_ready(READY_TIMEOUT_S)
        with kafka_logs_on_failure(nodes + [broker]):
            wait_idle(lambda: describe_with_our_tool(bootstrap), "the three Kafka controllers and the broker",
                      observers=1)
        yield KafkaCluster(bootstrap, broker.broker_address)
    finally:
        for node in nodes + [broker]:
            node.kill()


def _id(args) -> str:
    return " ".join(args)


# --- Kafka's tools on a kafkawire quorum ------------------------------------------------------------------

@pytest.mark.parametrize("args", DESCRIBES, ids=_id)
def test_on_kafkawire_quorum_via_controllers(runner, kafkawire_quorum, args):
    assert_same_describe(runner, "--bootstrap-controller", kafkawire_quorum.bootstrap_servers(), args)


def test_on_kafkawire_quorum_via_the_observer(runner, kafkawire_quorum):
    """The observer (node 4) names the voters and the active controller in DescribeCluster."""
    assert_same_describe(runner, "--bootstrap-controller", kafkawire_quorum.bootstrap_servers([4]),
                         ("metadata-quorum", "describe", "--status"))


@pytest.mark.parametrize("node_id", [2, 4])
def test_on_kafkawire_quorum_features_of_one_node(runner, kafkawire_quorum, node_id):
    """``describe --node-id``: the node is found in DescribeCluster's controllers, which are the
    registered ones (so the observer, node 4, too)."""
    assert_same_describe(runner, "--bootstrap-controller", kafkawire_quorum.bootstrap_servers(),
                         ("features", "describe", "--node-id", str(node_id)))


@pytest.mark.parametrize("args", [DESCRIBES[0], DESCRIBES[1], DESCRIBES[3]], ids=_id)
def test_on_kafkawire_quorum_via_bootstrap_server(runner, kafkawire_quorum, args):
    """Our controller also answers Metadata (the read-only __cluster_metadata topic, itself as the
    only broker), so Kafka's Admin bootstraps from it as from a broker. Only the leader answers
    DescribeQuorum (a follower says NOT_LEADER_OR_FOLLOWER, as Kafka's controllers do), so the
    bootstrap server here is the leader."""
    leader = kafkawire_quorum.wait_for_leader(10).leader_id
    assert_same_describe(runner, "--bootstrap-server", kafkawire_quorum.bootstrap_servers([leader]), args)


# --- our tools on Kafka quorums ---------------------------------------------------------------------------

@pytest.mark.parametrize("args", DESCRIBES, ids=_id)
def test_on_kafka_standalone_controller(runner, kafka_standalone, args):
    assert_same_describe(runner, "--bootstrap-controller", kafka_standalone, args)


@pytest.mark.parametrize("args", DESCRIBES + [("features", "describe", "--node-id", "2")], ids=_id)
def test_on_three_kafka_controllers(runner, kafka_three_voters, args):
    """The broker is the quorum's observer in --status and --replication."""
    assert_same_describe(runner, "--bootstrap-controller", kafka_three_voters.controllers, args)


@pytest.mark.parametrize("args", [DESCRIBES[0], DESCRIBES[1], DESCRIBES[3], ("features", "describe", "--node-id", "4")],
                         ids=_id)
def test_on_kafka_broker_via_bootstrap_server(runner, kafka_three_voters, args):
    """Through a Kafka broker: Metadata, DescribeCluster for brokers, DescribeQuorum forwarded to
    the active controller, the broker's own ApiVersions features."""
    assert_same_describe(runner, "--bootstrap-server", kafka_three_voters.broker, args)


# --- errors a user meets ---------------------------------------------------------------------------------------

def assert_same_failure(runner: Runner, tool: str, *args: str):
    kafka, ours = run_both(runner, tool, *args)
    assert (ours.returncode, ours.stdout) == (kafka.returncode, kafka.stdout) == (1, ""), \
        f"Kafka: {kafka.returncode} {kafka.stderr[-2000:]}\nours: {ours.returncode} {ours.stderr}"
    assert first_error_line(ours.stderr) == first_error_line(kafka.stderr), \
        f"Kafka's stderr:\n{kafka.stderr[-2000:]}\nours:\n{ours.stderr}"
    return kafka, ours


@pytest.mark.parametrize("args", [DESCRIBES[0], DESCRIBES[3]], ids=_id)
def test_bootstrap_server_on_a_kafka_controller_is_refused(runner, kafka_standalone, args):
    """A Kafka controller's listener has no Metadata API: Kafka's Admin fails at once."""
    tool, *rest = args
    kafka, ours = assert_same_failure(runner, tool, "--bootstrap-server", kafka_standalone, *rest)
    assert ours.stderr == "org.apache.kafka.common.errors.UnsupportedVersionException: " \
                          "The node does not support METADATA\n"


@pytest.mark.parametrize("flag", ["--bootstrap-controller", "--bootstrap-server"])
@pytest.mark.parametrize("args", [DESCRIBES[0], DESCRIBES[3]], ids=_id)
def test_no_controller_reachable(runner, flag, args):
    tool, *rest = args
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    kafka, ours = assert_same_failure(runner, tool, flag, dead, "--command-config", runner.short_timeouts, *rest)
    assert first_error_line(ours.stderr).startswith(
        "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. Call: ")
    assert dead in ours.stderr and "refused" in ours.stderr       # our suffix says why


def test_unknown_node_id(runner, kafkawire_quorum):
    """No controller 9: Kafka's Admin waits for it to appear in the metadata until the deadline."""
    kafka, ours = assert_same_failure(runner, "features", "--bootstrap-controller", kafkawire_quorum.bootstrap_servers(),
                                      "--command-config", runner.short_timeouts, "describe", "--node-id", "9")
    assert ours.stderr == "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node " \
                          "assignment. Call: describeFeatures\n"


@pytest.mark.parametrize("flags", [(), ("--status", "--replication"), ("--status", "--human-readable")], ids=str)
def test_describe_refusals(runner, kafkawire_quorum, flags):
    """The describe flags Kafka's tool refuses (TerseException: the message alone on stderr)."""
    kafka, ours = assert_same_failure(runner, "metadata-quorum", "--bootstrap-controller",
                                      kafkawire_quorum.bootstrap_servers(), "describe", *flags)
    assert ours.stderr == kafka.stderr
