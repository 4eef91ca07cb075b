"""What the tests that let Kafka 4.3.1's tools judge a kafkawire broker share (issue 29, "Judges";
tests/interop/test_kafka_tools_on_kafkawire_broker.py, test_kafka_admin_tools_on_kafkawire_broker.py):
one combined node per module, Kafka's tools run in the shared tool JVM (tests/interop/tool_runs.py)
unless they need a JVM of their own, and their outputs parsed: JSON lines, tables keyed by their
header's columns (Kafka fixes no row order).
"""
from __future__ import annotations

import contextlib
import json
import time

from kafkawire.testing import EmbeddedBroker
from tests.interop import kafka_procs, tool_runs

GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
WAIT_S = 60


@contextlib.contextmanager
def module_broker(tmp_path_factory, properties: dict | None = None):
    """The module's combined kafkawire node (``properties`` replacing defaults); its log's tail
    is printed when it is stopped."""
    node = EmbeddedBroker(tmp_path_factory.mktemp("kafkawire-broker") / "node", properties=properties)
    with node:
        yield node
    print(f"\n--- kafkawire node log tail:\n{node.log_tail(40)}")


def run_tool(main_class: str, *args, own_jvm: bool = False, timeout: float = 120):
    """Kafka's tool run to completion: its CompletedProcess (returncode, stdout, stderr). In the
    shared tool JVM unless ``own_jvm`` (a tool whose last work its JVM's shutdown hooks do)."""
    args = tuple(map(str, args))
    result = None if own_jvm else tool_runs.run_in_shared_jvm(main_class, *args, timeout=timeout)
    if result is None:
        result = kafka_procs.run_in_own_jvm(main_class, args, timeout, None)
    return result


def kafka_tool(main_class: str, *args, own_jvm: bool = False, timeout: float = 120) -> str:
    """run_tool's stdout, once it exited 0."""
    result = run_tool(main_class, *args, own_jvm=own_jvm, timeout=timeout)
    assert result.returncode == 0, f"{main_class} {' '.join(map(str, args))} exited {result.returncode}:\n" \
                                   f"{result.stderr[-3000:]}\n{result.stdout[-2000:]}"
    return result.stdout


def json_events(stdout: str) -> list[dict]:
    """The JSON lines a Verifiable* tool or the copier printed, in order."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def table(stdout: str, first_column: str) -> list[dict[str, str]]:
    """The rows of every table whose header starts with ``first_column`` (a tool describing several
    groups prints one table each), each row keyed by its header's column names; a blank line ends
    a table. Cells are separated by whitespace (kafka-consumer-groups: no cell may hold a space)
    or, in kafka-transactions' tables (ToolsUtils.prettyPrintTable), each ends with a tab (a cell
    may then be empty)."""
    rows, header = [], None
    for line in stdout.splitlines():
        cells = _cells(line)
        if cells and cells[0] == first_column:
            header = cells
        elif not cells:
            header = None
        elif header is not None:
            assert len(cells) == len(header), f"a row of {len(cells)} cells under {header}: {cells}"
            rows.append(dict(zip(header, cells)))
    return rows


def _cells(line: str) -> list[str]:
    if "\t" not in line:
        return line.split()
    cells = [cell.strip() for cell in line.split("\t")]
    return cells[:-1] if cells[-1] == "" else cells          # the tab that ends the last cell


def properties_file(path, **settings) -> str:
    """A client properties file (``linger_ms=5`` is linger.ms=5); its path."""
    path.write_text("".join(f"{k.replace('_', '.')}={v}\n" for k, v in settings.items()))
    return str(path)


def create_topic(broker, name: str, partitions: int) -> None:
    kafka_tool(kafka_procs.TOPICS, "--bootstrap-server", broker.bootstrap_servers, "--create", "--topic", name,
               "--partitions", partitions, "--replication-factor", 1)


def wait_until(condition, what: str, timeout_s: float = WAIT_S):
    """``condition()``'s first true value, asked every 0.1 s for at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout_s} s: {what}")


def committed_offsets(broker, group: str, topic: str, partitions: int) -> dict[int, int]:
    """OffsetFetch of ``topic``'s partitions for ``group`` (kafka-python): {partition: offset} of
    those with a committed offset."""
    import kafka
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group,
                                   enable_auto_commit=False)
    try:
        offsets = {p: consumer.committed(kafka.TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        consumer.close()
    return {p: offset for p, offset in offsets.items() if offset is not None}


def transactional_producer(broker, transactional_id: str, **settings):
    """A confluent-kafka producer of ``transactional_id``, its transactions initialised."""
    import confluent_kafka
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers,
                                         "transactional.id": transactional_id, **settings})
    producer.init_transactions(WAIT_S)
    return producer


def write_transaction(producer, topic: str, values: list[str], *, commit: bool) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
    producer.flush(WAIT_S)
    if commit:
        producer.commit_transaction(WAIT_S)
    else:
        producer.abort_transaction(WAIT_S)
