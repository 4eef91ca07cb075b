import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/**
 * Reads byte sequences as hex, one per line, on stdin and writes, for each, the UTF-16 code
 * units of {@code new String(bytes, offset, length, UTF_8)} as hex (4 digits each; an empty
 * line for no characters). The bytes sit between two continuation bytes in a larger array, as a
 * record's key sits in a batch, so a decoder reading past its slice would show.
 */
public class Utf8Decode {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        PrintWriter out = new PrintWriter(new BufferedWriter(
            new OutputStreamWriter(System.out, StandardCharsets.US_ASCII), 1 << 16));
        String line;
        StringBuilder units = new StringBuilder();
        while ((line = in.readLine()) != null) {
            int length = line.length() / 2;
            byte[] padded = new byte[length + 2];
            padded[0] = (byte) 0x80;
            padded[length + 1] = (byte) 0x80;
            for (int i = 0; i < length; i++) {
                padded[i + 1] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
            }
            String text = new String(padded, 1, length, StandardCharsets.UTF_8);
            units.setLength(0);
            for (int i = 0; i < text.length(); i++) {
                char c = text.charAt(i);
                units.append(HEX[c >> 12 & 15]).append(HEX[c >> 8 & 15]).append(HEX[c >> 4 & 15]).append(HEX[c & 15]);
            }
            out.println(units);
        }
        out.flush();
    }
}
