"""The native message decoder and encoder (issue 26): each generated module hands its field programs
(``_NATIVE_PROGRAMS``, made by kafkawire/codegen/emit_native.py from the same schema as its
Python decoders) to ``install``, which puts a C decoder in front of the Python one in the
message's ``_DECODERS`` table, version by version.

The C decoder builds the same objects as the Python decoder it stands for. On any bytes it
cannot decode (truncated, bad length, bad UTF-8, ...) it gives up and calls that Python decoder,
which raises exactly the error it always raised (class, message, field and byte offset):
errors are worded in one place, the pure path, which stays the oracle. Message.decode and
every other caller are unchanged. The decoder's ``pure`` attribute is the Python function,
``native(data, pos)`` runs the C code alone (ValueError where it would fall back: for tests).
``install`` also gives the class a ``decode`` in C that does Message.decode's common case
(bytes, a version with a native decoder, no ``partial``, every byte used) in one call and
hands every other call, bad bytes included, to Message.decode itself (on the class it was
installed on).

Encoding goes the same way: ``install`` fills the message class's ``_NATIVE_ENCODERS`` (version
-> C encoder over the same program), which Message.encode tries first; the C encoder returns
the bytes, or None for anything it does not take on (a value of an unexpected type, a field set
in a version without it, unknown tagged fields, ...), and the generated encoder runs as before,
writing the same bytes or raising its own EncodeError. ``install`` also gives the class an
``encode`` method in C that runs the version's C encoder itself (``_NATIVE_ENCODERS`` read on
every call) and hands every other call to Message.encode. ``encode_into`` stays pure.

With ``KAFKAWIRE_PURE=1``, or without the C extension, ``install`` leaves the tables alone.
"""
from __future__ import annotations

from kafkawire import _native

from .message import Message

__all__ = ["install", "native_decoders_enabled"]

_module = _native.records if _native.records is not None and hasattr(_native.records, "MessagePrograms") else None


def native_decoders_enabled() -> bool:
    """Whether generated messages decode through the C extension (False: the pure path)."""
    return _module is not None


def install(message_cls, programs: dict, namespace: dict) -> None:
    """Put a native decoder in front of each of ``message_cls``'s decoding functions that has a
    program; the functions of ``namespace`` (the generated module) are its fallback."""
    if _module is None:
        return
    compiled = _module.MessagePrograms(programs, namespace)
    decoders = message_cls._DECODERS
    encoders = {}
    for version, pure in list(decoders.items()):
        if pure.__name__ in programs:
            decoders[version] = compiled.decoder(pure.__name__, pure)
            encoders[version] = compiled.encoder(pure.__name__)
    message_cls._NATIVE_ENCODERS = encoders
    # Message.decode in C for the common call (whole bytes, no partial): for a small message the
    # Python method's own steps cost more than the decoding; everything else goes to that method.
    message_cls.decode = compiled.class_decode(message_cls, decoders, Message.decode.__func__)
    # And message.encode in C: the native encoder's bytes without Message.encode's Python frame;
    # anything it does not take on is Message.encode's own work.
    message_cls.encode = compiled.method_encode(Message.encode)
