"""The controller's view of committed metadata: record frames replayed, in log order, into
kafkawire.metadata's MetadataImage.

Beyond the image it keeps what Kafka's controller keeps beside its managers:

* metadata transactions (KIP-868): records after a BeginTransactionRecord wait until their
  EndTransactionRecord and are dropped on AbortTransactionRecord, as MetadataBatchLoader
  does; ``transaction_start_offset`` is Kafka's OffsetControlManager.transactionStartOffset
  (-1 when none is open), which activation needs to abort a transaction left open;
* the offset of each broker's RegisterBrokerRecord (ClusterControlManager.
  registerBrokerRecordOffsets: a heartbeat unfences a broker once it has read that far);
* the order in which finalized features entered the image, because Kafka's FeaturesImage
  is a HashMap whose iteration order a snapshot preserves;
* for each broker, the partitions whose ISR or ELR holds it and the ones it leads
  (partition_index.py: Kafka's BrokersToIsrs and BrokersToElrs).

A record that cannot be decoded or applied is logged and kept in ``problems`` (offset and
reason); replay goes on, as kafka-metadata-shell's replay does, so one bad record does not
stop the node. The exception is a FeatureLevelRecord for a level outside what the node
supports (``supported_features``): as in Kafka's FeatureControlManager.replay, whose failure
is fatal to the controller, replay raises UnsupportedFeatureLevel and the node stops rather
than run on metadata it may not understand.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kafkawire import messages
from kafkawire.messages.partition_change_record import PartitionChangeRecord
from kafkawire.metadata.frame import MetadataRecordError, decode_metadata_message
from kafkawire.metadata.image import ImageError, MetadataImage, Provenance
from kafkawire.raft.contract import StateMachineFatal

from .frames import take_built
from .java_order import grown_capacity, string_hashmap_order
from .node_configs import NodeConfigs
from .partition_index import PartitionIndex
from .stats import ReplayStats
from .versions import METADATA_VERSION

log = logging.getLogger(__name__)

_TRANSACTION_MARKERS = ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord")


@dataclass(frozen=True)
class Problem:
    offset: int
    message: str

    def __str__(self) -> str:
        return f"offset {self.offset}: {self.message}"


@dataclass
class _Transaction:
    name: str
    start_offset: int
    records: list = field(default_factory=list)      # (message, offset)


@dataclass(frozen=True)
class Mark:
    """What a ControllerState keeps beside its image, as it was when ``mark()`` was called: what a
    fast rollback to that point puts back (rollback.py). Nothing here is copied when taken: the
    offsets map is copied by the state before its next change, the feature order is replaced,
    never changed in place, and the open transaction's records only grow, so its length then
    says which were there."""
    transaction: _Transaction | None
    transaction_records: int
    register_broker_offsets: dict
    feature_order: list


class UnsupportedFeatureLevel(StateMachineFatal):
    """A committed feature level this node does not support; the message is Kafka's."""


def _version_range_text(low: int, high: int) -> str:
    """VersionRange.toString."""
    return str(low) if low == high else f"{low}+" if high == 0x7FFF else f"{low}-{high}"


