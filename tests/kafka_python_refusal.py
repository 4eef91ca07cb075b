"""kafka-python presenting wrong credentials, driven until the server has refused it (rather than
until kafka-python's own bootstrap timeout).

kafka-python (3.0.12) never raises a failed SASL authentication: its bootstrap
(kafka/net/manager.py, _do_bootstrap) retries such a connection like any failed one until
bootstrap_timeout_ms (30 s by default), then raises KafkaTimeoutError; KafkaConsumer and
KafkaAdminClient bootstrap in their constructors. Whether it even reads the
SASL_AUTHENTICATION_FAILED response is a race: Kafka's broker (Selector.
handleCloseOnAuthenticationFailure) and kafkawire send the response and the FIN together after
connection.failed.authentication.delay.ms, and when one recv loop of kafka-python's transport
(kafka/net/transport.py, _sock_recv) gets both, it aborts on the EOF and drops the bytes read
before it ("socket disconnected"); when the response comes in a read of its own it logs
SaslAuthenticationFailedError. Waiting for its exception is waiting for its timeout, and a server
that hung would pass such a test as well.

So ``kafka_python_refusal`` gives a KafkaConsumer ``api_version``, so that it connects from
poll() rather than in its constructor, polls until kafka-python has lost a connection after the
server refused it (``server_refused()``), and returns what kafka-python logged and read.
"""
from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field

CLIENT_LOGGER = "kafka.net.connection"


@dataclass
class Refusal:
    lost: list[str] = field(default_factory=list)      # kafka-python's "Connection lost: ..." after a refusal
    records: list = field(default_factory=list)        # (offset, value) it read: must stay empty

    @property
    def closed_by_the_refusal(self) -> bool:
        """Every connection kafka-python lost after the refusal was lost to the server's
        failure response or its close, not to a timeout of kafka-python's."""
        return bool(self.lost) and all("SaslAuthenticationFailedError" in m or "socket disconnected" in m
                                       for m in self.lost)


class _LostConnections(logging.Handler):
    def __init__(self, server_refused):
        super().__init__(logging.DEBUG)
        self.server_refused = server_refused
        self.lost: list[str] = []

    def emit(self, record):
        message = record.getMessage()
        if "Connection lost:" in message and self.server_refused():
            self.lost.append(message)


@contextlib.contextmanager
def logging_to(handler, *names):
    """``handler`` sees every record of the loggers ``names`` (DEBUG and up) while inside."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        for lg, level in zip(loggers, levels):
            lg.removeHandler(handler)
            lg.setLevel(level)


def kafka_python_refusal(bootstrap: str, server_refused, *, topic: str = "__cluster_metadata",
                         timeout_s: float = 20, **options) -> Refusal:
    """Poll ``topic`` with a KafkaConsumer built from ``options`` (its security settings) until
    kafka-python has lost a connection after ``server_refused()`` became true, at most
    ``timeout_s``; then close it."""
    from kafka import KafkaConsumer, TopicPartition
    refusal = Refusal()
    with logging_to(_LostConnections(server_refused), CLIENT_LOGGER) as seen:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, api_version=(4, 2),
                                 request_timeout_ms=10000, **options)
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            deadline = time.monotonic() + timeout_s
            while not seen.lost and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=100).values():
                    refusal.records += [(m.offset, m.value) for m in records]
            refusal.lost = list(seen.lost)        # closing the consumer aborts its next attempt too
        finally:
            consumer.close()
    return refusal
