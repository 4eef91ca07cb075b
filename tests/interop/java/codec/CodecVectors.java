import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/**
 * Kafka 4.3.1's own serializer as an oracle for kafkawire's codec tests
 * (tests/interop/test_codec_vectors.py).
 *
 * One JSON request per line on stdin, one JSON answer per line on stdout, in one JVM for the
 * whole test file. Every answer is {"ok": true, ...} or {"ok": false, "error": "..."}; a request
 * that fails never ends the loop. Messages are found by our schema name through reflection over
 * Kafka's generated packages, and converted with their generated *JsonConverter classes.
 *
 * Operations (fields of the request besides "op"):
 *   versions     messages: [{name, type, apiKey}] -> versions: {name: {kafkaClass, lowest, highest} | null}
 *                (requests and responses found by API key, metadata records by record type, so a
 *                message Kafka 4.3.1 names otherwise is still found; the rest by name)
 *   decode       name, version, hex       -> json (Kafka's JsonConverter), hex (written back)
 *   from_json    name, version, json      -> hex (the object JsonConverter.read built), json
 *   default      name, version            -> hex and json of a default-constructed instance
 *   frame_decode hex                      -> apiKey, version, json, hex (MetadataRecordSerde)
 *   frame_encode name, version, json      -> hex (MetadataRecordSerde's frame around the record)
 *   build_batch  (see RecordBatches)      -> hex (MemoryRecordsBuilder)
 *   read_batches hex                      -> batches (MemoryRecords, ControlRecordUtils)
 */
