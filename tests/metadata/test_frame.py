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
