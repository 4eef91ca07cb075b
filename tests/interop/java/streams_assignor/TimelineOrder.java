// Prints the iteration order of Kafka 4.3.1's org.apache.kafka.timeline.TimelineHashMap (the map of a
// group's members in the group coordinator) after each line of puts and removals read from stdin:
// the judge of kafkawire/broker/java_collections.py's timeline_hash_map_order.
//
// A line: "+key" puts (a new key, or a new value for an existing one), "-key" removes, separated by
// spaces. The answer: the keys in iteration order on one line, then "end".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;

public class TimelineOrder {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, false, StandardCharsets.UTF_8);
        String line;
        int version = 0;
        while ((line = in.readLine()) != null) {
            SnapshotRegistry registry = new SnapshotRegistry(new LogContext());
            TimelineHashMap<String, Integer> map = new TimelineHashMap<>(registry, 0);
            for (String op : line.split(" ")) {
                if (op.startsWith("+")) {
                    map.put(op.substring(1), ++version);
                } else {
                    map.remove(op.substring(1));
                }
            }
            out.println(String.join(" ", map.keySet()));
            out.println("end");
        }
        out.flush();
    }
}
