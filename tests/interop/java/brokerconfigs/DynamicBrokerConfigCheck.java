// Answers, line by line, whether Kafka's broker accepts a dynamic broker config change: each input
// line is {"props": {...}, "per_broker": true|false}; each output line {"error": message or null},
// from DynamicBrokerConfig.validateConfigs after resolveVariableConfigs, as
// DynamicBrokerConfig.validatedKafkaProps runs them (its message is what the broker answers).
// Run by tests/interop/test_dynamic_broker_configs_vs_kafka.py.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.server.config.DynamicBrokerConfig;

public class DynamicBrokerConfigCheck {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode request = mapper.readTree(line);
            Properties props = new Properties();
            Iterator<Map.Entry<String, JsonNode>> fields = request.get("props").fields();
            while (fields.hasNext()) {
                Map.Entry<String, JsonNode> field = fields.next();
                props.setProperty(field.getKey(), field.getValue().asText());
            }
            ObjectNode answer = mapper.createObjectNode();
            try {
                Properties resolved = DynamicBrokerConfig.resolveVariableConfigs(props);
                DynamicBrokerConfig.validateConfigs(resolved, request.get("per_broker").asBoolean());
                answer.putNull("error");
            } catch (Exception e) {
                answer.put("error", e.getMessage());
            }
            System.out.println(mapper.writeValueAsString(answer));
            System.out.flush();
        }
    }
}
