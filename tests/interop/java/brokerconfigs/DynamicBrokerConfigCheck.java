// Answers, line by line, whether Kafka's broker accepts a dynamic broker config change: each input
// line is {"props": {...}, "per_broker": true|false} and, optionally, "broker": {"static": {...},
// "default": {...}, "per_broker": {...}}; each output line {"error": message or null}.
// Without "broker": DynamicBrokerConfig.validateConfigs after resolveVariableConfigs, as
// DynamicBrokerConfig.validatedKafkaProps runs them. With it: the whole of
// DynamicBrokerConfig.validate, as ConfigAdminManager runs it, on a broker started with the
// "static" server.properties and holding the "default" and "per_broker" dynamic configs: the
// KafkaConfig rebuilt with the change, then the validateReconfiguration of the reconfigurables a
// KRaft broker registers that its own checks (not plugins kafkawire does not run), in the broker's
// order: the channel to the controllers' client channel builder (NodeToControllerChannelManager),
// the SocketServer's (each data-plane listener's connection quota, DataPlaneAcceptor and
// processors' channel builders, an SSL or SASL_SSL one checking a changed key or trust store),
// DynamicMetricsReporters (each class of metric.reporters loads), BrokerDynamicThreadPool, DynamicLogConfig, DynamicListenerConfig, the SocketServer itself,
// DynamicProducerStateManagerConfig, DynamicRemoteLogConfig and the LogCleaner (when
// log.cleaner.enable).
// The broker's KafkaBroker is a proxy answering only config(), all these read of it.
// Run by tests/interop/test_dynamic_broker_configs_vs_kafka.py.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.lang.reflect.Proxy;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kafka.network.SocketServer;
import kafka.server.BrokerDynamicThreadPool;
import kafka.server.DynamicListenerConfig;
import kafka.server.DynamicMetricsReporters;
import kafka.server.DynamicLogConfig;
import kafka.server.DynamicRemoteLogConfig;
import kafka.server.KafkaBroker;
import kafka.server.KafkaConfig;
import org.apache.kafka.common.security.token.delegation.internals.DelegationTokenCache;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.Reconfigurable;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.network.ChannelBuilder;
import org.apache.kafka.common.network.ChannelBuilders;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.server.network.ConnectionDisconnectListener;
import org.apache.kafka.security.CredentialProvider;
import org.apache.kafka.server.ServerSocketFactory;
import org.apache.kafka.server.SimpleApiVersionManager;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.transaction.TransactionLogConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.DynamicProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.CleanerConfig;
import org.apache.kafka.storage.internals.log.LogCleaner;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;

