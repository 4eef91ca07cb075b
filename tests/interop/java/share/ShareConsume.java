// Kafka 4.3.1's KafkaShareConsumer against a broker (tests/interop/test_share_consumer_on_kafkawire_broker.py):
// creates the topic, sets the group's share.auto.offset.reset=earliest, produces COUNT records, consumes
// them with one share consumer acknowledging each (ACCEPT, commitSync), closes it, produces one "late"
// record, then polls with a second member of the group until it has seen "late" and SILENT_MS more, and
// reports what it saw (only "late", if acknowledged records are never delivered again).
// Prints "consumed <n> distinct <d> delivery-max <m>" and "after <n> <the first 10 values>" lines.
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ShareConsume {
    public static void main(String[] args) throws Exception {
        String servers = args[0], topic = args[1], group = args[2];
        int count = Integer.parseInt(args[3]);
        long deadlineMs = System.currentTimeMillis() + Long.parseLong(args[4]);
        long silentMs = Long.parseLong(args[5]);

        Properties common = new Properties();
        common.put("bootstrap.servers", servers);
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(60, TimeUnit.SECONDS);
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                .all().get(60, TimeUnit.SECONDS);
        }
        Properties producerProps = new Properties();
        producerProps.putAll(common);
        producerProps.put("key.serializer", StringSerializer.class.getName());
        producerProps.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            for (int i = 0; i < count; i++)
                producer.send(new ProducerRecord<>(topic, Integer.toString(i), "value-" + i));
            producer.flush();
        }

        Properties consumerProps = new Properties();
        consumerProps.putAll(common);
        consumerProps.put("group.id", group);
        consumerProps.put("key.deserializer", StringDeserializer.class.getName());
        consumerProps.put("value.deserializer", StringDeserializer.class.getName());
        consumerProps.put("share.acknowledgement.mode", "explicit");
        Set<String> seen = new HashSet<>();
        int consumed = 0, maxDelivery = 0;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(consumerProps)) {
            consumer.subscribe(List.of(topic));
            while (seen.size() < count && System.currentTimeMillis() < deadlineMs) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    consumed++;
                    seen.add(record.value());
                    maxDelivery = Math.max(maxDelivery, record.deliveryCount().orElse((short) 0));
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                }
                consumer.commitSync(Duration.ofSeconds(30));
            }
        }
        System.out.println("consumed " + consumed + " distinct " + seen.size() + " delivery-max " + maxDelivery);

        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            producer.send(new ProducerRecord<>(topic, "late", "late")).get(60, TimeUnit.SECONDS);
        }
        // A second member sees the late record, and nothing acknowledged before it
        List<String> after = new java.util.ArrayList<>();
        try (KafkaShareConsumer<String, String> second = new KafkaShareConsumer<>(consumerProps)) {
            second.subscribe(List.of(topic));
            long until = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(until, deadlineMs)) {
                for (ConsumerRecord<String, String> record : second.poll(Duration.ofMillis(500))) {
                    after.add(record.value());
                    second.acknowledge(record, AcknowledgeType.ACCEPT);
                    if (record.value().equals("late"))
                        until = System.currentTimeMillis() + silentMs;     // and a little longer
                }
                second.commitSync(Duration.ofSeconds(30));
            }
        }
        System.out.println("after " + after.size() + " " + String.join(",", after.subList(0, Math.min(10, after.size()))));
        System.out.flush();
    }
}
