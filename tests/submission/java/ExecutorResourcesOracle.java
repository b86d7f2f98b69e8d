// Spark's own BasicExecutorFeatureStep on the confs read from stdin, for
// tests/submission/test_executor_resources_oracle.py. Each input line is one conf as
// base64 of `key=value` lines; each output line is the executor container's resources,
// `requests;limits` as sorted `name=quantity` lists, or `ERR <exception class>`.
// Runs with a pyspark distribution's jars on the classpath (one JVM per Spark line).

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;
import java.io.BufferedReader;
import java.io.InputStreamReader;

import io.fabric8.kubernetes.api.model.Quantity;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.KubernetesConf$;
import org.apache.spark.deploy.k8s.KubernetesExecutorConf;
import org.apache.spark.deploy.k8s.SparkPod;
import org.apache.spark.deploy.k8s.SparkPod$;
import org.apache.spark.deploy.k8s.features.BasicExecutorFeatureStep;
import org.apache.spark.resource.ResourceProfile;
import org.apache.spark.resource.ResourceProfile$;

public class ExecutorResourcesOracle {
    static String render(Map<String, Quantity> quantities) {
        TreeMap<String, String> sorted = new TreeMap<>();
        if (quantities != null) {
            quantities.forEach((name, quantity) -> sorted.put(name, quantity.toString()));
        }
        StringBuilder out = new StringBuilder();
        sorted.forEach((name, value) -> out.append(out.length() == 0 ? "" : ",").append(name).append('=').append(value));
        return out.toString();
    }

    // One SecurityManager for the run: it only feeds the executor's auth-secret env var,
    // and building one per conf costs a Hadoop login each time.
    static SecurityManager security;

    static String one(String encoded) {
        String text = new String(Base64.getDecoder().decode(encoded), StandardCharsets.UTF_8);
        SparkConf conf = new SparkConf(false);
        for (String line : text.split("\n")) {
            if (line.isEmpty()) continue;
            int eq = line.indexOf('=');
            conf.set(line.substring(0, eq), line.substring(eq + 1));
        }
        try {
            ResourceProfile$.MODULE$.clearDefaultProfile();
            ResourceProfile profile = ResourceProfile$.MODULE$.getOrCreateDefaultProfile(conf);
            KubernetesExecutorConf executorConf = KubernetesConf$.MODULE$.createExecutorConf(
                conf, "1", "spark-oracle", scala.Option.empty(), 0);
            if (security == null) {
                security = new SecurityManager(
                    conf, scala.Option.empty(),
                    org.apache.spark.internal.config.package$.MODULE$.AUTH_SECRET_FILE_EXECUTOR());
            }
            SparkPod pod = new BasicExecutorFeatureStep(executorConf, security, profile)
                .configurePod(SparkPod$.MODULE$.initialPod());
            var resources = pod.container().getResources();
            return render(resources.getRequests()) + ";" + render(resources.getLimits());
        } catch (Throwable error) {
            return "ERR " + error.getClass().getSimpleName();
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            System.out.println(one(line.trim()));
        }
    }
}
