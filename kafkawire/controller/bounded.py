"""The bound on the records one user operation may write, as Kafka's controller keeps it:
QuorumController.MAX_RECORDS_PER_USER_OP (10,000, its largest batch) and the BoundedList its
control managers collect an operation's records in, which refuses the record past the bound
(BoundedListTooLongException).

The bound counts records generated, not entries requested: an ACL that exists already or a
config left unchanged writes nothing and costs nothing. Where Kafka lets the exception reach the
controller's event handler (EventHandlerExceptionInfo) the whole request is refused with
POLICY_VIOLATION "Unable to perform excessively large batch operation." and writes nothing;
controller._write does that conversion here. Where Kafka's answer differs, the generator
catches BoundedListTooLong itself: per entry, UNKNOWN_SERVER_ERROR without a message
(partition_creation, topic_deletion, reassignment: Kafka's catch-all there); CreateAcls keeps
the refusals AclApis made before the controller (acls.py); DeleteAcls answers INVALID_REQUEST
with its own text (acls.py).
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors

from .errors import ApiError

MAX_RECORDS_PER_USER_OP = 10_000
EXCESSIVE_BATCH_MESSAGE = "Unable to perform excessively large batch operation."


class BoundedListTooLong(Exception):
    """BoundedListTooLongException. Deliberately not an ApiError, so the per-entry ``except
    ApiError`` of the generators do not turn it into one entry's refusal."""


def excessive_batch() -> ApiError:
    """What the client sees for a BoundedListTooLong that ends the operation."""
    return ApiError(Errors.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE)


class BoundedList(list):
    """A list that refuses to grow past ``max_length`` (BoundedList.newArrayBacked)."""

    def __init__(self, max_length: int | None = None):
        if max_length is None:
            max_length = MAX_RECORDS_PER_USER_OP        # looked up now, so a test may lower it
        if max_length <= 0:
            raise ValueError(f"Invalid non-positive maxLength of {max_length}")
        super().__init__()
        self.max_length = max_length

    def check_room(self, count: int) -> None:
        """Refuse, before the work of building them, ``count`` more elements that would not fit
        (the check BoundedList.addAll makes)."""
        if len(self) > self.max_length - count:
            raise BoundedListTooLong(f"Cannot add another {count} element(s) to the list because it would exceed "
                                     f"the maximum length of {self.max_length}")

    def append(self, item) -> None:
        if len(self) >= self.max_length:
            raise BoundedListTooLong("Cannot add another element to the list because it would exceed the maximum "
                                     f"length of {self.max_length}")
        super().append(item)

    def insert(self, index, item) -> None:
        self.check_room(1)
        super().insert(index, item)

    def extend(self, items) -> None:
        items = list(items)
        self.check_room(len(items))
        super().extend(items)

    def __iadd__(self, items):
        self.extend(items)
        return self
