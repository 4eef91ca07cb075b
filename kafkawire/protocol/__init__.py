"""Kafka's wire protocol: primitives, the message base class, headers and framing.

Modules: ``primitives`` (Kafka's types on the wire), ``message`` (the base class of the generated
codecs), ``framing`` (size-prefixed frames, request and response headers), ``registry`` (the
look-up of generated classes), ``apis`` (the API table an ApiVersions response advertises),
``errors`` and ``error_codes``. The names below are imported on first use.
"""
from kafkawire._lazy import lazy_exports

__all__ = [
    "BadBytesError", "DecodeError", "EncodeError", "UnsupportedVersionError",
    "Message", "Registry", "installed",
    "Request", "encode_request_frame", "decode_request_frame", "encode_response_frame", "decode_response_frame",
    "decode_request", "decode_response", "iter_frames", "FrameReader",
    "api_table",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "BadBytesError": ".errors:BadBytesError",
    "DecodeError": ".errors:DecodeError",
    "EncodeError": ".errors:EncodeError",
    "UnsupportedVersionError": ".errors:UnsupportedVersionError",
    "Message": ".message:Message",
    "Registry": ".registry:Registry",
    "installed": ".registry:installed",
    **{name: f".framing:{name}" for name in (
        "Request", "encode_request_frame", "decode_request_frame", "encode_response_frame",
        "decode_response_frame", "decode_request", "decode_response", "iter_frames", "FrameReader")},
    "api_table": ".apis:api_table",
})
