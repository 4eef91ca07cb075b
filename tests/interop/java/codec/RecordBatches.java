import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.KRaftVersionRecord;
import org.apache.kafka.common.message.LeaderChangeMessage;
import org.apache.kafka.common.message.SnapshotFooterRecord;
import org.apache.kafka.common.message.SnapshotHeaderRecord;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.ControlRecordUtils;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.ByteBufferOutputStream;

/**
 * Record batches through Kafka's MemoryRecordsBuilder and MemoryRecords.
 *
 * build_batch request: baseOffset, partitionLeaderEpoch, producerId, producerEpoch, baseSequence,
 * transactional, control, compression (none/gzip/snappy/lz4/zstd), timestampType (create or
 * log_append), logAppendTime, deleteHorizonMs (the log cleaner's), and either records [{offset, timestamp, key, value, headers: [[key,
 * value]]}] (keys and values hex or null) or controls [{timestamp, type, json | coordinatorEpoch}]
 * appended with the builder's own typed control appenders (appendLeaderChangeMessage, ...,
 * appendEndTxnMarker).
 */
final class RecordBatches {
    private RecordBatches() {
    }

    static byte[] build(JsonNode spec, CodecVectors oracle) throws ReflectiveOperationException {
        String compressionName = spec.path("compression").asText("none");
        Compression compression = Compression.of(CompressionType.forName(compressionName)).build();
        TimestampType timestampType = "log_append".equals(spec.path("timestampType").asText("create"))
            ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
        MemoryRecordsBuilder builder = new MemoryRecordsBuilder(
            new ByteBufferOutputStream(1024), RecordBatch.MAGIC_VALUE_V2, compression, timestampType,
            spec.path("baseOffset").asLong(0),
            spec.path("logAppendTime").asLong(RecordBatch.NO_TIMESTAMP),
            spec.path("producerId").asLong(RecordBatch.NO_PRODUCER_ID),
            (short) spec.path("producerEpoch").asInt(RecordBatch.NO_PRODUCER_EPOCH),
            spec.path("baseSequence").asInt(RecordBatch.NO_SEQUENCE),
            spec.path("transactional").asBoolean(false),
            spec.path("control").asBoolean(false),
            spec.path("partitionLeaderEpoch").asInt(RecordBatch.NO_PARTITION_LEADER_EPOCH),
            Integer.MAX_VALUE,
            spec.path("deleteHorizonMs").asLong(RecordBatch.NO_TIMESTAMP));
        for (JsonNode record : spec.path("records")) {
            builder.appendWithOffset(record.path("offset").asLong(), record.path("timestamp").asLong(),
                bytes(record.get("key")), bytes(record.get("value")), headers(record.path("headers")));
        }
        for (JsonNode control : spec.path("controls")) {
            appendControl(builder, control, oracle);
        }
        ByteBuffer built = builder.build().buffer();
        byte[] out = new byte[built.remaining()];
        built.get(out);
        return out;
    }

    private static void appendControl(MemoryRecordsBuilder builder, JsonNode control, CodecVectors oracle)
            throws ReflectiveOperationException {
        long timestamp = control.path("timestamp").asLong();
        ControlRecordType type = ControlRecordType.valueOf(control.path("type").asText());
        JsonNode json = control.path("json");
        switch (type) {
            case ABORT:
            case COMMIT:
                builder.appendEndTxnMarker(timestamp,
                    new EndTransactionMarker(type, control.path("coordinatorEpoch").asInt()));
                return;
            case LEADER_CHANGE:
                builder.appendLeaderChangeMessage(timestamp, (LeaderChangeMessage) message(oracle, "LeaderChangeMessage",
                    json, ControlRecordUtils.LEADER_CHANGE_CURRENT_VERSION));
                return;
            case SNAPSHOT_HEADER:
                builder.appendSnapshotHeaderMessage(timestamp, (SnapshotHeaderRecord) message(oracle,
                    "SnapshotHeaderRecord", json, ControlRecordUtils.SNAPSHOT_HEADER_CURRENT_VERSION));
                return;
            case SNAPSHOT_FOOTER:
                builder.appendSnapshotFooterMessage(timestamp, (SnapshotFooterRecord) message(oracle,
                    "SnapshotFooterRecord", json, ControlRecordUtils.SNAPSHOT_FOOTER_CURRENT_VERSION));
                return;
            case KRAFT_VERSION:
                builder.appendKRaftVersionMessage(timestamp, (KRaftVersionRecord) message(oracle, "KRaftVersionRecord",
                    json, ControlRecordUtils.KRAFT_VERSION_CURRENT_VERSION));
                return;
            case KRAFT_VOTERS:
                builder.appendVotersMessage(timestamp, (VotersRecord) message(oracle, "VotersRecord", json,
                    ControlRecordUtils.KRAFT_VOTERS_CURRENT_VERSION));
                return;
            default:
                throw new IllegalArgumentException("no control record of type " + type);
        }
    }

