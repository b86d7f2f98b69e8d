#!/usr/bin/env bash
# Rebuilds tests/compat/constraints-<VERSION>.txt: apache-airflow==VERSION resolved with only
# the distributions uploaded before CUTOFF (the day after the release), so every dependency
# is at the newest version a user installing that release on its release day got.
#
#   tests/compat/resolve_constraints.sh 3.0.6 2025-08-30
#
# uv does the date cut (pip has no such option); it is installed once into
# ~/.cache/sparkk8s-airflow/uv. Not part of `make test`: run it when a release is added.
set -euo pipefail
version=${1:?usage: resolve_constraints.sh VERSION CUTOFF-DATE}
cutoff=${2:?usage: resolve_constraints.sh VERSION CUTOFF-DATE}
repo=$(cd "$(dirname "$0")/../.." && pwd)
tool=${SPARKK8S_AIRFLOW_CACHE:-$HOME/.cache/sparkk8s-airflow}/uv
if [ ! -x "$tool/bin/uv" ]; then
    python3 -m venv "$tool"
    nice -n 10 "$tool/bin/pip" install -q uv >&2
fi
out=$repo/tests/compat/constraints-$version.txt
pyver=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
{
    echo "# apache-airflow==$version resolved with only the distributions uploaded before $cutoff,"
    echo "# for Python $pyver on Linux, by tests/compat/resolve_constraints.sh."
    echo "# tests/compat/airflow_venv.sh installs both of its cached layers within it (and says why)."
    echo "apache-airflow==$version" |
        nice -n 10 "$tool/bin/uv" pip compile - --exclude-newer "${cutoff}T00:00:00Z" \
            --python-version "$pyver" --python-platform linux --no-header --no-annotate -q |
        grep -v "^apache-airflow=="
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
