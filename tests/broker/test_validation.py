"""The leader's checks of a produced batch (kafkawire.broker.validation), each with the error
Kafka 4.3.1's ProduceRequest.validateRecords, UnifiedLog.analyzeAndValidateRecords and
LogValidator answer, and the LogAppendTime rewrite (a valid CRC, the broker's time)."""
from __future__ import annotations

import struct

import pytest

from kafkawire.broker.validation import ProduceRefused, validate_produce
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import GZIP, iter_batches
import zlib
from kafkawire.records.builder import build_batch, build_control_batch

NOW = 1_800_000_000_000
RECORDS = [(b"k%d" % i, b"v%d" % i, [], NOW - 1000 + i) for i in range(5)]


def check(data, **kw):
    args = dict(topic_partition="t-0", max_message_bytes=1048588, log_append_time=False, now_ms=NOW)
    args.update(kw)
    return validate_produce(data, **args)


def refused(data, **kw) -> ProduceRefused:
    with pytest.raises(ProduceRefused) as info:
        check(data, **kw)
    return info.value


def test_a_good_batch_is_taken_as_it_is():
    data = build_batch(RECORDS)
    validated = check(data)
    assert (validated.data, validated.records, validated.log_append_time) == (data, 5, -1)


def test_a_compressed_batch_is_checked_record_by_record_and_kept_compressed():
    data = build_batch(RECORDS, compression_type=GZIP)
    assert check(data).data == data


@pytest.mark.parametrize("data, fragment", [
    (b"", "must have at least one record batch per partition"),
    (None, "must have at least one record batch per partition"),
    (build_batch(RECORDS) * 2, "only allowed to contain exactly one record batch per partition"),
])
def test_produce_v3_takes_exactly_one_batch(data, fragment):
    error = refused(data)
    assert error.code == Errors.INVALID_RECORD and fragment in str(error)


def legacy_message(key: bytes, value: bytes) -> bytes:
    """One magic 1 message (offset 0) as a pre-0.11 producer sends it."""
    body = struct.pack(">bbq", 1, 0, NOW) + struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


def test_a_batch_cut_short_after_the_batch_is_dropped_as_kafkas_log_trims_it():
    """Kafka's iterator stops at a batch the buffer ends inside, so ProduceRequest.validateRecords
    sees one batch, and the log appends only the bytes of the valid ones (trimInvalidBytes)."""
    data = build_batch(RECORDS)
    validated = check(data + data[:-3])
    assert (validated.data, validated.records) == (data, 5)


def test_a_legacy_message_set_is_invalid_record():
    error = refused(legacy_message(b"k", b"v"))
    assert error.code == Errors.INVALID_RECORD and "magic version 2" in str(error)


def test_a_batch_larger_than_max_message_bytes_is_message_too_large_with_kafkas_text():
    data = build_batch(RECORDS)
    error = refused(data, max_message_bytes=len(data) - 1)
    assert error.code == Errors.MESSAGE_TOO_LARGE
    assert str(error) == (f"The record batch size in the append to t-0 is {len(data)} bytes which exceeds the "
                          f"maximum configured value of {len(data) - 1}).")
    assert check(data, max_message_bytes=len(data)).records == 5


def test_a_batch_whose_crc_does_not_match_is_corrupt_message():
    data = bytearray(build_batch(RECORDS))
    data[-1] ^= 0xFF
    error = refused(bytes(data))
    assert error.code == Errors.CORRUPT_MESSAGE and str(error).startswith("Record is corrupt (stored crc = ")


def test_a_truncated_batch_is_no_batch_as_kafkas_iterator_sees_it():
    error = refused(build_batch(RECORDS)[:-3])
    assert (error.code, error.in_request) == (Errors.INVALID_RECORD, True)
    assert "must have at least one record batch per partition" in str(error)


def test_a_client_batch_must_start_at_offset_zero():
    error = refused(build_batch(RECORDS, base_offset=7))
    assert error.code == Errors.INVALID_RECORD and "should be 0, but it is 7" in str(error)


def test_clients_may_not_write_control_records():
    error = refused(build_control_batch(0, b"\x00\x00\x00\x00\x00\x00"))
    assert error.code == Errors.INVALID_RECORD


