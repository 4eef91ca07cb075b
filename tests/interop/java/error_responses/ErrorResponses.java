// Kafka 4.3.1's answer to a request its handler failed on: the request class's getErrorResponse.
// Run by tests/interop/test_error_responses_vs_kafka.py, compiled against the kafka-clients jar.
//
// One request per stdin line, one answer per stdout line:
//   "versions <apiKey>"                 -> "<oldest> <latest>" (the stable versions of ApiKeys)
//   "error <apiKey> <version> <hex>"    -> "ok <hex>" (the response body, no header), "null" (no
//                                          response: the connection is closed), "threw <text>", or
//                                          "unparsable <text>" (the request class refuses the request:
//                                          Kafka never hands it to a handler)
// The request body is parsed with AbstractRequest.parseRequest, every byte; the error is
// Errors.UNKNOWN_SERVER_ERROR.exception() with a throttle time of 0.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;

public class ErrorResponses {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        out.println("ready");
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            try {
                out.println(answer(words));
            } catch (Throwable t) {
                out.println("threw " + (t.getClass().getName() + ": " + t.getMessage()).replace('\n', ' '));
            }
        }
    }

    private static String answer(String[] words) {
        ApiKeys api = ApiKeys.forId(Integer.parseInt(words[1]));
        if (words[0].equals("versions"))
            return api.oldestVersion() + " " + api.latestVersion(false);
        short version = Short.parseShort(words[2]);
        byte[] body = words.length > 3 ? HexFormat.of().parseHex(words[3]) : new byte[0];
        ByteBuffer buffer = ByteBuffer.wrap(body);
        AbstractRequest request;
        try {
            request = AbstractRequest.parseRequest(api, version, new ByteBufferAccessor(buffer)).request;
        } catch (RuntimeException e) {
            return "unparsable " + (e.getClass().getName() + ": " + e.getMessage()).replace('\n', ' ');
        }
        if (buffer.hasRemaining())
            return "unparsable: " + buffer.remaining() + " bytes left unread";
        AbstractResponse response = request.getErrorResponse(0, Errors.UNKNOWN_SERVER_ERROR.exception());
        if (response == null)
            return "null";
        ByteBuffer written = MessageUtil.toByteBufferAccessor(response.data(), version).buffer();
        byte[] bytes = new byte[written.remaining()];
        written.get(bytes);
        return "ok " + HexFormat.of().formatHex(bytes);
    }
}
