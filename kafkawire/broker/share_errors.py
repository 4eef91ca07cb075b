"""The messages Kafka 4.3.1 sends beside a share-partition's error code in ShareFetch
(ErrorMessage, AcknowledgeErrorMessage) and ShareAcknowledge (ErrorMessage).

Kafka's SharePartitionManager answers a failed share-partition with its exception's message, so
the code travels here with its message: ``with_message`` makes an error code (an int, equal to
the plain code wherever it is compared) that carries the text, ``message_of`` reads it back (None
for a plain code: Kafka sends no message there either).

    code = with_message(Errors.INVALID_RECORD_STATE, NOT_OWNER)
    code == Errors.INVALID_RECORD_STATE, message_of(code)       # True, "Member is not the owner of offset"

The share coordinator's errors reach the client as SharePartition.fetchPersisterError maps them
(``persister_error``), with the coordinator's message, the error's default message when it sent
none, or PersisterStateManager's own when its retries ran out (``persister_failure``).
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors

__all__ = ["with_message", "message_of", "persister_failure", "persister_error", "not_hosted",
           "NOT_ACQUIRED", "NOT_OWNER", "RENEW_DISABLED", "NOT_IN_CACHE", "FIRST_PAST_ACQUIRED", "LAST_PAST_ACQUIRED"]

# SharePartition's acknowledgement refusals (acknowledgePerOffsetBatchRecords, findSubMap)
NOT_ACQUIRED = "The offset cannot be acknowledged. The offset is not acquired."
NOT_OWNER = "Member is not the owner of offset"
RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."
NOT_IN_CACHE = "Batch record not found. The request batch offsets are not found in the cache."
FIRST_PAST_ACQUIRED = "Batch record not found. The first offset in request is past acquired records."
LAST_PAST_ACQUIRED = "Batch record not found. The last offset in request is past acquired records."
SERVER_ERROR = "Unable to complete operation due to server error."
FENCED = {int(Errors.FENCED_STATE_EPOCH), int(Errors.FENCED_LEADER_EPOCH)}
COORDINATOR_MOVED = {int(Errors.NOT_COORDINATOR), int(Errors.COORDINATOR_NOT_AVAILABLE),
                     int(Errors.COORDINATOR_LOAD_IN_PROGRESS)}
HIDDEN = {int(Errors.SASL_AUTHENTICATION_FAILED), int(Errors.UNSUPPORTED_VERSION)}


class _CodeWithMessage(int):
    """An error code that carries the message sent with it."""

    message: str | None

    def __new__(cls, code: int, message: str | None):
        made = super().__new__(cls, int(code))
        made.message = message
        return made

    def __repr__(self) -> str:
        return f"{Errors.for_code(int(self)).name}({self.message!r})"


def with_message(code: int, message: str | None) -> int:
    return _CodeWithMessage(code, message) if message else code


def message_of(code: int) -> str | None:
    # a plain Errors member has a default message too: Kafka sends none with those codes
    return code.message if isinstance(code, _CodeWithMessage) else None


def not_hosted(topic: str, index: int) -> str:
    """ReplicaManager.getPartitionOrException's message for a partition this broker has no replica of."""
    return f"Error while fetching partition state for {topic}-{index}"


def persister_failure(result, rpc: str, retries_ran_out: bool) -> int:
    """A share coordinator's failed partition result (``rpc``: read, write, ...) as the code
    PersisterStateManager reports, with its message."""
    code = result.error_code
    if retries_ran_out:
        return _CodeWithMessage(code, f"Exhausted max retries to complete {rpc} state RPC without success.")
    return _CodeWithMessage(code, getattr(result, "error_message", None) or Errors.for_code(code).message)


def persister_error(code: int) -> int:
    """The error a fetch or acknowledgement answers for a failed read or write of the share
    coordinator, with its message, as Kafka's SharePartition.fetchPersisterError maps it."""
    message = message_of(code)
    if code == Errors.NONE or code in (Errors.GROUP_ID_NOT_FOUND, Errors.UNKNOWN_TOPIC_OR_PARTITION):
        return code
    if code in COORDINATOR_MOVED:
        return with_message(Errors.COORDINATOR_NOT_AVAILABLE, message)
    if code in FENCED:
        return with_message(Errors.NOT_LEADER_OR_FOLLOWER, message)
    if code in HIDDEN:
        return with_message(Errors.UNKNOWN_SERVER_ERROR, SERVER_ERROR)
    return with_message(Errors.UNKNOWN_SERVER_ERROR, message)
