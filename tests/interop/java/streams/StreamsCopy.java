import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams 4.3.1 application with group.protocol=streams (KIP-1071): it copies the records
 * of one topic to another and counts them by key into a third (a state store, so its group needs a
 * repartition-free changelog topic the broker creates).
 * Args: bootstrap servers, application id, input topic, copy topic, counts topic, state directory.
 * Prints RUNNING once the client runs; stops (closing the client) when its stdin is closed.
 */
public class StreamsCopy {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        StreamsBuilder builder = new StreamsBuilder();
        var input = builder.<String, String>stream(args[2]);
        input.to(args[3]);
        input.groupByKey().count().toStream().to(args[4], Produced.with(Serdes.String(), Serdes.Long()));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.RUNNING) running.countDown();
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("ERROR " + e);
            System.out.flush();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        if (running.await(60, TimeUnit.SECONDS)) {
            System.out.println("RUNNING");
            System.out.flush();
        }
        while (System.in.read() >= 0) { }
        streams.close(Duration.ofSeconds(20));
        System.out.println("CLOSED");
    }
}
