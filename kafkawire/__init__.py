"""kafkawire: Apache Kafka's wire protocol, record batches, on-disk log and KRaft, in Python.

The names here are the entry points a library user needs; each is imported on first use, so
``import kafkawire`` costs about a millisecond and importing any submodule alone is enough too
(there is no import order to get right)::

    import kafkawire

    frame = kafkawire.encode_request_frame(body, api_version, correlation_id)   # size prefix included
    request = kafkawire.decode_request_frame(frame)                            # the same frame back
    for payload in kafkawire.iter_frames(open("stream.bin", "rb")):           # prefixes removed
        kafkawire.decode_request(payload)

    with kafkawire.read_log_directory("/var/lib/kafka/data") as logs:         # never writes
        for record in logs.partition("orders", 0).records():
            record.offset, record.key, record.value

    replay = kafkawire.read_metadata_image("/var/lib/kafka/meta/__cluster_metadata-0")
    capture = kafkawire.read_capture("traffic.pcapng")

Readers never write: ``read_log_directory`` and ``read_segment`` open files read-only, create and
lock nothing and recover nothing, so they are safe on a live broker's directories.
``kafkawire.storage.Log`` is the owner's writer (it recovers and truncates on open): never point
it at a directory a broker uses.

Every error raised for input that cannot be read derives from ``BadBytesError`` (a ValueError). A
feature used without its optional dependencies raises ``MissingExtra`` (an ImportError) naming
the extra to install (``pip install 'kafkawire[pcap]'``).
Message classes: ``kafkawire.messages.by_name("FetchRequest")``.
"""
from kafkawire._lazy import lazy_exports

__all__ = [
    "__version__",
    "messages",
    "Request", "encode_request_frame", "decode_request_frame", "encode_response_frame",
    "decode_response_frame", "decode_request", "decode_response", "iter_frames",
    "iter_batches", "read_segment", "read_log_directory", "LogDirectoryReader", "PartitionReader",
    "read_metadata_records", "read_metadata_image",
    "read_capture",
    "BadBytesError", "DecodeError", "CorruptRecordError", "MissingExtra",
]

_getattr, __dir__ = lazy_exports(__name__, {
    "messages": "kafkawire.messages",
    "Request": "kafkawire.protocol.framing:Request",
    "encode_request_frame": "kafkawire.protocol.framing:encode_request_frame",
    "decode_request_frame": "kafkawire.protocol.framing:decode_request_frame",
    "encode_response_frame": "kafkawire.protocol.framing:encode_response_frame",
    "decode_response_frame": "kafkawire.protocol.framing:decode_response_frame",
    "decode_request": "kafkawire.protocol.framing:decode_request",
    "decode_response": "kafkawire.protocol.framing:decode_response",
    "iter_frames": "kafkawire.protocol.framing:iter_frames",
    "iter_batches": "kafkawire.records:iter_batches",
    "read_segment": "kafkawire.storage.reader:read_segment",
    "read_log_directory": "kafkawire.storage.reader:read_log_directory",
    "LogDirectoryReader": "kafkawire.storage.reader:LogDirectoryReader",
    "PartitionReader": "kafkawire.storage.reader:PartitionReader",
    "read_metadata_records": "kafkawire.metadata.files:read_metadata_records",
    "read_metadata_image": "kafkawire.metadata.files:read_metadata_image",
    "read_capture": "kafkawire.capture.read:read_capture",
    "BadBytesError": "kafkawire.protocol.errors:BadBytesError",
    "DecodeError": "kafkawire.protocol.errors:DecodeError",
    "CorruptRecordError": "kafkawire.records.errors:CorruptRecordError",
    "MissingExtra": "kafkawire._extras:MissingExtra",
})


def _version() -> str:
    """The installed distribution's version; the source tree's when kafkawire is not installed."""
    from importlib import metadata
    try:
        return metadata.version("kafkawire")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str):
    if name == "__version__":
        globals()["__version__"] = version = _version()
        return version
    return _getattr(name)
