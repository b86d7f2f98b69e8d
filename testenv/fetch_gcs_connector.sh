#!/usr/bin/env bash
# Fetches (or reuses) one release of Google's GCS connector for Hadoop, as a user's Spark image
# needs it to read gs:// paths: com.google.cloud.bigdataoss:gcs-connector, its `shaded` jar
# (one jar, 38-41 MB, with the Google client libraries relocated, so nothing clashes with
# Spark's own jars). testenv/gcs_connector.py picks the release for each line's Hadoop.
# Through Maven (`dependency:copy`) with the machine's configured repository; Maven's own
# repository and the jar are cached under ~/.cache keyed by the connector's version, beside
# hadoop-aws's (testenv/fetch_hadoop_aws.sh), under the same lock. Prints the folder holding
# the jar (progress goes to stderr).
#
#     testenv/fetch_gcs_connector.sh 4.0.4
set -euo pipefail
version=${1:?usage: fetch_gcs_connector.sh CONNECTOR_VERSION}
cache=${SPARKK8S_CONNECTORS_CACHE:-$HOME/.cache/sparkk8s-connectors}
out="$cache/gcs-connector-$version"
mkdir -p "$cache"

# One fetch at a time: sessions started side by side share this cache.
exec 9>"$cache/.fetch.lock"
flock 9
if [ ! -f "$out/.complete" ]; then
  echo "fetching gcs-connector $version (shaded)" >&2
  start=$SECONDS
  work=$(mktemp -d "$cache/.work.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$cache/maven-repository" \
    dependency:copy -Dartifact="com.google.cloud.bigdataoss:gcs-connector:$version:jar:shaded" \
    -DoutputDirectory="$work/jars" >&2
  touch "$work/jars/.complete"
  rm -rf "$out"
  mv "$work/jars" "$out"
  echo "fetched gcs-connector $version in $((SECONDS - start))s ($(du -sh "$out" | cut -f1))" >&2
fi
echo "$out"
