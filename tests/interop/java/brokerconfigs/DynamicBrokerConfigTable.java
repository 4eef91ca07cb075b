// Prints what Kafka's broker needs to check a dynamic broker config change (DynamicBrokerConfig
// .validateConfigs and DynamicConfig.Broker.validate), as JSON read from the jars on the
// classpath: every KafkaConfig name, the dynamic ConfigDef's keys in its order (type, default,
// validator), and the sets the checks use; and for DynamicBrokerConfig.validate's reconfiguration
// step, the configs each reconfigurable component of a KRaft broker watches and the defaults of
// the static keys the rebuilt KafkaConfig's cross-key checks read. Run by tests/interop/dynamic_broker_configs.py as
// `java -cp <Kafka's libs>/* DynamicBrokerConfigTable.java`, which writes
// kafkawire/broker/dynamic_config_table.py from it.
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.DynamicConfig;
import org.apache.kafka.server.DynamicThreadPool;
import org.apache.kafka.storage.internals.log.LogCleaner;

public class DynamicBrokerConfigTable {
    static String quote(Object o) {
        if (o == null) return "null";
        String s = o.toString();
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String list(Iterable<?> items) {
        List<String> parts = new ArrayList<>();
        for (Object item : items) parts.add(quote(item));
        return "[" + String.join(", ", parts) + "]";
    }

    static Object field(Object owner, Class<?> cls, String name) throws Exception {
        Field f = cls.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(owner);
    }

    static String validator(ConfigDef.Validator v) throws Exception {
        if (v == null) return "null";
        String kind = v.getClass().getSimpleName();
        String extra = "";
        if (v instanceof ConfigDef.Range) {
            extra = ", \"min\": " + quote(field(v, ConfigDef.Range.class, "min"))
                  + ", \"max\": " + quote(field(v, ConfigDef.Range.class, "max"));
        } else if (v instanceof ConfigDef.ValidString) {
            extra = ", \"strings\": " + list((List<?>) field(v, ConfigDef.ValidString.class, "validStrings"));
        } else if (v instanceof ConfigDef.ValidList) {
            ConfigDef.ValidString inner = (ConfigDef.ValidString) field(v, ConfigDef.ValidList.class, "validString");
            extra = ", \"strings\": " + list((List<?>) field(inner, ConfigDef.ValidString.class, "validStrings"))
                  + ", \"empty_allowed\": " + field(v, ConfigDef.ValidList.class, "isEmptyAllowed")
                  + ", \"null_allowed\": " + field(v, ConfigDef.ValidList.class, "isNullAllowed");
        }
        return "{\"kind\": " + quote(kind) + ", \"text\": " + quote(v) + extra + "}";
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("{\n");
        out.append("\"all_names\": ").append(list(new TreeSet<>(AbstractKafkaConfig.CONFIG_DEF.names()))).append(",\n");
        out.append("\"security\": ").append(list(new TreeSet<>(DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS))).append(",\n");
        out.append("\"per_broker\": ").append(list(new TreeSet<>(
            (Set<String>) field(null, DynamicBrokerConfig.class, "PER_BROKER_CONFIGS")))).append(",\n");
        out.append("\"cluster_level_listener\": ").append(list(new TreeSet<>(
            (Set<String>) field(null, DynamicBrokerConfig.class, "CLUSTER_LEVEL_LISTENER_CONFIGS")))).append(",\n");
        List<String> lists = new ArrayList<>();
        for (ConfigDef.ConfigKey key : new java.util.TreeMap<>(AbstractKafkaConfig.CONFIG_DEF.configKeys()).values()) {
            if (key.type == ConfigDef.Type.LIST) {
                Object dflt = key.defaultValue == ConfigDef.NO_DEFAULT_VALUE ? null : key.defaultValue;
                lists.add(quote(key.name) + ": " + quote(dflt == null ? null : ConfigDef.convertToString(dflt, key.type)));
            }
        }
        out.append("\"list_defaults\": {").append(String.join(", ", lists)).append("},\n");
        out.append("\"reconfigurable\": {");
        out.append("\"thread_pool\": ").append(list(new TreeSet<>(DynamicThreadPool.RECONFIGURABLE_CONFIGS)));
        out.append(", \"log\": ").append(list(new TreeSet<>(DynamicBrokerConfig.DynamicLogConfig.RECONFIGURABLE_CONFIGS)));
        out.append(", \"listener\": ").append(list(new TreeSet<>(DynamicBrokerConfig.DynamicListenerConfig.RECONFIGURABLE_CONFIGS)));
        out.append(", \"remote_log\": ").append(list(new TreeSet<>(DynamicBrokerConfig.DynamicRemoteLogConfig.RECONFIGURABLE_CONFIGS)));
        out.append(", \"listener_quota\": ").append(list(new TreeSet<>(org.apache.kafka.network.SocketServer.LISTENER_RECONFIGURABLE_CONFIGS)));
        out.append(", \"network_threads\": ").append(list(new TreeSet<>(scala.jdk.javaapi.CollectionConverters.asJava(
            kafka.network.DataPlaneAcceptor$.MODULE$.ListenerReconfigurableConfigs()))));
        out.append(", \"cleaner\": ").append(list(new TreeSet<>(LogCleaner.RECONFIGURABLE_CONFIGS)));
        out.append("},\n");
        List<String> statics = new ArrayList<>();
        for (String name : args) {
            ConfigDef.ConfigKey key = AbstractKafkaConfig.CONFIG_DEF.configKeys().get(name);
            Object dflt = key.defaultValue == ConfigDef.NO_DEFAULT_VALUE ? null : key.defaultValue;
            statics.add(quote(name) + ": " + quote(dflt == null ? null : ConfigDef.convertToString(dflt, key.type)));
        }
        out.append("\"static_defaults\": {").append(String.join(", ", statics)).append("},\n");
        out.append("\"dynamic\": [\n");
        List<String> rows = new ArrayList<>();
        for (Map.Entry<String, ConfigDef.ConfigKey> e : DynamicConfig.Broker.configKeys().entrySet()) {
            ConfigDef.ConfigKey key = e.getValue();
            Object dflt = key.defaultValue;
            String defaultText = dflt == ConfigDef.NO_DEFAULT_VALUE ? "\"<none>\""
                : quote(dflt == null ? null : ConfigDef.convertToString(dflt, key.type));
            rows.add("  {\"name\": " + quote(key.name) + ", \"type\": " + quote(key.type) + ", \"default\": "
                     + defaultText + ", \"validator\": " + validator(key.validator) + "}");
        }
        out.append(String.join(",\n", rows)).append("\n]\n}\n");
        System.out.print(out);
    }
}
