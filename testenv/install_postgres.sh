#!/usr/bin/env bash
# PostgreSQL for the two-triggerer tests (Airflow's metadata DB, as in production and in our
# docker-compose.yaml): Debian's package, installed only when no server binary is present.
# Prints the directory holding initdb and postgres.
set -euo pipefail
find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
bin=$(find_bin || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  exec 9>/tmp/.sparkk8s-postgres-install.lock
  flock 9
  bin=$(find_bin || true)
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "installing Debian's postgresql" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends postgresql >&2
    bin=$(find_bin)
  fi
fi
echo "$bin"
