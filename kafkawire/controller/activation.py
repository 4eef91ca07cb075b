"""What a controller appends when it becomes active: Kafka 4.x's ActivationRecordsGenerator.

* A log without a metadata.version gets the bootstrap records (the data records of
  bootstrap.checkpoint). From metadata.version 3.6-IV1 they go inside a metadata transaction
  (BeginTransactionRecord "Bootstrap records" ... EndTransactionRecord), before that as one
  atomic batch. When the bootstrap finalizes eligible.leader.replicas.version above 0, a
  cluster-level min.insync.replicas ConfigRecord (the static value, 1 by default) goes with
  them, as Kafka 4.1+ writes it. A bootstrap transaction left open by a previous leader is
  aborted first ("Controller failover") and the bootstrap appended again.
* A log that has a metadata.version gets nothing, unless a metadata transaction was left open:
  then an AbortTransactionRecord closes it.

The controller appends the result as one batch, so the activation commits whole or not at all.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkawire.metadata.frame import MetadataRecordError, decode_metadata_record

from .frames import frame
from .versions import ELR_VERSION, METADATA_VERSION, transactions_supported

BROKER_RESOURCE = 4                  # ConfigResource.Type.BROKER; "" names the cluster default
MIN_INSYNC_REPLICAS = "min.insync.replicas"
BOOTSTRAP_TRANSACTION = "Bootstrap records"
FAILOVER_REASON = "Controller failover"


class BootstrapError(ValueError):
    """Bootstrap records the controller cannot start a cluster from, saying why."""


@dataclass(frozen=True)
class Activation:
    records: list[bytes]
    message: str            # what Kafka logs ("Performing controller activation. ...")


def feature_level(bootstrap_records: list[bytes], name: str) -> int | None:
    """BootstrapMetadata.featureLevel: the last FeatureLevelRecord for ``name``, or None."""
    level = None
    for i, value in enumerate(bootstrap_records):
        try:
            message = decode_metadata_record(value).message
        except MetadataRecordError as exc:
            raise BootstrapError(f"bootstrap record {i} cannot be decoded: {exc}") from None
        if type(message).NAME == "FeatureLevelRecord" and message.name == name:
            level = message.feature_level
    return level


def activation_records(*, metadata_version: int | None, transaction_start_offset: int,
                       bootstrap_records: list[bytes], bootstrap_source: str,
                       static_min_insync_replicas: int = 1) -> Activation:
    """ActivationRecordsGenerator.generate for the committed state (``metadata_version`` None
    means the log holds none: it is empty as far as the controller is concerned)."""
    if metadata_version is None:
        return _for_empty_log(transaction_start_offset, bootstrap_records, bootstrap_source,
                              static_min_insync_replicas)
    return _for_non_empty_log(transaction_start_offset, metadata_version)


def _for_empty_log(transaction_start_offset, bootstrap_records, source, min_insync) -> Activation:
    level = feature_level(bootstrap_records, METADATA_VERSION)
    if level is None:
        raise BootstrapError(f"No FeatureLevelRecord for {METADATA_VERSION} was found in the bootstrap "
                             f"metadata from {source}")
    transactional = transactions_supported(level)
    text = ["Performing controller activation."]
    records: list[bytes] = []
    if transaction_start_offset != -1:
        if not transactional:
            raise BootstrapError(f"Detected partial bootstrap records transaction at {transaction_start_offset}, "
                                 f"but the metadata.version {level} does not support transactions. Cannot continue.")
        text.append(f"Aborting partial bootstrap records transaction at offset {transaction_start_offset}. "
                    f"Re-appending {len(bootstrap_records)} bootstrap record(s) in new metadata transaction at "
                    f"metadata.version level {level} from bootstrap source '{source}'.")
        records.append(frame("AbortTransactionRecord", reason=FAILOVER_REASON))
        records.append(frame("BeginTransactionRecord", name=BOOTSTRAP_TRANSACTION))
    else:
        where = "in metadata transaction " if transactional else ""
        text.append(f"The metadata log appears to be empty. Appending {len(bootstrap_records)} bootstrap "
                    f"record(s) {where}at metadata.version level {level} from bootstrap source '{source}'.")
        if transactional:
            records.append(frame("BeginTransactionRecord", name=BOOTSTRAP_TRANSACTION))
    records += bootstrap_records
    if (feature_level(bootstrap_records, ELR_VERSION) or 0) > 0:
        records.append(frame("ConfigRecord", resource_type=BROKER_RESOURCE, resource_name="",
                             name=MIN_INSYNC_REPLICAS, value=str(min_insync)))
    if transactional:
        records.append(frame("EndTransactionRecord"))
    return Activation(records, " ".join(text))


def _for_non_empty_log(transaction_start_offset: int, metadata_version: int) -> Activation:
    text = ["Performing controller activation."]
    records = []
    if transaction_start_offset != -1:
        if not transactions_supported(metadata_version):
            raise BootstrapError(f"Detected in-progress transaction at offset {transaction_start_offset}, but the "
                                 f"metadata.version level {metadata_version} does not support transactions. "
                                 "Cannot continue.")
        text.append(f"Aborting in-progress metadata transaction at offset {transaction_start_offset}.")
        records.append(frame("AbortTransactionRecord", reason=FAILOVER_REASON))
    return Activation(records, " ".join(text))
