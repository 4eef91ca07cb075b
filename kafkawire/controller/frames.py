"""Metadata record frames from field values: the bytes the controller appends."""
from __future__ import annotations

from kafkawire import messages
from kafkawire.metadata.frame import encode_metadata_record


def frame(record: str, version: int = 0, /, **fields) -> bytes:
    """``record`` (a metadata record class name) with ``fields``, framed at ``version``."""
    return encode_metadata_record(messages.by_name(record)(**fields), version)


def struct(record: str, struct_name: str):
    """A nested struct class of a generated message (e.g. RegisterBrokerRecord's BrokerEndpoint)."""
    module = __import__(messages.by_name(record).__module__, fromlist=[struct_name])
    return getattr(module, struct_name)
