"""Every metadata record in real KRaft data decodes through the generated classes and
re-encodes to its original bytes."""

import pytest

from kafkawire import messages
from kafkawire.metadata import MetadataRecordError, decode_metadata_record, encode_metadata_record
from tests.conftest import REFERENCE
from tests.kafka_data_checks import metadata_records_round_trip

KRAFT_DATA = REFERENCE / "kraft-data"
# apache/kafka's own accidentally committed test data (trunk 3.7.0-SNAPSHOT, Dec 2023) holds
# PartitionRecord "v1" in the layout trunk briefly had before release: ELR as tags 1 and 2 and
# no Directories array. Released Kafka (3.7+, v1 = Directories) refuses these bytes, and so do we.
PRE_RELEASE = "apache__kafka"


def metadata_files():
    for path in sorted(KRAFT_DATA.rglob("*")):
        if path.is_file() and ((path.suffix == ".log" and "__cluster_metadata" in path.parent.name)
                               or path.name.endswith(".checkpoint")):
            yield path


def test_every_real_metadata_record_round_trips():
    if not KRAFT_DATA.exists():
        pytest.skip(f"reference material not available: {KRAFT_DATA} is missing")
    seen, refused = metadata_records_round_trip(metadata_files())
    assert seen["TopicRecord"] and seen["PartitionRecord"] and seen["FeatureLevelRecord"] and seen["RegisterBrokerRecord"]
    for path, error in refused:
        assert PRE_RELEASE in str(path), f"{path}: {error}"
        assert error.startswith("PartitionRecord v1, field Directories"), error


def test_frame_errors_are_clear():
    with pytest.raises(MetadataRecordError, match="unknown metadata record type 99"):
        decode_metadata_record(b"\x01\x63\x00")
    with pytest.raises(MetadataRecordError, match="frame version 7"):
        decode_metadata_record(b"\x07\x02\x00")
    with pytest.raises(MetadataRecordError, match="truncated"):
        decode_metadata_record(b"\x01")
    topic = messages.by_name("TopicRecord")(name="t")
    framed = encode_metadata_record(topic, 0)
    assert framed[:3] == b"\x01\x02\x00" and decode_metadata_record(framed).message == topic
    with pytest.raises(MetadataRecordError, match="TopicRecord v0"):
        decode_metadata_record(framed[:-2])


def test_kafka_read_error_names_the_failure_as_kafkas_serde_does():
    # the texts tests/interop/test_dump_log_vs_kafka.py compares with Kafka's DumpLogSegments
    from kafkawire.metadata.frame import kafka_read_error
    assert kafka_read_error(b"") == kafka_read_error(None) == "Error while reading frame version"
    assert kafka_read_error(b"\x00").startswith("Could not deserialize metadata record with frame version 0.")
    assert kafka_read_error(b"\x02\x00\x00") == ("Could not deserialize metadata record due to unknown frame "
                                                 "version 2(only frame version 1 is supported)")
    assert kafka_read_error(b"\x01\xff\xff\x03") == "Value for type was too large."
    assert kafka_read_error(b"\x01\x02") == "Error while reading version"
    assert kafka_read_error(b"\x01\x63\x00") == ("org.apache.kafka.common.errors.UnsupportedVersionException: "
                                                 "Unknown metadata id 99")
    assert kafka_read_error(b"\x01\x02\x00\x02") == "Failed to deserialize record with type 2"
    assert kafka_read_error(encode_metadata_record(messages.by_name("NoOpRecord")(), 0) + b"\x00\x00") == \
        "Found 2 byte(s) of garbage after 20"


def test_the_checked_header_shortcut_decodes_and_refuses_as_reading_the_whole_frame_does():
    """A frame whose header was checked once is decoded without reading it again: for every
    metadata record type and version, the message and the error for a cut-off record are the
    ones the full read gives (its first sight of that header), and decode_metadata_message is
    decode_metadata_record's message."""
    from kafkawire.metadata import frame
    checked = 0
    for name, _, kind, _ in messages.REGISTRY.index:
        if kind != "metadata":
            continue
        cls = messages.by_name(name)
        for version in cls.versions():
            value = encode_metadata_record(cls(), version)
            cut = value[:-1]
            frame._CHECKED_ONE_BYTE_HEADERS.pop(cls.API_KEY << 7 | version, None)
            first = decode_metadata_record(value)
            with pytest.raises(MetadataRecordError) as first_error:
                decode_metadata_record(cut)
            assert cls.API_KEY << 7 | version in frame._CHECKED_ONE_BYTE_HEADERS, (name, version)
            again = decode_metadata_record(value)
            assert (again.api_key, again.version, again.message) == (first.api_key, first.version, first.message)
            assert frame.decode_metadata_message(bytearray(value)) == first.message
            with pytest.raises(MetadataRecordError) as again_error:
                frame.decode_metadata_message(cut)
            assert str(again_error.value) == str(first_error.value), (name, version)
            checked += 1
    assert checked >= 38          # the 38 versions of the 27 metadata record types today
    with pytest.raises(MetadataRecordError, match="version 9 is not one we know"):
        decode_metadata_record(b"\x01\x05\x09\x00")          # a version never checked is read in full
