#!/bin/bash
# The entrypoint of the test Spark images (testenv/runtime_image.py): what the
# Spark images' entrypoint does for the two roles spark-submit's pods run, and nothing else.
#   driver ARGS...    spark-submit in client mode, bound to the pod's address, with the pod's args
#   executor          KubernetesExecutorBackend from the executor pod's environment
#   anything else     run as given
# One script for every sparkk8s/spark:<version>: Spark's own images run these two roles the same
# way from 3.5 to 4.3 (same env names, same executor command line); 3.5.9 and 4.3.0 run here.
set -euo pipefail

# A uid the image does not know (a pod's runAsUser) gets a passwd entry, as Spark's own
# images give it: the JVM's login (Hadoop's UnixLoginModule) fails for a user without a
# name. /etc/passwd is writable by group root, the primary group such a uid runs with.
if ! id -un >/dev/null 2>&1; then
  if [ -w /etc/passwd ]; then
    echo "$(id -u):x:$(id -u):$(id -g):${SPARK_USER_NAME:-anonymous uid}:${SPARK_HOME:-/opt/spark}:/bin/false" >>/etc/passwd
  else
    echo "entrypoint: uid $(id -u) has no passwd entry and /etc/passwd is not writable" >&2
  fi
fi

# Spark's conf directory first, then Hadoop's if any, then the distribution's jars, any extra
# classpath and the working directory.
classpath="${SPARK_CONF_DIR:-$SPARK_HOME/conf}"
if [ -n "${HADOOP_CONF_DIR:-}" ]; then classpath="$classpath:$HADOOP_CONF_DIR"; fi
classpath="$classpath:$SPARK_HOME/jars/*"
if [ -n "${SPARK_EXTRA_CLASSPATH:-}" ]; then classpath="$classpath:$SPARK_EXTRA_CLASSPATH"; fi
classpath="$classpath:$PWD"

# Executor JVM options come as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in that order.
java_opts=()
for index in $(compgen -e | sed -n 's/^SPARK_JAVA_OPT_\([0-9][0-9]*\)$/\1/p' | sort -n); do
  name="SPARK_JAVA_OPT_$index"
  java_opts+=("${!name}")
done

# The JIT's first tier alone, and the serial collector: a test's application runs seconds, so
# C2's compilations and G1's threads are CPU spent for nothing on a 2-core machine running
# dozens of JVMs. Measured on SparkPi (4 slices, local[2], pyspark 4.3.0): 10.2-12.9 CPU-s
# with the JVM's defaults, 5.8-7.6 with these. No verification of the jars' bytecode either
# (the distribution's own jars, loaded by thousands): the same program on the host, 4.4-5.2
# CPU-s with verification, 4.0 without (2026-12-07). First on the line, so an option the pod
# asks for (spark.{driver,executor}.extraJavaOptions) still wins. A test image's tuning only:
# nothing the provider submits sets or reads it.
test_jvm_opts=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC
  -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote)

role="${1:-}"
case "$role" in
  driver)
    shift
    export SPARK_SUBMIT_OPTS="${test_jvm_opts[*]}${SPARK_SUBMIT_OPTS:+ $SPARK_SUBMIT_OPTS}"
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
      --deploy-mode client "$@"
    ;;
  executor)
    exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" "${test_jvm_opts[@]}" "${java_opts[@]}" \
      -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" -cp "$classpath" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" \
      --cores "$SPARK_EXECUTOR_CORES" --app-id "$SPARK_APPLICATION_ID" \
      --hostname "$SPARK_EXECUTOR_POD_IP" --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" \
      --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  *)
    exec "$@"
    ;;
esac
