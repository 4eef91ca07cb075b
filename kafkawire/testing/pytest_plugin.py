"""pytest fixtures for an embedded Kafka broker (kafkawire.testing.EmbeddedBroker), registered by
installing kafkawire (the ``pytest11`` entry point ``kafkawire.testing.pytest_plugin``):

    def test_round_trip(kafkawire_broker):                    # one node for the whole session
        producer = KafkaProducer(bootstrap_servers=kafkawire_broker.bootstrap_servers, ...)

    def test_from_scratch(kafkawire_broker_per_test):         # a fresh node for this test alone

The plugin is loaded in every pytest run once kafkawire is installed, so it only defines the two
fixtures and imports nothing but the standard library; a node starts only for a test that asks
for one. ``-p no:kafkawire.testing.pytest_plugin`` turns it off; with plugin autoloading off
(PYTEST_DISABLE_PLUGIN_AUTOLOAD), ``-p kafkawire.testing.pytest_plugin`` turns it on. For another
scope (a module, a class), start an EmbeddedBroker in a fixture of that scope.
"""
from __future__ import annotations

import pytest

from kafkawire.testing import EmbeddedBroker


def _run(directory):
    with EmbeddedBroker(directory) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafkawire_broker(tmp_path_factory):
    """A combined kafkawire node started once for the pytest session (started when the first
    test asks for it, killed by pid at the end): ``.bootstrap_servers``, ``.log_dir``, ``.pid``.
    Tests share its topics: give each test its own topic names."""
    yield from _run(tmp_path_factory.mktemp("kafkawire-broker"))


@pytest.fixture
def kafkawire_broker_per_test(tmp_path):
    """A combined kafkawire node of this test alone (a second or more to start; see
    benchmarks/broker_startup.py), killed by pid when the test ends."""
    yield from _run(tmp_path / "kafkawire-broker")