public class DynamicBrokerConfigCheck {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode request = mapper.readTree(line);
            Properties props = properties(request.get("props"));
            boolean perBroker = request.get("per_broker").asBoolean();
            ObjectNode answer = mapper.createObjectNode();
            try {
                if (request.has("broker")) {
                    validateOnBroker(request.get("broker"), props, perBroker);
                } else {
                    Properties resolved = DynamicBrokerConfig.resolveVariableConfigs(props);
                    DynamicBrokerConfig.validateConfigs(resolved, perBroker);
                }
                answer.putNull("error");
            } catch (Exception e) {
                answer.put("error", e.getMessage());
            }
            System.out.println(mapper.writeValueAsString(answer));
            System.out.flush();
        }
    }

    static Properties properties(JsonNode node) {
        Properties props = new Properties();
        Iterator<Map.Entry<String, JsonNode>> fields = node.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> field = fields.next();
            props.setProperty(field.getKey(), field.getValue().asText());
        }
        return props;
    }

    // validate(..) changes nothing: one broker per distinct "broker" serves all its cases
    static final Map<String, kafka.server.DynamicBrokerConfig> BROKERS = new java.util.HashMap<>();

    static void validateOnBroker(JsonNode broker, Properties props, boolean perBroker) throws Exception {
        kafka.server.DynamicBrokerConfig dynamic = BROKERS.get(broker.toString());
        if (dynamic == null) {
            dynamic = startBroker(broker);
            BROKERS.put(broker.toString(), dynamic);
        }
        dynamic.validate(props, perBroker);
    }

    static kafka.server.DynamicBrokerConfig startBroker(JsonNode broker) throws Exception {
        KafkaConfig config = new KafkaConfig(properties(broker.get("static")), false);
        kafka.server.DynamicBrokerConfig dynamic = config.dynamicConfig();
        dynamic.initialize(scala.Option.empty());
        // the stored dynamic configs, applied before any reconfigurable is registered (as a
        // broker reads them from its metadata snapshot before it starts its components)
        dynamic.updateDefaultConfig(properties(broker.get("default")), false);
        dynamic.updateBrokerConfig(config.brokerId(), properties(broker.get("per_broker")), false);
        KafkaBroker server = (KafkaBroker) Proxy.newProxyInstance(KafkaBroker.class.getClassLoader(),
            new Class<?>[] {KafkaBroker.class}, (proxy, method, args) -> {
                if (method.getName().equals("config")) return config;
                throw new UnsupportedOperationException(method.getName());
            });
        // NodeToControllerChannelManagerImpl, which BrokerServer makes before its SocketServer:
        // its client channel builder on the first controller listener (an SSL or SASL_SSL one
        // checks a changed key or trust store), registered as a Reconfigurable
        ListenerName controllerListener = new ListenerName(config.controllerListenerNames().get(0));
        SecurityProtocol controllerProtocol = Optional.ofNullable(
            config.effectiveListenerSecurityProtocolMap().get(controllerListener))
            .orElseGet(() -> SecurityProtocol.forName(controllerListener.value()));
        ChannelBuilder controllerChannel = ChannelBuilders.clientChannelBuilder(controllerProtocol,
            JaasContext.Type.SERVER, config, controllerListener,
            config.saslMechanismControllerProtocol(), Time.SYSTEM, new LogContext());
        if (controllerChannel instanceof Reconfigurable reconfigurable) {
            dynamic.addReconfigurable(reconfigurable);
        }
        // The broker's SocketServer: for each data-plane listener (none is bound: the cases name
        // fixed ports, and an acceptor binds only a port 0 before it starts) its ConnectionQuotas,
        // its DataPlaneAcceptor (num.network.threads) and its processors' channel builders (an SSL
        // or SASL_SSL one checks a changed key or trust store), registered as Reconfigurables in
        // the broker's order; no thread is started
        SocketServer socketServer = new SocketServer(config, new Metrics(), Time.SYSTEM,
            new CredentialProvider(List.of(), new DelegationTokenCache(List.of())),
            new SimpleApiVersionManager(ApiMessageType.ListenerType.BROKER, false, () -> null),
            ServerSocketFactory.INSTANCE, scala.jdk.javaapi.CollectionConverters.asScala(
                List.<ConnectionDisconnectListener>of()).toSeq());
        // DynamicBrokerConfig.addReconfigurables(broker), in its order: the Reconfigurables (no
        // authorizer here; KafkaYammerMetrics watches only the JMX include and exclude patterns),
        // then the BrokerReconfigurables
        dynamic.addReconfigurable(new DynamicMetricsReporters(config.brokerId(), config, new Metrics(), "cluster"));
        dynamic.addBrokerReconfigurable(new BrokerDynamicThreadPool(server));
        dynamic.addBrokerReconfigurable(new DynamicLogConfig(null, null));
        dynamic.addBrokerReconfigurable(new DynamicListenerConfig(server));
        dynamic.addBrokerReconfigurable(socketServer);
        TransactionLogConfig transactionLog = new TransactionLogConfig(config);
        dynamic.addBrokerReconfigurable(new DynamicProducerStateManagerConfig(new ProducerStateManagerConfig(
            transactionLog.producerIdExpirationMs(), transactionLog.transactionPartitionVerificationEnable())));
        dynamic.addBrokerReconfigurable(new DynamicRemoteLogConfig(server));
        // BrokerMetadataPublisher: the log manager's cleaner, when there is one
        CleanerConfig cleanerConfig = new CleanerConfig(config);
        if (cleanerConfig.enableCleaner) {
            dynamic.addBrokerReconfigurable(new LogCleaner(cleanerConfig, List.of(), new ConcurrentHashMap<>(),
                                                           new LogDirFailureChannel(1), Time.SYSTEM));
        }
        return dynamic;
    }
}
