"""What clients do to the replicated topic while the nemesis works, through a real client
(confluent-kafka, librdkafka): idempotent producers with acks=all whose delivery reports say
which values were acknowledged at which offset, a transactional producer committing and aborting
transactions, and a read_committed consumer reading every partition from the start.

Every value is unique ("<producer>-<n>"), so a value read twice, or at an offset other than its
acknowledged one, is a duplicate or a misplaced record.
"""
from __future__ import annotations

import threading
import time
import warnings
from collections import defaultdict

import confluent_kafka

QUIET = {"log_level": 3}        # librdkafka: errors only (the faults make it warn a lot)


class IdempotentProducer(threading.Thread):
    """Produces values to ``topic`` (round robin over its partitions) until ``stop``; ``acked``
    maps each acknowledged value to (partition, offset, monotonic time of the acknowledgement)."""

    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int, stop: threading.Event):
        super().__init__(name=name, daemon=True)
        self.topic, self.partitions, self.stop = topic, partitions, stop
        self.acked: dict[str, tuple[int, int, float]] = {}
        self.failed: dict[str, str] = {}
        self.fatal: str | None = None
        self.sent = 0
        self.acked_at: dict[int, float] = {}          # partition -> monotonic time of its last acknowledgement
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 5, "message.timeout.ms": 60_000, "request.timeout.ms": 5000,
            "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000,
            "max.in.flight.requests.per.connection": 5, **QUIET})

    def _delivered(self, err, msg) -> None:
        value = msg.value().decode()
        if err is None:
            now = time.monotonic()
            self.acked[value] = (msg.partition(), msg.offset(), now)
            self.acked_at[msg.partition()] = now
        else:
            self.failed[value] = err.name()
            if err.fatal():
                self.fatal = f"{err.name()}: {err.str()}"

    def run(self) -> None:
        n = 0
        while not self.stop.is_set() and self.fatal is None:
            if len(self.producer) < 200:
                value = f"{self.name}-{n}"
                try:
                    self.producer.produce(self.topic, value.encode(), partition=n % self.partitions,
                                          on_delivery=self._delivered)
                    n += 1
                    self.sent = n
                except BufferError:
                    pass
            self.producer.poll(0.01)
        self.producer.flush(90)
        # librdkafka's client goes with its last reference: kept by a finished thread that the run's
        # report still holds, it went on dialling the stopped cluster's brokers during later tests
        self.producer = None


def close_producer(producer) -> None:
    """Close ``producer`` (None: nothing) at once: its queued records purged (close would otherwise
    wait for them), a fenced or failed one's errors ignored (its close tries to abort the open
    transaction, and warns when that fails). Returns None, for ``producer = close_producer(producer)``.
    Never call it (nor any other call of a transactional producer that may raise) inside an
    ``except`` block: confluent-kafka 2.16 then keeps a reference to the exception being handled,
    for good, and with it its traceback's frames and their producers."""
    if producer is None:
        return None
    try:
        producer.purge()
        producer.flush(0)
    except (confluent_kafka.KafkaException, RuntimeError):
        pass                                 # a fatal error re-raised, or already closed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            producer.close()
        except (confluent_kafka.KafkaException, RuntimeError):
            pass
    return None


