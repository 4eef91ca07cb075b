import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * What RE2J (Kafka's com.google.re2j) answers for regexes, as Kafka's group coordinator reads a
 * SubscribedTopicRegex: Pattern.compile, then matches() on each topic name. Input, hex-encoded
 * UTF-8 one a line: the comma-separated topic names first, then one regex a line. Output, one line
 * a regex: a 0/1 per topic name, or "!" and the PatternSyntaxException's description.
 */
public class Re2jMatch {
    static String text(String hex) {
        byte[] bytes = new byte[hex.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String[] names = in.readLine().split(",");
        for (int i = 0; i < names.length; i++) {
            names[i] = text(names[i]);
        }
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            try {
                Pattern pattern = Pattern.compile(text(line));
                StringBuilder answer = new StringBuilder();
                for (String name : names) {
                    answer.append(pattern.matches(name) ? '1' : '0');
                }
                out.println(answer);
            } catch (PatternSyntaxException e) {
                out.println("!" + e.getDescription());
            }
        }
        out.flush();
    }
}
