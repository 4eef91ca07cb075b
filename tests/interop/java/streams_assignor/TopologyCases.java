// Runs Kafka 4.3.1's InternalTopicManager.configureTopics (repartition topic sizing, co-partitioning,
// changelog topics, internal topics to create) on the cases read from stdin: the judge of
// kafkawire/broker/streams_topology.py (tests/interop/test_streams_assignor_vs_kafka.py).
//
// A case:   topology
//           topic <name> <partitions>                               (the topics that exist)
//           sub <id> <sources> <sinks> <repartition sources> <changelogs> <copartition groups>
//           end
// lists are "-" or comma-separated; repartition sources are name=partitions (0: not fixed);
// copartition groups are "-" or groups separated by ";", each "<source indexes>/<repartition
// indexes>" with "-" for none. The answer, one line each, then "end":
//   invalid <message>                         (StreamsInvalidTopologyException)
//   error <exception class>                   (any other exception)
//   status <code or -> <message or ->
//   tasks <id=n,... sorted by id, or ->
//   create <name=n,... sorted by name, or ->
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.StreamsInvalidTopologyException;
import org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataDelta;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyValue;
import org.apache.kafka.coordinator.group.streams.StreamsTopology;
import org.apache.kafka.coordinator.group.streams.topics.ConfiguredSubtopology;
import org.apache.kafka.coordinator.group.streams.topics.ConfiguredTopology;
import org.apache.kafka.coordinator.group.streams.topics.InternalTopicManager;
import org.slf4j.helpers.NOPLogger;

public class TopologyCases {

    private static List<String> names(String text) {
        List<String> out = new ArrayList<>();
        if (!text.equals("-")) {
            for (String name : text.split(",")) {
                out.add(name);
            }
        }
        return out;
    }

    private static List<Short> indexes(String text) {
        List<Short> out = new ArrayList<>();
        for (String i : names(text)) {
            out.add(Short.parseShort(i));
        }
        return out;
    }

    private static CoordinatorMetadataImage image(Map<String, Integer> topics) {
        return new CoordinatorMetadataImage() {
            public Set<Uuid> topicIds() {
                throw new UnsupportedOperationException();
            }

            public Set<String> topicNames() {
                return topics.keySet();
            }

            public Optional<TopicMetadata> topicMetadata(String name) {
                if (!topics.containsKey(name)) return Optional.empty();
                final int count = topics.get(name);
                return Optional.of(new TopicMetadata() {
                    public String name() {
                        return name;
                    }

                    public Uuid id() {
                        return Uuid.ZERO_UUID;
                    }

                    public int partitionCount() {
                        return count;
                    }

                    public List<String> partitionRacks(int partition) {
                        return List.of();
                    }
                });
            }

            public Optional<TopicMetadata> topicMetadata(Uuid id) {
                throw new UnsupportedOperationException();
            }

            public CoordinatorMetadataDelta emptyDelta() {
                throw new UnsupportedOperationException();
            }

            public long version() {
                return 1;
            }

            public boolean isEmpty() {
                return topics.isEmpty();
            }
        };
    }

    private static StreamsGroupTopologyValue.Subtopology subtopology(String[] f) {
        List<StreamsGroupTopologyValue.TopicInfo> repartition = new ArrayList<>();
        for (String entry : names(f[4])) {
            String[] kv = entry.split("=");
            repartition.add(new StreamsGroupTopologyValue.TopicInfo().setName(kv[0]).setPartitions(Integer.parseInt(kv[1])));
        }
        List<StreamsGroupTopologyValue.TopicInfo> changelogs = new ArrayList<>();
        for (String name : names(f[5])) {
            changelogs.add(new StreamsGroupTopologyValue.TopicInfo().setName(name));
        }
        List<StreamsGroupTopologyValue.CopartitionGroup> groups = new ArrayList<>();
        if (!f[6].equals("-")) {
            for (String group : f[6].split(";")) {
                String[] parts = group.split("/");
                groups.add(new StreamsGroupTopologyValue.CopartitionGroup()
                    .setSourceTopics(indexes(parts[0])).setRepartitionSourceTopics(indexes(parts[1])));
            }
        }
        return new StreamsGroupTopologyValue.Subtopology().setSubtopologyId(f[1]).setSourceTopics(names(f[2]))
            .setRepartitionSinkTopics(names(f[3])).setRepartitionSourceTopics(repartition)
            .setStateChangelogTopics(changelogs).setCopartitionGroups(groups);
    }

    private static void answer(PrintWriter out, Map<String, Integer> topics, StreamsGroupTopologyValue value) {
        ConfiguredTopology configured;
        try {
            configured = InternalTopicManager.configureTopics(NOPLogger.NOP_LOGGER, "app", "m", 0L,
                StreamsTopology.fromRecord(value), image(topics), Time.SYSTEM);
        } catch (StreamsInvalidTopologyException e) {
            out.println("invalid " + e.getMessage());
            return;
        } catch (RuntimeException e) {
            out.println("error " + e.getClass().getName());
            return;
        }
        out.println(configured.topicConfigurationException()
            .map(e -> "status " + e.status().code() + " " + e.getMessage()).orElse("status - -"));
        TreeMap<String, Integer> tasks = new TreeMap<>();
        if (configured.subtopologies().isPresent()) {
            for (Map.Entry<String, ConfiguredSubtopology> e : configured.subtopologies().get().entrySet()) {
                tasks.put(e.getKey(), e.getValue().numberOfTasks());
            }
        }
        out.println("tasks " + join(tasks));
        TreeMap<String, Integer> create = new TreeMap<>();
        for (Map.Entry<String, CreatableTopic> e : configured.internalTopicsToBeCreated().entrySet()) {
            create.put(e.getKey(), e.getValue().numPartitions());
        }
        out.println("create " + join(create));
    }

    private static String join(TreeMap<String, Integer> counts) {
        List<String> parts = new ArrayList<>();
        counts.forEach((k, v) -> parts.add(k + "=" + v));
        return parts.isEmpty() ? "-" : String.join(",", parts);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, false, StandardCharsets.UTF_8);
        Map<String, Integer> topics = new HashMap<>();
        StreamsGroupTopologyValue value = new StreamsGroupTopologyValue();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ");
            switch (f[0]) {
                case "topology":
                    topics = new HashMap<>();
                    value = new StreamsGroupTopologyValue().setEpoch(1);
                    break;
                case "topic":
                    topics.put(f[1], Integer.parseInt(f[2]));
                    break;
                case "sub":
                    value.subtopologies().add(subtopology(f));
                    break;
                case "end":
                    answer(out, topics, value);
                    out.println("end");
                    break;
                default:
                    throw new IllegalArgumentException("unexpected line: " + line);
            }
        }
        out.flush();
    }
}
