import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs many invocations of Kafka's kafka-storage (kafka.tools.StorageTool), kafka-features
 * (org.apache.kafka.tools.FeatureCommand) and kafka-metadata-quorum
 * (org.apache.kafka.tools.MetadataQuorumCommand) in one JVM, so a test can compare dozens of them
 * with ours without starting a JVM for each.
 *
 * stdin: one invocation per line, its words separated by tabs; the first word is "storage",
 * "features" or "metadata-quorum", the rest are the tool's arguments; or the first word is "main",
 * the second a tool's main class (any of Kafka's tools), the rest its arguments. Each answer is written and
 * flushed before the next line is read, so a test may send one line, read its answer, and go on.
 * stdout, for each invocation: a line "exit=N out=A err=B", then A bytes of what the tool wrote
 * on stdout and B bytes of what it wrote on stderr (UTF-8).
 *
 * The exit status and stderr follow each tool's main: StorageTool prints the message of a
 * FormatterException or TerseFailure and exits 1; FeatureCommand.mainNoExit and
 * MetadataQuorumCommand.mainNoExit return their own status (what their main passes to Exit.exit).
 * Every invocation runs in a thread of its own, named "main"; a tool that calls Kafka's
 * Exit.exit (or Exit.halt) ends its invocation with that status, and that thread goes no
 * further, as if the JVM had ended (it stays parked). Any other exception of storage or features is what the JVM would
 * report for an uncaught one: its toString() on stderr after "Exception in thread "main" "
 * (without the stack), exit 1.
 */
