import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Properties;
import java.util.TreeMap;

/**
 * java.util.Properties.load as the oracle of our properties loader. Each input line is one
 * properties text, base64 of its UTF-8 bytes. Each output line is "ERR" when Java refuses it,
 * else "OK" and the entries as key=value pairs, each string as hex UTF-16 code units.
 */
public class PropertiesOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String text = new String(Base64.getDecoder().decode(line), StandardCharsets.UTF_8);
            Properties properties = new Properties();
            try {
                properties.load(new StringReader(text));
            } catch (IllegalArgumentException e) {
                out.append("ERR\n");
                continue;
            }
            TreeMap<String, String> sorted = new TreeMap<>();
            for (String name : properties.stringPropertyNames()) {
                sorted.put(hex(name), hex(properties.getProperty(name)));
            }
            out.append("OK");
            for (var entry : sorted.entrySet()) {
                out.append(' ').append(entry.getKey()).append('=').append(entry.getValue());
            }
            out.append('\n');
        }
        System.out.print(out);
    }

    private static String hex(String text) {
        StringBuilder hex = new StringBuilder("x");
        for (char c : text.toCharArray()) {
            hex.append(String.format("%04x", (int) c));
        }
        return hex.toString();
    }
}