public final class CodecVectors {
    static final ObjectMapper JSON = JsonMapper.builder()
        .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)   // float64 infinities, as Python writes them
        .disable(JsonWriteFeature.WRITE_NAN_AS_STRINGS)      // and writes them back as bare Infinity
        .build();
    static final HexFormat HEX = HexFormat.of();

    // Where Kafka's generated classes live, and the suffix their simple names carry there.
    private static final String[][] PACKAGES = {
        {"org.apache.kafka.common.message.", "Data"},
        {"org.apache.kafka.common.message.", ""},
        {"org.apache.kafka.common.metadata.", ""},
        {"org.apache.kafka.raft.generated.", ""},
        {"org.apache.kafka.coordinator.group.generated.", ""},
        {"org.apache.kafka.coordinator.share.generated.", ""},
        {"org.apache.kafka.coordinator.transaction.generated.", ""},
    };

    private final Map<String, MessageCodec> codecs = new HashMap<>();

    /** A generated message class with its JsonConverter's read and write. */
    static final class MessageCodec {
        final Class<?> type;
        final Method jsonRead;
        final Method jsonWrite;
        final short lowest;
        final short highest;

        MessageCodec(Class<?> type) throws ReflectiveOperationException {
            this.type = type;
            Class<?> converter = Class.forName(type.getName() + "JsonConverter");
            this.jsonRead = converter.getMethod("read", JsonNode.class, short.class);
            this.jsonWrite = converter.getMethod("write", type, short.class);
            this.lowest = type.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
            this.highest = type.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
        }

        Message create() throws ReflectiveOperationException {
            return (Message) type.getConstructor().newInstance();
        }

        Message read(byte[] bytes, short version) throws ReflectiveOperationException {
            ByteBufferAccessor in = new ByteBufferAccessor(ByteBuffer.wrap(bytes));
            Message message = create();
            message.read(in, version);
            if (in.remaining() != 0) {
                throw new IllegalArgumentException(in.remaining() + " bytes left over after " + type.getSimpleName()
                    + " v" + version + " (of " + bytes.length + ")");
            }
            return message;
        }

        Message fromJson(JsonNode json, short version) throws ReflectiveOperationException {
            return (Message) invoke(jsonRead, json, version);
        }

        JsonNode toJson(Message message, short version) throws ReflectiveOperationException {
            return (JsonNode) invoke(jsonWrite, message, version);
        }
    }

    static Object invoke(Method method, Object... args) throws ReflectiveOperationException {
        try {
            return method.invoke(null, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            throw e;
        }
    }

    static byte[] write(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buffer = ByteBuffer.allocate(message.size(cache, version));
        message.write(new ByteBufferAccessor(buffer), cache, version);
        if (buffer.hasRemaining()) {
            throw new IllegalStateException("size() promised " + buffer.capacity() + " bytes, write() gave "
                + buffer.position());
        }
        return buffer.array();
    }

    /** Kafka's class for one of our messages (by API key or record type where it has one), or null. */
    MessageCodec resolve(String name, String type, int apiKey) throws ReflectiveOperationException {
        Class<?> found = null;
        try {
            if ("request".equals(type)) {
                found = ApiMessageType.fromApiKey((short) apiKey).newRequest().getClass();
            } else if ("response".equals(type)) {
                found = ApiMessageType.fromApiKey((short) apiKey).newResponse().getClass();
            } else if ("metadata".equals(type)) {
                found = MetadataRecordType.fromId((short) apiKey).newMetadataRecord().getClass();
            }
        } catch (UnsupportedVersionException e) {
            codecs.put(name, null);     // an API key or record type Kafka 4.3.1 does not have
            return null;
        }
        if (found == null) {
            return codec(name);
        }
        MessageCodec codec = new MessageCodec(found);
        codecs.put(name, codec);
        return codec;
    }

    /** Kafka's class for one of our schema names, or null when Kafka 4.3.1 has none. */
    MessageCodec codec(String name) throws ReflectiveOperationException {
        if (codecs.containsKey(name)) {
            return codecs.get(name);
        }
        MessageCodec found = null;
        for (String[] place : PACKAGES) {
            try {
                Class<?> type = Class.forName(place[0] + name + place[1]);
                if (Message.class.isAssignableFrom(type)) {
                    found = new MessageCodec(type);
                    break;
                }
            } catch (ClassNotFoundException e) {
                // not in this package: try the next
            }
        }
        codecs.put(name, found);
        return found;
    }

    MessageCodec required(String name) throws ReflectiveOperationException {
        MessageCodec codec = codec(name);
        if (codec == null) {
            throw new IllegalArgumentException("Kafka 4.3.1 has no message class for " + name);
        }
        return codec;
    }

    ObjectNode handle(JsonNode request) throws Exception {
        String op = request.path("op").asText();
        ObjectNode answer = JSON.createObjectNode();
        switch (op) {
            case "versions": {
                ObjectNode versions = answer.putObject("versions");
                for (JsonNode message : request.path("messages")) {
                    String name = message.path("name").asText();
                    MessageCodec codec = resolve(name, message.path("type").asText(), message.path("apiKey").asInt(-1));
                    if (codec == null) {
                        versions.putNull(name);
                    } else {
                        versions.putObject(name).put("kafkaClass", codec.type.getSimpleName())
                            .put("lowest", codec.lowest).put("highest", codec.highest);
                    }
                }
                return answer;
            }
            case "decode": {
                MessageCodec codec = required(request.path("name").asText());
                short version = (short) request.path("version").asInt();
                Message message = codec.read(HEX.parseHex(request.path("hex").asText()), version);
                answer.set("json", codec.toJson(message, version));
                answer.put("hex", HEX.formatHex(write(message, version)));
                return answer;
            }
            case "from_json": {
                MessageCodec codec = required(request.path("name").asText());
                short version = (short) request.path("version").asInt();
                Message message = codec.fromJson(request.path("json"), version);
                answer.put("hex", HEX.formatHex(write(message, version)));
                answer.set("json", codec.toJson(message, version));
                return answer;
            }
            case "default": {
                MessageCodec codec = required(request.path("name").asText());
                short version = (short) request.path("version").asInt();
                Message message = codec.create();
                answer.put("hex", HEX.formatHex(write(message, version)));
                answer.set("json", codec.toJson(message, version));
                return answer;
            }
            case "frame_decode":
                return frameDecode(HEX.parseHex(request.path("hex").asText()), answer);
            case "frame_encode":
                return frameEncode(request, answer);
            case "build_batch":
                answer.put("hex", HEX.formatHex(RecordBatches.build(request, this)));
                return answer;
            case "read_batches":
                answer.set("batches", RecordBatches.read(HEX.parseHex(request.path("hex").asText()), this));
                return answer;
            default:
                throw new IllegalArgumentException("unknown op '" + op + "'");
        }
    }

    ObjectNode frameDecode(byte[] bytes, ObjectNode answer) throws ReflectiveOperationException {
        ApiMessageAndVersion record = MetadataRecordSerde.INSTANCE.read(
            new ByteBufferAccessor(ByteBuffer.wrap(bytes)), bytes.length);
        MessageCodec codec = required(record.message().getClass().getSimpleName());
        answer.put("apiKey", record.message().apiKey());
        answer.put("version", record.version());
        answer.put("name", record.message().getClass().getSimpleName());
        answer.set("json", codec.toJson(record.message(), record.version()));
        answer.put("hex", HEX.formatHex(frameBytes(record)));
        return answer;
    }

    ObjectNode frameEncode(JsonNode request, ObjectNode answer) throws ReflectiveOperationException {
        MessageCodec codec = required(request.path("name").asText());
        short version = (short) request.path("version").asInt();
        ApiMessage message = (ApiMessage) codec.fromJson(request.path("json"), version);
        answer.put("hex", HEX.formatHex(frameBytes(new ApiMessageAndVersion(message, version))));
        return answer;
    }

    static byte[] frameBytes(ApiMessageAndVersion record) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buffer = ByteBuffer.allocate(MetadataRecordSerde.INSTANCE.recordSize(record, cache));
        MetadataRecordSerde.INSTANCE.write(record, cache, new ByteBufferAccessor(buffer));
        return buffer.array();
    }

    static String describe(Throwable error) {
        StringBuilder text = new StringBuilder(error.getClass().getSimpleName() + ": " + error.getMessage());
        for (Throwable cause = error.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
            text.append(" <- ").append(cause.getClass().getSimpleName()).append(": ").append(cause.getMessage());
        }
        return text.toString();
    }

    public static void main(String[] args) throws Exception {
        CodecVectors oracle = new CodecVectors();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        out.println("{\"ready\": true}");
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                answer = oracle.handle(JSON.readTree(line));
                answer.put("ok", true);
            } catch (Exception | StackOverflowError e) {
                answer = JSON.createObjectNode();
                answer.put("ok", false);
                answer.put("error", describe(e));
            }
            out.println(JSON.writeValueAsString(answer));
            out.flush();
        }
    }
}
