// Runs Kafka 4.3.1's StickyTaskAssignor on the cases read from stdin and prints its assignments:
// the judge of kafkawire/broker/streams_assignor.py (tests/interop/test_streams_assignor_vs_kafka.py).
//
// A case:   case <num.standby.replicas>
//           sub <subtopology id> <tasks> <stateful 0|1>            (any number)
//           member <member id> <process id> <active> <standby>   (in the order put into the members map)
//           end
// where <active> and <standby> are "-" or "s:p,p;s:p". The answer: one line per member, in the
// case's order, "<member id> <active> <standby>" (subtopologies and partitions sorted), then "end".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.coordinator.group.streams.assignor.AssignmentMemberSpec;
import org.apache.kafka.coordinator.group.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.apache.kafka.coordinator.group.streams.assignor.TopologyDescriber;

public class StickyAssignorCases {

    private static Map<String, Set<Integer>> parseTasks(String text) {
        Map<String, Set<Integer>> tasks = new HashMap<>();
        if (text.equals("-")) {
            return tasks;
        }
        for (String group : text.split(";")) {
            String[] parts = group.split(":");
            Set<Integer> partitions = new TreeSet<>();
            for (String p : parts[1].split(",")) {
                partitions.add(Integer.parseInt(p));
            }
            tasks.put(parts[0], partitions);
        }
        return tasks;
    }

    private static String formatTasks(Map<String, Set<Integer>> tasks) {
        TreeMap<String, Set<Integer>> sorted = new TreeMap<>();
        for (Map.Entry<String, Set<Integer>> e : tasks.entrySet()) {
            if (!e.getValue().isEmpty()) {
                sorted.put(e.getKey(), new TreeSet<>(e.getValue()));
            }
        }
        if (sorted.isEmpty()) {
            return "-";
        }
        List<String> groups = new ArrayList<>();
        for (Map.Entry<String, Set<Integer>> e : sorted.entrySet()) {
            List<String> partitions = new ArrayList<>();
            for (Integer p : e.getValue()) {
                partitions.add(p.toString());
            }
            groups.add(e.getKey() + ":" + String.join(",", partitions));
        }
        return String.join(";", groups);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, false, StandardCharsets.UTF_8);
        String replicas = null;
        TreeMap<String, int[]> subtopologies = new TreeMap<>();    // id -> {tasks, stateful}
        Map<String, AssignmentMemberSpec> members = new HashMap<>();  // as TargetAssignmentBuilder's memberSpecs
        List<String> order = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ");
            switch (f[0]) {
                case "case":
                    replicas = f[1];
                    subtopologies = new TreeMap<>();
                    members = new HashMap<>();
                    order = new ArrayList<>();
                    break;
                case "sub":
                    subtopologies.put(f[1], new int[] {Integer.parseInt(f[2]), Integer.parseInt(f[3])});
                    break;
                case "member":
                    members.put(f[1], new AssignmentMemberSpec(Optional.empty(), Optional.empty(), parseTasks(f[3]),
                        parseTasks(f[4]), Map.of(), f[2], Map.of(), Map.of(), Map.of()));
                    order.add(f[1]);
                    break;
                case "end":
                    final TreeMap<String, int[]> subs = subtopologies;
                    TopologyDescriber topology = new TopologyDescriber() {
                        public List<String> subtopologies() {
                            return new ArrayList<>(subs.keySet());
                        }

                        public int maxNumInputPartitions(String id) {
                            if (!subs.containsKey(id)) throw new NoSuchElementException(id);
                            return subs.get(id)[0];
                        }

                        public boolean isStateful(String id) {
                            if (!subs.containsKey(id)) throw new NoSuchElementException(id);
                            return subs.get(id)[1] == 1;
                        }
                    };
                    GroupAssignment assignment = new StickyTaskAssignor().assign(
                        new GroupSpecImpl(Collections.unmodifiableMap(members), Map.of("num.standby.replicas", replicas)),
                        topology);
                    for (String member : order) {
                        MemberAssignment m = assignment.members().get(member);
                        out.println(member + " " + formatTasks(m.activeTasks()) + " " + formatTasks(m.standbyTasks()));
                    }
                    out.println("end");
                    break;
                default:
                    throw new IllegalArgumentException("unexpected line: " + line);
            }
        }
        out.flush();
    }
}
