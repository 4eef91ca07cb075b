"""Every decoding error of the package shares one documented base,
kafkawire.protocol.errors.BadBytesError (issue 18, item 7): a caller catches "bad bytes" once,
whatever reader met them."""
import pytest

from kafkawire import messages
from kafkawire.metadata.frame import MetadataRecordError, decode_metadata_record
from kafkawire.protocol.errors import BadBytesError, DecodeError, EncodeError, JsonError
from kafkawire.records import CorruptRecordError, build_batch, iter_batches
from kafkawire.storage.index import CorruptIndexError, OffsetIndex
from kafkawire.storage.snapshot import SnapshotFormatError, SnapshotReader
from kafkawire.storage.state_files import StateFileError, parse_quorum_state


def _bad_batch() -> bytes:
    data = bytearray(build_batch([(None, b"value")]))
    data[-1] ^= 0xFF     # the CRC no longer matches
    return bytes(data)


def _bad_snapshot(tmp_path) -> None:
    path = tmp_path / "00000000000000000005-0000000001.checkpoint"
    path.write_bytes(build_batch([(None, b"not a snapshot header")]))
    SnapshotReader(path)


def _bad_index(tmp_path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(b"\x00\x00\x00\x05\x00\x00\x00\x00" + b"\x00\x00\x00\x01\x00\x00\x00\x00")
    OffsetIndex(path, 0).sanity_check()


READERS = {
    "a message": (DecodeError, lambda tmp: messages.by_name("VoteRequest").decode(b"\x00\x01", 2)),
    "a message's JSON": (JsonError, lambda tmp: messages.by_name("VoteRequest").from_json({"clusterId": 7}, 2)),
    "a record batch": (CorruptRecordError, lambda tmp: list(iter_batches(_bad_batch()))),
    "a metadata record frame": (MetadataRecordError, lambda tmp: decode_metadata_record(b"\x01\xff\x7f\x00")),
    "a snapshot file": (SnapshotFormatError, _bad_snapshot),
    "an index file": (CorruptIndexError, _bad_index),
    "quorum-state": (StateFileError, lambda tmp: parse_quorum_state('{"data_version": 1, "leaderEpoch": "x"}')),
}


@pytest.mark.parametrize("what", sorted(READERS))
def test_bad_bytes_are_caught_once(what, tmp_path):
    specific, read = READERS[what]
    assert issubclass(specific, BadBytesError) and issubclass(specific, ValueError)
    with pytest.raises(BadBytesError) as caught:
        read(tmp_path)
    assert isinstance(caught.value, specific), f"{what}: {type(caught.value).__name__}: {caught.value}"


def test_a_program_error_is_not_bad_bytes():
    assert not issubclass(EncodeError, BadBytesError)
