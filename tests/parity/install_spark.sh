#!/usr/bin/env bash
# Installs the real spark-submit used as the parity oracle: one venv per Spark line under
# ~/.cache/sparkk8s-parity/ (never in the repo). The pyspark wheels ship the Kubernetes jars.
# Prints nothing but errors; re-running is cheap (pip sees the wheel is there).
set -euo pipefail
ROOT="${SPARKK8S_PARITY_HOME:-$HOME/.cache/sparkk8s-parity}"
VERSIONS="${*:-4.3.0 3.5.9 4.2.1 4.1.4 4.0.5}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$ROOT"
# One install at a time: parallel test sessions and make targets share this cache.
exec 9>"$ROOT/.install.lock"
flock 9
for version in $VERSIONS; do
  venv="$ROOT/pyspark-$version"
  if [ ! -x "$venv/bin/spark-submit" ]; then
    "$PYTHON" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "pyspark==$version"
  fi
  # The jars must include the k8s resource manager, or the oracle would not be spark-submit on k8s.
  ls "$venv"/lib/python*/site-packages/pyspark/jars/spark-kubernetes_*.jar >/dev/null
done
