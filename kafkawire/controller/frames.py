"""Metadata record frames from field values: the bytes the controller appends.

``built_frame`` also remembers the message it encoded, by the frame's identity, so that the
controller's own apply of that very value (ControllerState, right after the write is
generated) takes the message instead of decoding the bytes just encoded (``take_built``): a
fencing moves one PartitionChangeRecord per partition, and decoding it again cost a tenth of
each move (issue 28). The bytes in the log are the same either way; a value that is not the
object remembered (a copy, another node's, a record read back from the log) is decoded.
"""
from __future__ import annotations

from kafkawire import messages
from kafkawire.metadata.frame import encode_metadata_record

# At most this many messages wait to be taken: a controller write holds at most
# MAX_RECORDS_PER_USER_OP (10,000, bounded.py) records, and one whose records are never applied
# (its generate failed after framing some) leaves them until newer ones push them out.
MAX_REMEMBERED = 10_000

# id(value) -> (value, message). The value is held, so its id cannot be reused while it is here.
_remembered: dict[int, tuple[bytes, object]] = {}


def frame(record: str, version: int = 0, /, **fields) -> bytes:
    """``record`` (a metadata record class name) with ``fields``, framed at ``version``."""
    return encode_metadata_record(messages.by_name(record)(**fields), version)


def built_frame(message, version: int) -> bytes:
    """``message`` framed at ``version``, remembered for ``take_built``. The caller hands the
    message over: nothing may change it (or the lists in it) afterwards."""
    value = encode_metadata_record(message, version)
    while len(_remembered) >= MAX_REMEMBERED:
        _remembered.pop(next(iter(_remembered)), None)      # the oldest
    _remembered[id(value)] = (value, message)
    return value


def take_built(value):
    """The message ``built_frame`` made ``value`` from (forgotten from now on), or None when
    ``value`` is not a frame it made and still remembers."""
    entry = _remembered.get(id(value))
    if entry is None or entry[0] is not value:
        return None
    _remembered.pop(id(value), None)
    return entry[1]


def struct(record: str, struct_name: str):
    """A nested struct class of a generated message (e.g. RegisterBrokerRecord's BrokerEndpoint)."""
    module = __import__(messages.by_name(record).__module__, fromlist=[struct_name])
    return getattr(module, struct_name)