public class ToolRuns {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream realOut = System.out;
        Method featureCommand = Class.forName("org.apache.kafka.tools.FeatureCommand")
            .getDeclaredMethod("mainNoExit", String[].class);
        featureCommand.setAccessible(true);
        Method metadataQuorumCommand = Class.forName("org.apache.kafka.tools.MetadataQuorumCommand")
            .getDeclaredMethod("mainNoExit", String[].class);
        metadataQuorumCommand.setAccessible(true);
        org.apache.kafka.common.utils.Exit.setExitProcedure((status, message) -> exitInvocation(status));
        org.apache.kafka.common.utils.Exit.setHaltProcedure((status, message) -> exitInvocation(status));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] words = line.split("\t", -1);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
            CompletableFuture<Integer> done = new CompletableFuture<>();
            current = done;
            System.setOut(outStream);
            System.setErr(errStream);
            int status;
            try {
                Thread thread = new Thread(() -> done.complete(dispatch(words, outStream, errStream, featureCommand,
                                                                        metadataQuorumCommand)), "main");
                thread.setDaemon(true);
                thread.start();
                status = done.get();
            } finally {
                current = null;
                closeAdmins();
                System.setOut(realOut);
                System.setErr(new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.err), true));
            }
            outStream.flush();
            errStream.flush();
            byte[] o = out.toByteArray();
            byte[] e = err.toByteArray();
            realOut.print("exit=" + status + " out=" + o.length + " err=" + e.length + "\n");
            realOut.write(o);
            realOut.write(e);
            realOut.flush();
        }
        Runtime.getRuntime().halt(0);       // threads a tool left behind do not keep the JVM up
    }

    /** The invocation running now; Kafka's Exit.exit completes it. */
    private static volatile CompletableFuture<Integer> current;

    private static void exitInvocation(int status) {
        CompletableFuture<Integer> invocation = current;
        if (invocation != null) invocation.complete(status);
        while (true) LockSupport.park();    // as at the JVM's exit: this thread goes no further
    }

    private static int dispatch(String[] words, PrintStream out, PrintStream err, Method featureCommand,
                                Method metadataQuorumCommand) {
        String[] toolArgs = new String[words.length - 1];
        System.arraycopy(words, 1, toolArgs, 0, toolArgs.length);
        try {
            switch (words[0]) {
                case "storage": return runStorage(toolArgs, out, err);
                case "features": return runMainNoExit(featureCommand, toolArgs, err);
                case "metadata-quorum": return runMainNoExit(metadataQuorumCommand, toolArgs, err);
                case "main": return runMain(toolArgs);
                default: err.println("ToolRuns: unknown tool " + words[0]); return 2;
            }
        } catch (Throwable t) {
            err.print("Exception in thread \"main\" ");
            t.printStackTrace(err);
            return 1;
        }
    }

    private static int runStorage(String[] args, PrintStream out, PrintStream err) {
        try {
            return kafka.tools.StorageTool.execute(args, out);
        } catch (Throwable t) {
            String name = t.getClass().getSimpleName();
            if (name.equals("FormatterException") || name.equals("TerseFailure")) {
                err.println(t.getMessage());
            } else {
                err.println("Exception in thread \"main\" " + t);
            }
            return 1;
        }
    }

    /**
     * "main CLASS ARGS": CLASS's static main(String[]), as its bin/ script runs it: 0 when main
     * returns, the status Exit.exit gives, 1 with an uncaught exception's stack (what the JVM
     * prints). Scala's Console writes to the invocation's streams too (kafka.admin.ConfigCommand).
     */
    private static int runMain(String[] words) throws Throwable {
        Method main = Class.forName(words[0]).getMethod("main", String[].class);
        String[] args = java.util.Arrays.copyOfRange(words, 1, words.length);
        if (words[0].equals(TRANSACTIONS_COMMAND)) return runTransactions(args);
        PrintStream out = System.out;
        PrintStream err = System.err;
        scala.Console.withOut(out, (scala.Function0<Object>) () ->
            scala.Console.withErr(err, (scala.Function0<Object>) () -> invokeStatic(main, (Object) args)));
        return 0;
    }

    private static final String TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand";

    /** The Admin clients the running invocation opened and its tool leaves open; closed after it. */
    private static final java.util.List<AutoCloseable> openedAdmins = new java.util.concurrent.CopyOnWriteArrayList<>();

    /**
     * kafka-transactions ends every run with Exit.exit without closing its Admin client, which a
     * JVM of its own does not need; here the client would live on, and its warnings (a broker gone
     * away) would land in later runs' stderr. So its main's own steps (TransactionsCommand.execute
     * with its buildAdminClient), with each Admin it builds kept, and closed after the run.
     */
    private static int runTransactions(String[] args) throws Throwable {
        Class<?> command = Class.forName(TRANSACTIONS_COMMAND);
        Method buildAdmin = command.getDeclaredMethod("buildAdminClient", net.sourceforge.argparse4j.inf.Namespace.class);
        buildAdmin.setAccessible(true);
        Method execute = command.getDeclaredMethod("execute", String[].class, java.util.function.Function.class,
                                                   PrintStream.class, org.apache.kafka.common.utils.Time.class);
        execute.setAccessible(true);
        java.util.function.Function<Object, Object> admins = ns -> {
            AutoCloseable admin = (AutoCloseable) invokeStatic(buildAdmin, ns);
            openedAdmins.add(admin);
            return admin;
        };
        invokeStatic(execute, args, admins, System.out, org.apache.kafka.common.utils.Time.SYSTEM);
        return 0;
    }

    private static void closeAdmins() {
        for (AutoCloseable admin : openedAdmins) {
            try {
                admin.close();
            } catch (Exception e) {
                // a client that cannot close cleanly is still stopped; nothing else to do
            }
        }
        openedAdmins.clear();
    }

    private static Object invokeStatic(Method method, Object... args) {
        try {
            return method.invoke(null, args);
        } catch (InvocationTargetException e) {
            return ToolRuns.<RuntimeException>rethrow(e.getCause());    // as the JVM sees main's exception
        } catch (IllegalAccessException e) {
            return ToolRuns.<RuntimeException>rethrow(e);
        }
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> Object rethrow(Throwable t) throws T {
        throw (T) t;
    }

    private static int runMainNoExit(Method mainNoExit, String[] args, PrintStream err) throws IllegalAccessException {
        try {
            return (Integer) mainNoExit.invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            err.println("Exception in thread \"main\" " + e.getCause());
            return 1;
        }
    }
}
