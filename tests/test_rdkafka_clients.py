"""tests/rdkafka_clients.py in a pytest run of its own: a librdkafka client a module leaves open
is named, with its test and line, in a warning on the module's last teardown; a failed test's
clients are closed right after it; clients closed or dropped are not named."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CONFTEST = """
from tests import rdkafka_clients


def pytest_configure(config):
    rdkafka_clients.install(config)
"""

MODULE = """
import confluent_kafka
import confluent_kafka.admin
import pytest

KEPT = []
NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "log_level": 0}


def test_keeps_a_producer():
    KEPT.append(confluent_kafka.Producer(NOWHERE))  # the leak


def test_closes_or_drops_its_clients():
    producer = confluent_kafka.Producer(NOWHERE)
    producer.flush(0)
    producer.close()
    consumer = confluent_kafka.Consumer({**NOWHERE, "group.id": "g"})
    consumer.close()
    KEPT.extend([producer, consumer])
    confluent_kafka.admin.AdminClient(NOWHERE)


def test_fails_holding_a_consumer():
    KEPT.append(confluent_kafka.Consumer({**NOWHERE, "group.id": "g"}))
    assert False, "on purpose"


def test_the_failed_tests_consumer_is_closed():
    with pytest.raises(RuntimeError):
        KEPT[-1].assignment()
"""


def test_a_client_left_open_is_named_and_a_failed_tests_clients_are_closed(tmp_path):
    pytest.importorskip("confluent_kafka")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_inner.py").write_text(MODULE)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_inner.py"],
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, timeout=120)
    out = run.stdout
    assert "1 failed, 3 passed, 1 warning" in out, out
    assert "test_inner.py::test_the_failed_tests_consumer_is_closed" in out and "ClientLeftOpen" in out, out
    named = [line.strip() for line in out.splitlines() if " made by " in line]
    assert named == ["Producer made by test_inner.py::test_keeps_a_producer at test_inner.py:11"], out