    private static Message message(CodecVectors oracle, String name, JsonNode json, short version)
            throws ReflectiveOperationException {
        return oracle.required(name).fromJson(json, version);
    }

    private static byte[] bytes(JsonNode hex) {
        return hex == null || hex.isNull() ? null : CodecVectors.HEX.parseHex(hex.asText());
    }

    private static Header[] headers(JsonNode list) {
        List<Header> headers = new ArrayList<>();
        for (JsonNode pair : list) {
            headers.add(new RecordHeader(pair.get(0).asText(), bytes(pair.get(1))));
        }
        return headers.toArray(new Header[0]);
    }

    private static String hex(ByteBuffer buffer) {
        if (buffer == null) {
            return null;
        }
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return CodecVectors.HEX.formatHex(out);
    }

    /** Every batch (CRC checked) with its header fields and records, control values decoded. */
    static ArrayNode read(byte[] data, CodecVectors oracle) throws ReflectiveOperationException {
        ArrayNode batches = CodecVectors.JSON.createArrayNode();
        for (MutableRecordBatch batch : MemoryRecords.readableRecords(ByteBuffer.wrap(data)).batches()) {
            batch.ensureValid();
            ObjectNode out = batches.addObject();
            out.put("baseOffset", batch.baseOffset());
            out.put("lastOffset", batch.lastOffset());
            out.put("partitionLeaderEpoch", batch.partitionLeaderEpoch());
            out.put("magic", batch.magic());
            out.put("crc", batch.checksum());
            out.put("compression", batch.compressionType().name);
            out.put("timestampType", batch.timestampType() == TimestampType.LOG_APPEND_TIME ? "log_append" : "create");
            out.put("maxTimestamp", batch.maxTimestamp());
            out.put("producerId", batch.producerId());
            out.put("producerEpoch", batch.producerEpoch());
            out.put("baseSequence", batch.baseSequence());
            out.put("transactional", batch.isTransactional());
            out.put("control", batch.isControlBatch());
            if (batch.deleteHorizonMs().isPresent()) {
                out.put("deleteHorizonMs", batch.deleteHorizonMs().getAsLong());
            } else {
                out.putNull("deleteHorizonMs");
            }
            out.put("sizeInBytes", batch.sizeInBytes());
            ArrayNode records = out.putArray("records");
            for (Record record : batch) {
                records.add(recordJson(record, batch.isControlBatch(), oracle));
            }
        }
        return batches;
    }

    private static ObjectNode recordJson(Record record, boolean control, CodecVectors oracle)
            throws ReflectiveOperationException {
        ObjectNode out = CodecVectors.JSON.createObjectNode();
        out.put("offset", record.offset());
        out.put("timestamp", record.timestamp());
        out.put("key", hex(record.key()));
        out.put("value", hex(record.value()));
        ArrayNode headers = out.putArray("headers");
        for (Header header : record.headers()) {
            headers.addArray().add(header.key()).add(header.value() == null ? null
                : CodecVectors.HEX.formatHex(header.value()));
        }
        if (control) {
            out.set("control", controlJson(record, oracle));
        }
        return out;
    }

    private static ObjectNode controlJson(Record record, CodecVectors oracle) throws ReflectiveOperationException {
        ControlRecordType type = ControlRecordType.parse(record.key());
        ObjectNode out = CodecVectors.JSON.createObjectNode();
        out.put("type", type.name());
        switch (type) {
            case ABORT:
            case COMMIT:
                out.put("coordinatorEpoch", EndTransactionMarker.deserialize(record).coordinatorEpoch());
                break;
            case LEADER_CHANGE:
                out.set("json", oracle.required("LeaderChangeMessage").toJson(
                    ControlRecordUtils.deserializeLeaderChangeMessage(record), ControlRecordUtils.LEADER_CHANGE_CURRENT_VERSION));
                break;
            case SNAPSHOT_HEADER:
                out.set("json", oracle.required("SnapshotHeaderRecord").toJson(
                    ControlRecordUtils.deserializeSnapshotHeaderRecord(record), ControlRecordUtils.SNAPSHOT_HEADER_CURRENT_VERSION));
                break;
            case SNAPSHOT_FOOTER:
                out.set("json", oracle.required("SnapshotFooterRecord").toJson(
                    ControlRecordUtils.deserializeSnapshotFooterRecord(record), ControlRecordUtils.SNAPSHOT_FOOTER_CURRENT_VERSION));
                break;
            case KRAFT_VERSION:
                out.set("json", oracle.required("KRaftVersionRecord").toJson(
                    ControlRecordUtils.deserializeKRaftVersionRecord(record), ControlRecordUtils.KRAFT_VERSION_CURRENT_VERSION));
                break;
            case KRAFT_VOTERS:
                out.set("json", oracle.required("VotersRecord").toJson(
                    ControlRecordUtils.deserializeVotersRecord(record), ControlRecordUtils.KRAFT_VOTERS_CURRENT_VERSION));
                break;
            default:
                break;
        }
        return out;
    }
}
