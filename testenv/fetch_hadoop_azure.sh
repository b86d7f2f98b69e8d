#!/usr/bin/env bash
# Fetches (or reuses) the Azure connector of one Hadoop release, as a user's Spark image needs
# it to read abfs:// and wasb:// paths: hadoop-azure at that version and its runtime
# dependencies (azure-storage for WASB, jetty-util-ajax, wildfly-openssl, ...); the ones Spark's
# distribution already ships are left out when the image is laid (testenv/hadoop_azure.py).
# Through Maven (`copy-dependencies`) with the machine's configured repository; Maven's own
# repository and the jars are cached under ~/.cache keyed by the Hadoop version, beside
# hadoop-aws's (testenv/fetch_hadoop_aws.sh), under the same lock. Prints the folder of jars
# (progress goes to stderr).
#
#     testenv/fetch_hadoop_azure.sh 3.5.0
set -euo pipefail
hadoop=${1:?usage: fetch_hadoop_azure.sh HADOOP_VERSION}
cache=${SPARKK8S_CONNECTORS_CACHE:-$HOME/.cache/sparkk8s-connectors}
out="$cache/hadoop-azure-$hadoop"
mkdir -p "$cache"

# One fetch at a time: sessions started side by side share this cache.
exec 9>"$cache/.fetch.lock"
flock 9
if [ ! -f "$out/.complete" ]; then
  echo "fetching hadoop-azure $hadoop and its runtime dependencies" >&2
  start=$SECONDS
  work=$(mktemp -d "$cache/.work.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>sparkk8s.testenv</groupId><artifactId>hadoop-azure-jars</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-azure</artifactId><version>$hadoop</version></dependency>
  </dependencies>
</project>
POM
  (cd "$work" && mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$cache/maven-repository" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$work/jars" >&2)
  touch "$work/jars/.complete"
  rm -rf "$out"
  mv "$work/jars" "$out"
  echo "fetched hadoop-azure $hadoop in $((SECONDS - start))s ($(du -sh "$out" | cut -f1))" >&2
fi
echo "$out"
