import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;

/**
 * Runs many invocations of Kafka's kafka-storage (kafka.tools.StorageTool) and kafka-features
 * (org.apache.kafka.tools.FeatureCommand) in one JVM, so a test can compare dozens of them with
 * ours without starting a JVM for each.
 *
 * stdin: one invocation per line, its words separated by tabs; the first word is "storage" or
 * "features", the rest are the tool's arguments.
 * stdout, for each invocation: a line "exit=N out=A err=B", then A bytes of what the tool wrote
 * on stdout and B bytes of what it wrote on stderr (UTF-8).
 *
 * The exit status and stderr follow each tool's main: StorageTool prints the message of a
 * FormatterException or TerseFailure and exits 1; FeatureCommand.mainNoExit returns its own
 * status. Any other exception is what the JVM would report for an uncaught one: its
 * toString() on stderr after "Exception in thread "main" " (without the stack), exit 1.
 */
public class ToolRuns {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream realOut = System.out;
        Method featureCommand = Class.forName("org.apache.kafka.tools.FeatureCommand")
            .getDeclaredMethod("mainNoExit", String[].class);
        featureCommand.setAccessible(true);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] words = line.split("\t", -1);
            String[] toolArgs = new String[words.length - 1];
            System.arraycopy(words, 1, toolArgs, 0, toolArgs.length);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(outStream);
            System.setErr(errStream);
            int status;
            try {
                status = words[0].equals("storage") ? runStorage(toolArgs, outStream, errStream)
                                                    : runFeatures(featureCommand, toolArgs, errStream);
            } finally {
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

    private static int runFeatures(Method mainNoExit, String[] args, PrintStream err) throws IllegalAccessException {
        try {
            return (Integer) mainNoExit.invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            err.println("Exception in thread \"main\" " + e.getCause());
            return 1;
        }
    }
}