class ControllerState:
    def __init__(self, supported_features: dict[str, tuple[int, int]] | None = None,
                 replay_stats: ReplayStats | None = None):
        """``supported_features``: name -> (min, max) level this node supports; None accepts any level;
        ``replay_stats``: the counts replay adds to (kept across a snapshot load)."""
        self.supported_features = supported_features
        self.replay_stats = replay_stats or ReplayStats()
        self.image = MetadataImage()
        self.next_offset = 0                  # one past the last data record replayed
        self.register_broker_offsets: dict[int, int] = {}
        self.feature_order: list[str] = []    # finalized features (not metadata.version), as inserted
        self.partition_index = PartitionIndex()
        self.problems: list[Problem] = []
        self._transaction: _Transaction | None = None
        self._offsets_marked = False          # a Mark holds register_broker_offsets: copy it before a change
        self.node_configs = NodeConfigs()     # the controller's own, not the log's: kept by adopt

    # --- queries ------------------------------------------------------------------------------
    @property
    def metadata_version(self) -> int | None:
        return self.image.metadata_version

    @property
    def transaction_start_offset(self) -> int:
        return -1 if self._transaction is None else self._transaction.start_offset

    @property
    def in_transaction(self) -> bool:
        return self._transaction is not None

    def finalized_features(self) -> dict[str, int]:
        """Every finalized feature with its level, metadata.version included."""
        levels = dict(self.image.finalized_features)
        if self.image.metadata_version is not None:
            levels[METADATA_VERSION] = self.image.metadata_version
        return levels

    # --- a point to roll back to (rollback.py) --------------------------------------------------
    def mark(self) -> Mark:
        """What this state keeps beside its image now, in O(1) (the pipeline takes one before each
        write it applies ahead of its commit)."""
        txn = self._transaction
        self._offsets_marked = True
        return Mark(txn, 0 if txn is None else len(txn.records), self.register_broker_offsets, self.feature_order)

    def back_to(self, mark: Mark, next_offset: int) -> None:
        """Put back what ``mark`` holds (the image is the caller's), ``next_offset`` past the
        last record kept: a transaction open then is open again with the records it had."""
        txn = mark.transaction
        if txn is not None:
            del txn.records[mark.transaction_records:]
        self._transaction = txn
        self.register_broker_offsets, self.feature_order = mark.register_broker_offsets, mark.feature_order
        self._offsets_marked = True           # other marks, dropped by now, may have held it too
        self.next_offset = next_offset

    def _writable_offsets(self) -> dict[int, int]:
        if self._offsets_marked:
            self.register_broker_offsets = dict(self.register_broker_offsets)
            self._offsets_marked = False
        return self.register_broker_offsets

    # --- replay -------------------------------------------------------------------------------
    def apply_batch(self, base_offset: int, epoch: int, append_time_ms: int, values: list[bytes]) -> None:
        """One committed batch: every record in order; the batch is one delta for the feature order.

        A PartitionChangeRecord outside a transaction, the most frequent record (a broker's
        fencing writes one per partition it was in, topic by topic), goes straight to its
        apply, and a run of them to one topic looks the topic up once (``run``: the topic id's
        bits and the image's topic; any other record ends the run, as it may change the topic)."""
        new_features: list[str] = []
        run = [None, None]
        offset = base_offset
        for value in values:
            message = self._decode(value, offset)
            if message is not None:
                if type(message) is PartitionChangeRecord and self._transaction is None:
                    self._apply_partition_change(message, offset, run)
                else:
                    run[0] = None
                    self._replay(message, offset, new_features)
            offset += 1
        self._note_new_features(new_features)
        if values:
            self.next_offset = base_offset + len(values)
            if self._transaction is None:
                self.image.provenance = Provenance(self.next_offset - 1, epoch, append_time_ms)

    def load_snapshot(self, end_offset: int, epoch: int, values: list[bytes]) -> None:
        """Replace everything with a snapshot's records; what it describes ends before ``end_offset``."""
        load = SnapshotLoad(self.supported_features, end_offset, epoch)
        load.add(values)
        self.adopt(load.result())

    def adopt(self, loaded: ControllerState) -> dict:
        """Become ``loaded`` (a state a SnapshotLoad built aside) whole, in one assignment, keeping
        this object (others hold it) and its replay counts, to which the load's are added.
        Returns what it was (its attributes), for ``state_release.release_in_steps``."""
        stats = self.replay_stats
        stats.unclean_elections += loaded.replay_stats.unclean_elections
        stats.elr_elections += loaded.replay_stats.elr_elections
        stats.errors += loaded.replay_stats.errors
        old = dict(self.__dict__)
        node_configs = self.node_configs
        self.__dict__.update(loaded.__dict__)
        self.replay_stats, self.node_configs = stats, node_configs
        return old

    def _load_record(self, value, end_offset: int, new_features: list[str]) -> None:
        message = self._decode(value, end_offset - 1)
        if message is None:
            return
        if type(message).NAME in _TRANSACTION_MARKERS:
            self._problem(end_offset - 1, f"{type(message).NAME} in a snapshot is ignored")
            return
        # Kafka replays a snapshot's records with the snapshot's last contained offset.
        self._apply(message, end_offset - 1, new_features)

    def _decode(self, value, offset: int):
        message = take_built(value)       # a record this controller just built: no need to decode it
        if message is not None:
            return message
        try:
            return decode_metadata_message(value)
        except MetadataRecordError as exc:
            self._problem(offset, str(exc))
            return None

    def _replay(self, message, offset: int, new_features: list[str]) -> None:
        name = type(message).NAME
        txn = self._transaction
        if name == "BeginTransactionRecord":
            if txn is not None:
                self._problem(offset, f"BeginTransactionRecord while the transaction begun at offset "
                                      f"{txn.start_offset} is open; ignored")
                return
            self._transaction = _Transaction(message.name, offset)
        elif name in ("EndTransactionRecord", "AbortTransactionRecord"):
            if txn is None:
                self._problem(offset, f"{name} without a BeginTransactionRecord; ignored")
                return
            self._transaction = None
            if name == "EndTransactionRecord":
                for pending, pending_offset in txn.records:
                    self._apply(pending, pending_offset, new_features)
            else:
                log.info("metadata transaction %r begun at offset %d aborted at offset %d (%d records dropped)",
                         txn.name, txn.start_offset, offset, len(txn.records))
        elif txn is not None:
            txn.records.append((message, offset))
        else:
            self._apply(message, offset, new_features)

    def _check_supported(self, record, offset: int) -> None:
        """FeatureControlManager.replay's check: a feature this node does not know supports level 0 only."""
        low, high = self.supported_features.get(record.name, (0, 0))
        if not low <= record.feature_level <= high:
            raise UnsupportedFeatureLevel(
                f"Unable to apply FeatureLevelRecord record at offset {offset}: Tried to apply FeatureLevelRecord "
                f"FeatureLevelRecord(name='{record.name}', featureLevel={record.feature_level}), but this controller "
                f"only supports versions {_version_range_text(low, high)}")

    def _apply(self, message, offset: int, new_features: list[str]) -> None:
        name = type(message).NAME
        if name == "PartitionChangeRecord":
            self._apply_partition_change(message, offset)
            return
        if name == "FeatureLevelRecord" and self.supported_features is not None:
            self._check_supported(message, offset)
        touched = self.partition_index.before_apply(self.image, message)
        try:
            self.image.apply(message)
        except ImageError as exc:
            self._problem(offset, f"{name}: {exc}")
            return
        finally:
            self.partition_index.after_apply(self.image, touched)
        if name == "PartitionChangeRecord":
            self.replay_stats.partition_changed(touched[0][2], message)
        if name == "RegisterBrokerRecord":
            self._writable_offsets()[message.broker_id] = offset
        elif name == "UnregisterBrokerRecord":
            self._writable_offsets().pop(message.broker_id, None)
        elif name == "FeatureLevelRecord" and message.name != METADATA_VERSION:
            if message.feature_level == 0:
                if message.name in self.feature_order:      # replaced, not changed: a Mark may hold it
                    self.feature_order = [n for n in self.feature_order if n != message.name]
                if message.name in new_features:
                    new_features.remove(message.name)
            elif message.name not in self.feature_order and message.name not in new_features:
                new_features.append(message.name)

    def _apply_partition_change(self, message, offset: int, run: list | None = None) -> None:
        """``_apply`` of a PartitionChangeRecord, the most frequent record (a broker's fencing
        writes one per partition it was in): the image gives the registration before and after,
        which the index takes as they are, with no other lookup of the topic (issue 28).
        ``run`` (apply_batch's): the topic of the record before, [topic id bits, topic], kept
        up to date; None: look the topic up."""
        try:
            if run is None:
                before, after = self.image.apply_partition_change(message)
            else:
                bits = message.topic_id.int         # an int compared in C: a UUID hashes in Python
                if run[0] != bits:
                    run[1] = self.image.writable_topic(message)
                    run[0] = bits
                before, after = self.image.apply_partition_change(message, run[1])
        except ImageError as exc:
            self._problem(offset, f"PartitionChangeRecord: {exc}")
            return
        self.partition_index.update(message.topic_id, message.partition_id, before, after)
        self.replay_stats.partition_changed(before, message)

    def _note_new_features(self, new_features: list[str]) -> None:
        # FeaturesDelta.apply copies the old image's features, then adds the new ones in the
        # order of its `changes` HashMap.
        if new_features:          # replaced, not changed in place: a Mark may hold it
            added = string_hashmap_order(new_features, grown_capacity(len(new_features)))
            self.feature_order = self.feature_order + added

    def _problem(self, offset: int, message: str) -> None:
        problem = Problem(offset, message)
        self.problems.append(problem)
        self.replay_stats.errors += 1
        log.error("metadata record at %s", problem)