def test_an_idempotent_batch_passes_the_batch_checks_with_its_header_for_the_producer_state():
    validated = check(build_batch(RECORDS, producer_id=5, producer_epoch=0, base_sequence=0))
    assert (validated.batch.producer_id, validated.batch.producer_epoch, validated.batch.base_sequence) == (5, 0, 0)


def test_a_producer_id_with_a_negative_sequence_is_invalid_record_as_in_logvalidator():
    error = refused(build_batch(RECORDS, producer_id=5, producer_epoch=0, base_sequence=-1))
    assert error.code == Errors.INVALID_RECORD
    assert str(error) == "Invalid sequence number -1 in record batch with producerId 5 in topic partition t-0"


def test_a_count_that_does_not_match_the_offset_range_is_invalid_record():
    data = bytearray(build_batch(RECORDS))
    struct.pack_into(">i", data, 23, 9)             # lastOffsetDelta 9 for 5 records, CRC redone
    from crc32c import crc32c
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    error = refused(bytes(data))
    assert error.code == Errors.INVALID_RECORD and "Inconsistent batch offset range" in str(error)


def test_log_append_time_sets_the_type_and_max_timestamp_and_a_valid_crc():
    data = build_batch(RECORDS)
    validated = check(data, log_append_time=True)
    assert validated.log_append_time == NOW and len(validated.data) == len(data)
    batch = next(iter(iter_batches(validated.data, verify_crc=True)))
    assert batch.timestamp_type == 1 and batch.max_timestamp == NOW
    assert [r.timestamp for r in batch] == [NOW] * 5          # readers take the batch's time


def test_records_whose_offset_deltas_skip_are_invalid_record():
    """LogValidator: the records' offset deltas must run 0, 1, 2... (the C path and the pure one)."""
    from crc32c import crc32c
    data = bytearray(build_batch([(b"a", b"1", [], NOW), (b"b", b"2", [], NOW)]))
    first_length = data[61] >> 1                     # zigzag varint, one byte for a small record
    second = 61 + 1 + first_length
    assert data[second + 1:second + 4] == b"\x00\x00\x02"   # attributes, timestamp delta 0, offset delta 1
    data[second + 3] = 0x04                          # offset delta 2
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    error = refused(bytes(data))
    assert error.code == Errors.INVALID_RECORD and "offset delta" in str(error)


def test_offset_deltas_are_checked_in_batches_of_every_size_one_after_another():
    """The C path compares a batch's offsets with a kept run of 0, 1, 2...: grown for a larger
    batch, a prefix for a smaller; a batch past the run's longest is compared with its own."""
    from kafkawire.broker import validation
    for n in (1, 300, 2, 2000, 3, validation._KEPT_RUN_MAX + 1, 7):
        assert check(build_batch([(None, b"v", [], NOW)] * n), max_message_bytes=1 << 24).records == n
    test_records_whose_offset_deltas_skip_are_invalid_record()


# -- the append after the checks (LeaderPartition.append, Log.append) --

def test_the_produce_path_computes_each_batchs_crc_once(tmp_path, monkeypatch):
    """validate_produce verifies the CRC; the append after it does not compute it again."""
    import uuid

    from kafkawire.broker.partition import LeaderPartition
    from kafkawire.records.batch import RecordBatch
    partition = LeaderPartition.open(str(tmp_path), "t", 0, uuid.UUID(int=1), leader_epoch=2, now_ms=NOW)
    computed = []
    real = RecordBatch.compute_crc
    monkeypatch.setattr(RecordBatch, "compute_crc", lambda self: computed.append(1) or real(self))
    partition.append(check(memoryview(build_batch(RECORDS))), now_ms=NOW)
    assert len(computed) == 1
    partition.log.close()


def test_the_append_writes_offsets_and_epoch_into_its_own_copy_not_the_requests_buffer(tmp_path):
    """The validated batch is the request's buffer itself: Log.append leaves it as it was."""
    from kafkawire.storage.log import Log
    request = bytearray(build_batch(RECORDS))
    log_ = Log(str(tmp_path / "t-0"))
    log_.append(build_batch(RECORDS), assign_offsets=True)
    log_.append(memoryview(request), assign_offsets=True, leader_epoch=4, crc_verified=True)
    assert bytes(request) == build_batch(RECORDS)
    stored = list(iter_batches(log_.read(5, 1 << 20).data))
    assert [(b.base_offset, b.partition_leader_epoch) for b in stored] == [(5, 4)]
    stored[0].verify_crc()
    log_.close()