class TransactionalProducer(threading.Thread):
    """Transactions of a few values each, committed or aborted at random until ``stop``.
    ``committed``: the values of transactions whose commit was acknowledged; ``aborted``: of those
    aborted (acknowledged or not: an abort never lets them be read)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, stop: threading.Event, rng):
        super().__init__(name="txn", daemon=True)
        self.topic, self.partitions, self.stop, self.rng = topic, partitions, stop, rng
        self.bootstrap = bootstrap
        self.abandon = threading.Event()     # the run failed: end without fencing the last transaction
        self.committed: set[str] = set()
        self.aborted: set[str] = set()
        self.errors: defaultdict[str, int] = defaultdict(int)
        self.n = 0
        self.producer = None                 # the current one (only this thread uses it)

    def _new_producer(self):
        producer = confluent_kafka.Producer({
            "bootstrap.servers": self.bootstrap, "transactional.id": "nemesis-txn", "acks": "all",
            "transaction.timeout.ms": 10_000, "message.timeout.ms": 9_000, "linger.ms": 5, **QUIET})
        try:
            producer.init_transactions(60)
            return producer
        except confluent_kafka.KafkaException as exc:
            failure = exc.args[0]
        close_producer(producer)             # out of the handler (see close_producer)
        raise confluent_kafka.KafkaException(failure)

    def run(self) -> None:
        try:
            self._transactions_until_stopped()
            outcome_unknown = self.producer is None
        finally:                             # whatever ended it, before the run stops the brokers
            self.producer = close_producer(self.producer)  # (the run joins this thread first)
        if outcome_unknown and not self.abandon.is_set():  # the last transaction's outcome unknown:
            self._fence_the_last()           # end it (the LSO must reach the high watermark at the end)

    def _transactions_until_stopped(self) -> None:
        """Transactions until ``stop`` through ``self.producer``, left None when the last one's
        outcome is unknown. Each producer replaced is closed here: left to the collector, one
        outlived its test, dialling the stopped brokers (a reference confluent-kafka keeps, see
        close_producer)."""
        while not self.stop.is_set():
            error, values = self._try_a_transaction()
            if error is None:
                continue
            self.errors[f"{error.name()}: {error.str()[:90]}"] += 1
            if not (error.txn_requires_abort() and self._abort(values)):
                # the outcome unknown (or the producer fenced): a new one's InitProducerId ends it
                self.producer = close_producer(self.producer)
            time.sleep(0.1)

    def _try_a_transaction(self):
        """(None, values) once a transaction of ``values`` ended as meant, else the KafkaError
        that ended it: returned, so that the caller acts on it outside the ``except`` block."""
        values = []
        try:
            if self.producer is None:
                self.producer = self._new_producer()
            values = [f"txn-{self.n + i}" for i in range(4)]
            self.n += len(values)
            self._one_transaction(self.producer, values, commit=self.rng.random() < 0.5)
            return None, values
        except confluent_kafka.KafkaException as exc:
            return exc.args[0], values

    def _abort(self, values: list[str]) -> bool:
        try:
            self.producer.abort_transaction(30)
        except confluent_kafka.KafkaException:
            return False
        self.aborted.update(values)
        return True

    def _fence_the_last(self) -> None:
        """InitProducerId until it succeeds (bounded): the coordinator aborts the open transaction."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not self.abandon.is_set():
            try:
                fencer = self._new_producer()
            except confluent_kafka.KafkaException as exc:
                self.errors[exc.args[0].name()] += 1
                time.sleep(0.5)
                continue
            close_producer(fencer)
            return

    def _one_transaction(self, producer, values: list[str], *, commit: bool) -> None:
        producer.begin_transaction()
        if not commit:
            self.aborted.update(values)
        for i, value in enumerate(values):
            producer.produce(self.topic, value.encode(), partition=i % self.partitions)
        if commit:
            producer.commit_transaction(30)
            self.committed.update(values)
        else:
            producer.abort_transaction(30)


class Consumer(threading.Thread):
    """read_committed, every partition from offset 0, until ``stop``; ``read`` maps each value to
    the (partition, offset) it was read at (every time it was read)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, stop: threading.Event):
        super().__init__(name="consumer", daemon=True)
        self.stop = stop
        self.read: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
        self.positions: dict[int, int] = {}
        self.errors: defaultdict[str, int] = defaultdict(int)
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": "nemesis-reader", "enable.auto.commit": False,
            "isolation.level": "read_committed", "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000, "fetch.wait.max.ms": 200, **QUIET})
        self.assignment = [confluent_kafka.TopicPartition(topic, i, 0) for i in range(partitions)]
        self.consumer.assign(self.assignment)

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                for msg in self.consumer.consume(500, 0.2):
                    if msg.error() is not None:
                        self.errors[msg.error().name()] += 1
                        continue
                    self.read[msg.value().decode()].append((msg.partition(), msg.offset()))
                self.positions = {tp.partition: tp.offset for tp in self.consumer.position(self.assignment)}
        finally:
            self.consumer.close()


class OffsetCommitter(threading.Thread):
    """Commits ever larger offsets of partition 0 for a group of its own (a simple group: assigned,
    never subscribed) until ``stop``; ``acked`` is the last commit acknowledged, ``attempted`` the
    last one sent. The committed offset found at the end must be one of these, never older: an
    acknowledged commit survives the coordinator's failover."""

    def __init__(self, bootstrap: str, topic: str, stop: threading.Event):
        super().__init__(name="committer", daemon=True)
        self.topic, self.stop = topic, stop
        self.acked = self.attempted = -1
        self.errors: defaultdict[str, int] = defaultdict(int)
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": "nemesis-committer", "enable.auto.commit": False,
            **QUIET})

    def run(self) -> None:
        offset = 0
        try:
            while not self.stop.is_set():
                offset += 1
                self.attempted = offset
                try:
                    result = self.consumer.commit(offsets=[confluent_kafka.TopicPartition(self.topic, 0, offset)],
                                                  asynchronous=False)
                    if result and result[0].error is None:
                        self.acked = offset
                    elif result:
                        self.errors[result[0].error.name()] += 1
                except confluent_kafka.KafkaException as exc:
                    self.errors[exc.args[0].name()] += 1
                    time.sleep(0.1)
                time.sleep(0.02)
        finally:
            self.consumer.close()

    def committed(self, bootstrap: str, bound_s: float = 90) -> int | None:
        """The group's committed offset now, asked through a consumer of its own (None: no answer
        within ``bound_s``)."""
        reader = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "nemesis-committer",
                                           "enable.auto.commit": False, **QUIET})
        deadline = time.monotonic() + bound_s
        try:
            while time.monotonic() < deadline:
                try:
                    return reader.committed([confluent_kafka.TopicPartition(self.topic, 0)], timeout=15)[0].offset
                except confluent_kafka.KafkaException as exc:
                    self.errors[f"committed(): {exc.args[0].name()}"] += 1
            return None
        finally:
            reader.close()
