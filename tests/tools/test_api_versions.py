"""`kafkawire api-versions` (issue 20, item 4): NodeApiVersions' text, Kafka 4.3.1's ApiKeys where
our schemas differ, --local against a running node, and the failures a user meets. The
comparison with Kafka's own tool is tests/interop/test_api_versions_vs_kafka.py."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkawire.protocol import kafka_api_keys
from kafkawire.protocol.apis import api_table
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from kafkawire.tools.api_versions import (advertised_api_versions, in_hashmap_order, kafka_client_apis, node_api_versions_text,
                                node_hash, node_text)

REPO = Path(__file__).resolve().parents[2]
WARN_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] WARN .* \(kafkawire\.admin\)$")


def api_versions(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "api-versions", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_kafka_4_3_1_ranges_where_our_schemas_differ():
    """Our schemas hold Kafka 3.9's older versions and a later ApiVersions v5; a 4.3.1 client's
    ApiKeys does not, and "usable" is computed from the latter."""
    differs = kafka_api_keys.RANGE_IN_4_3_1
    assert {0: (3, 13), 1: (4, 18), 2: (1, 11), 18: (0, 4), 19: (2, 7)}.items() <= differs.items()
    table = api_table()
    assert all((table[key].min_version, table[key].max_version) != versions for key, versions in differs.items())
    apis = kafka_client_apis()
    assert (apis[0].name, apis[0].oldest, apis[0].latest, apis[0].broker) == ("Produce", 3, 13, True)
    assert (apis[18].oldest, apis[18].latest) == (0, 4)
    assert (apis[52].name, apis[52].broker) == ("Vote", False)
    assert apis[8].name == "OffsetCommit" and apis[75].broker       # one we lack, DescribeTopicPartitions
    assert set(apis) == kafka_api_keys.KEYS_IN_4_3_1


def test_node_api_versions_text():
    text = node_api_versions_text([(0, 0, 2), (18, 0, 4), (52, 3, 3), (70, 0, 0), (2, 0, 0), (999, 1, 2)])
    lines = text.split("\n")
    assert lines[0] == "(" and lines[-1] == ")"
    body = [line.rstrip(",") for line in lines[1:-1]]
    assert all(line.startswith("\t") for line in lines[1:-1])
    assert "\tProduce(0): 0 to 2 [unusable: node too old]" in body            # 4.3.1 starts at 3
    assert "\tListOffsets(2): 0 [unusable: node too old]" in body
    assert "\tApiVersions(18): 0 to 4 [usable: 4]" in body
    assert "\tVote(52): 3 [unusable: node too new]" in body
    assert "\tControllerRegistration(70): 0 [usable: 0]" in body
    assert "\tUNKNOWN(999): 1 to 2" in body
    assert "\tFetch(1): UNSUPPORTED" in body and "\tMetadata(3): UNSUPPORTED" in body
    assert not any(line.startswith("\tBeginQuorumEpoch(53)") for line in body)   # not a broker API
    keys = [int(re.search(r"\((\d+)\)", line).group(1)) for line in body]
    assert keys == sorted(keys)
    assert all(line.endswith(",") for line in lines[1:-2]) and not lines[-2].endswith(",")


def test_nodes_print_in_java_hashmap_order():
    # Node.hashCode of Node(1, "127.0.0.1", 9093) as Java computes it (31-based, Boolean false = 1237).
    h = 31 + sum(ord(c) * 31 ** (len("127.0.0.1") - 1 - i) for i, c in enumerate("127.0.0.1"))
    for part in (1, 9093, 0, 1237):
        h = ((h * 31 + part) + 2**31) % 2**32 - 2**31
    assert node_hash(1, "127.0.0.1", 9093) == h % 2**32
    brokers = [(i, "127.0.0.1", 9090 + i, None) for i in range(1, 6)]
    ordered = in_hashmap_order(brokers)
    assert sorted(ordered) == sorted(brokers)
    buckets = [(node_hash(*b) ^ (node_hash(*b) >> 16)) & 15 for b in ordered]
    assert buckets == sorted(buckets)
    assert node_text(2, "h", 1) == "h:1 (id: 2 rack: null isFenced: false)"


def test_local_is_what_a_running_node_advertises(tmp_path):
    """--local used to print our codec table (Produce 0-13, ApiVersions 0-5, DescribeTopicPartitions)
    where a node advertises Produce 3-13, ApiVersions 0-4 and no DescribeTopicPartitions."""
    with LocalQuorum(tmp_path, voters=1) as quorum:
        quorum.format()
        quorum.start(1)
        try:
            quorum.wait_for_leader(120)
            host, port = quorum.address(1)
            asked = api_versions("--bootstrap-server", f"{host}:{port}")
        finally:
            quorum.stop_all()
    local = api_versions("--local")
    assert asked.returncode == local.returncode == 0, asked.stderr + local.stderr
    assert asked.stdout.startswith(f"{host}:{port} (id: 1 rack: null isFenced: false) -> (\n")
    assert local.stdout.split(" -> ", 1)[1] == asked.stdout.split(" -> ", 1)[1]
    assert "\tProduce(0): 3 to 13 [usable: 13],\n" in local.stdout
    assert "\tApiVersions(18): 0 to 4 [usable: 4],\n" in local.stdout
    assert "\tDescribeTopicPartitions(75): UNSUPPORTED,\n" in local.stdout
    advertised = {key: (low, high) for key, low, high in advertised_api_versions()}
    assert advertised[0] == (3, 13) and 75 not in advertised


def test_include_unstable_counts_the_unstable_last_version():
    stable = {key: high for key, _, high in advertised_api_versions()}
    unstable = {key: high for key, _, high in advertised_api_versions(include_unstable=True)}
    assert unstable[22] == stable[22] + 1          # InitProducerId v6 is unstable in our schema
    assert all(unstable[key] == stable[key] for key in stable if key != 22)


def test_nobody_listening_says_each_attempt():
    ports = free_ports(2)
    result = api_versions("--bootstrap-server", ",".join(f"127.0.0.1:{p}" for p in ports))
    assert (result.returncode, result.stdout) == (1, "")
    lines = result.stderr.splitlines()
    assert lines[-1] == (f"Request METADATA failed on brokers [127.0.0.1:{ports[0]} (id: -1 rack: null isFenced: "
                         f"false), 127.0.0.1:{ports[1]} (id: -2 rack: null isFenced: false)]")
    warnings = lines[:-1]
    assert len(warnings) == 2 and all(WARN_LINE.match(line) for line in warnings), result.stderr
    assert f"127.0.0.1:{ports[0]}" in warnings[0] and "Connection refused" in warnings[0]
    assert "request.timeout.ms=5000" in warnings[0]


@pytest.mark.parametrize("args, error", [
    (("--command-config", "x.properties"), 'Missing required argument "[bootstrap-server]"'),
    (("--bootstrap-server", "nonsense"), "Invalid url in bootstrap.servers: nonsense"),
    (("--bootstrap-server", "127.0.0.1:1", "--command-config", "/nonexistent.properties"),
     "/nonexistent.properties"),       # Kafka's tool prints the NoSuchFileException's message alone
])
def test_usage_errors(args, error):
    """The first line Kafka's BrokerApiVersionsCommand prints on stderr, exit 1."""
    result = api_versions(*args)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", error + "\n")


def test_no_option_prints_the_help_and_exits_1():
    result = api_versions()
    assert result.returncode == 1 and result.stderr.startswith("usage: kafkawire api-versions") and not result.stdout
