#!/usr/bin/env bash
# Fetches (or reuses) the S3A connector of one Hadoop release, as a user's Spark image needs
# it to read s3a:// paths: hadoop-aws at that version and the AWS SDK modules its S3A file
# system loads, at the SDK version that Hadoop release builds against (read from its
# hadoop-project pom: SDK v2 from Hadoop 3.4, v1 before). Not the SDK bundle hadoop-aws
# declares (about 600 MB for v2): the s3 and s3-transfer-manager modules with their
# dependencies are enough for S3A (v1: the s3 and dynamodb modules), 11-18 MB a release
# (tests/runtime/test_s3a_uploads_real_spark.py reads through them). Through Maven (`dependency:copy`, `copy-dependencies`) with the machine's
# configured repository; Maven's own repository and the jars are cached under ~/.cache keyed
# by the Hadoop version. Prints the folder of jars (progress goes to stderr).
#
#     testenv/fetch_hadoop_aws.sh 3.5.0
set -euo pipefail
hadoop=${1:?usage: fetch_hadoop_aws.sh HADOOP_VERSION}
cache=${SPARKK8S_CONNECTORS_CACHE:-$HOME/.cache/sparkk8s-connectors}
out="$cache/hadoop-aws-$hadoop"
mkdir -p "$cache"

# One fetch at a time: sessions started side by side share this cache.
exec 9>"$cache/.fetch.lock"
flock 9
if [ ! -f "$out/.complete" ]; then
  echo "fetching hadoop-aws $hadoop and its AWS SDK modules" >&2
  start=$SECONDS
  work=$(mktemp -d "$cache/.work.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  mvn=(mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$cache/maven-repository")
  "${mvn[@]}" dependency:copy -Dartifact="org.apache.hadoop:hadoop-project:$hadoop:pom" \
    -DoutputDirectory="$work" >&2
  property() { sed -n "s:.*<$1>\(.*\)</$1>.*:\1:p" "$work/hadoop-project-$hadoop.pom" | head -1; }
  v2=$(property aws-java-sdk-v2.version)
  if [ -n "$v2" ]; then
    # Some SDK releases were published without s3-transfer-manager (2.24.6, Hadoop 3.4.1's,
    # has none): take the closest earlier patch release of that one module; the s3 module
    # and everything below it stay at Hadoop's version (declared first, so Maven keeps it).
    manager=$v2
    until "${mvn[@]}" dependency:get -Dtransitive=false \
      -Dartifact="software.amazon.awssdk:s3-transfer-manager:$manager" >/dev/null 2>&1; do
      patch=${manager##*.}
      [ "$patch" -gt 0 ] && [ $((${v2##*.} - patch)) -lt 5 ] ||
        { echo "no s3-transfer-manager near $v2" >&2; exit 1; }
      manager=${manager%.*}.$((patch - 1))
    done
    [ "$manager" = "$v2" ] || echo "s3-transfer-manager $v2 is not published: using $manager" >&2
    bundle="<groupId>software.amazon.awssdk</groupId><artifactId>bundle</artifactId>"
    sdk="<dependency><groupId>software.amazon.awssdk</groupId><artifactId>s3</artifactId><version>$v2</version></dependency>
    <dependency><groupId>software.amazon.awssdk</groupId><artifactId>s3-transfer-manager</artifactId><version>$manager</version></dependency>"
  else
    v1=$(property aws-java-sdk.version)
    [ -n "$v1" ] || { echo "no AWS SDK version in hadoop-project $hadoop" >&2; exit 1; }
    bundle="<groupId>com.amazonaws</groupId><artifactId>aws-java-sdk-bundle</artifactId>"
    # Hadoop 3.3's S3A still links its S3Guard exceptions to DynamoDB's model classes.
    sdk="<dependency><groupId>com.amazonaws</groupId><artifactId>aws-java-sdk-s3</artifactId><version>$v1</version></dependency>
    <dependency><groupId>com.amazonaws</groupId><artifactId>aws-java-sdk-dynamodb</artifactId><version>$v1</version></dependency>"
  fi
  cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>sparkk8s.testenv</groupId><artifactId>hadoop-aws-jars</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId><version>$hadoop</version>
      <exclusions><exclusion>$bundle</exclusion></exclusions></dependency>
    $sdk
  </dependencies>
</project>
EOF
  (cd "$work" && "${mvn[@]}" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$work/jars" >&2)
  touch "$work/jars/.complete"
  rm -rf "$out"
  mv "$work/jars" "$out"
  echo "fetched hadoop-aws $hadoop in $((SECONDS - start))s ($(du -sh "$out" | cut -f1))" >&2
fi
echo "$out"