class SnapshotLoad:
    """A snapshot's records replayed into a new ControllerState built aside, in as many calls
    of ``add`` as the caller makes (the raft driver makes one per step of a few milliseconds),
    then ``result()``: the state as ``load_snapshot`` of all the records at once makes it (the
    whole snapshot is one delta for the feature order, as there). Nothing here touches the
    state readers use: the caller swaps the result in (ControllerState.adopt) or drops it."""

    def __init__(self, supported_features: dict[str, tuple[int, int]] | None, end_offset: int, epoch: int):
        self.state = ControllerState(supported_features)
        self.end_offset, self.epoch = end_offset, epoch
        self._new_features: list[str] = []

    @staticmethod
    def prepare() -> None:
        """Every metadata record's decoder imported (the driver calls this off the loop before
        the first ``add``: a fresh process imported each on the loop at its first record,
        10-50 ms apiece, the longest steps of a load)."""
        for name, _, kind, _ in messages.REGISTRY.index:
            if kind == "metadata":
                messages.REGISTRY.by_name(name)

    def add(self, values: list[bytes]) -> None:
        """The next records of the snapshot, in order; may raise UnsupportedFeatureLevel."""
        state, end_offset, new_features = self.state, self.end_offset, self._new_features
        for value in values:
            state._load_record(value, end_offset, new_features)

    def result(self) -> ControllerState:
        state = self.state
        state._note_new_features(self._new_features)
        self._new_features = []
        state.next_offset = self.end_offset
        state.image.provenance = Provenance(self.end_offset - 1, self.epoch, -1)
        return state
