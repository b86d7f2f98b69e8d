#!/usr/bin/env bash
# A virtual environment with another Airflow release, for the compatibility runs.
#
#   tests/compat/airflow_venv.sh VERSION OUT_DIR    -> prints OUT_DIR/bin/python
#   tests/compat/airflow_venv.sh VERSION --bare     -> prints the bare layer's directory
#
# Three layers, so a warm run installs nothing heavy:
#   ~/.cache/sparkk8s-airflow/<VERSION>/bare[-<pins>]        apache-airflow==VERSION alone
#   ~/.cache/sparkk8s-airflow/<VERSION>/test[-<pins>]-<key>  the test extra's other packages
#                                                            (key: pyproject's dependencies)
#   OUT_DIR                                                  this checkout, editable (seconds)
# Both cached layers install within tests/compat/constraints-<VERSION>.txt when it exists
# (<pins>: the hash of its pins): every dependency at the newest version of that release's
# day (tests/compat/resolve_constraints.sh), as a user installing it then got. Without one,
# pip takes the newest of everything, which an older release never ran with: FastAPI 0.132
# rejects JSON sent without a Content-Type header, as 3.0.6's task SDK sends its task-instance
# updates (no task starts); pydantic 2.14 refuses 3.2.2's execution-API models
# (TITerminalStatePayload "needs a discriminator field"), so its DAG runs fail.
# Upper layers see the lower ones through a .pth file calling site.addsitedir, so pip finds
# Airflow's dependencies installed and never pulls a second Airflow. The caches are built
# under a lock, so parallel checkouts never build the same layer at once.
set -euo pipefail
version=${1:?usage: airflow_venv.sh VERSION OUT_DIR}
out=${2:?usage: airflow_venv.sh VERSION OUT_DIR}
# Absolute: the airflow script written below names its interpreter in its #! line, and the
# tests run it from other directories.
[ "$out" = --bare ] || out=$(realpath -m "$out")
repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=${SPARKK8S_AIRFLOW_CACHE:-$HOME/.cache/sparkk8s-airflow}/$version
mkdir -p "$cache"
pyver=$(python3 -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')

site_of() { echo "$1/lib/$pyver/site-packages"; }

# Venvs without their own pip and setuptools (an old bundled setuptools would shadow the
# layers' newer one); the machine's pip installs into them with --python.
pip_into() {
    local python=$1
    shift
    nice -n 10 python3 -m pip --python "$python" install -q "$@" >&2
}

# $1: venv dir; $2...: venvs whose site-packages it sees, first wins.
overlay_venv() {
    local dir=$1
    shift
    rm -rf "$dir"
    python3 -m venv --without-pip "$dir"
    local pth
    pth="$(site_of "$dir")/_sparkk8s_layers.pth"
    : >"$pth"
    for lower in "$@"; do
        echo "import site; site.addsitedir('$(site_of "$lower")')" >>"$pth"
    done
}

# The test extra as pip requirement lines, minus what the compatibility suite never uses and
# what makes pip backtrack for many minutes against an older Airflow's pins: Airflow itself,
# its providers, s3fs, gcsfs and adlfs (the upload tests run on 3.3 only), pyspark-client
# (the Connect client tests too) and the linters.
test_requirements() {
    python3 - "$repo/pyproject.toml" <<'EOF'
import re, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
for requirement in project["dependencies"] + project["optional-dependencies"]["test"]:
    if not re.match(r"(apache-airflow\b|ruff\b|mypy\b|s3fs\b|gcsfs\b|adlfs\b|pyspark-client\b)", requirement):
        print(requirement)
EOF
}

constraints=$repo/tests/compat/constraints-$version.txt
pins=()
pins_key=""
if [ -f "$constraints" ]; then
    pins=(-c "$constraints")
    pins_key=-$(grep -v '^#' "$constraints" | md5sum | cut -c1-8)
fi
key=$(test_requirements | md5sum | cut -c1-8)
bare=$cache/bare$pins_key
tests=$cache/test$pins_key-$key

(
    flock 9
    if [ ! -f "$bare/.complete" ]; then
        echo "airflow_venv: installing apache-airflow==$version into $bare" >&2
        rm -rf "$bare"
        python3 -m venv --without-pip "$bare"
        pip_into "$bare/bin/python" "${pins[@]}" "apache-airflow==$version"
        touch "$bare/.complete"
    fi
    if [ "$out" = --bare ]; then
        exit 0
    fi
    if [ ! -f "$tests/.complete" ]; then
        echo "airflow_venv: installing the test packages into $tests" >&2
        overlay_venv "$tests" "$bare"
        mapfile -t requirements < <(test_requirements)
        # setuptools: the checkout layer installs editable without build isolation.
        pip_into "$tests/bin/python" "${pins[@]}" "apache-airflow==$version" "setuptools>=77" \
            "${requirements[@]}"
        touch "$tests/.complete"
    fi
) 9>"$cache/.lock"

if [ "$out" = --bare ]; then
    echo "$bare"
    exit 0
fi
if [ ! -f "$out/.complete$pins_key-$key" ] || [ "$(cat "$out/.complete$pins_key-$key")" != "$repo" ]; then
    overlay_venv "$out" "$tests" "$bare"
    pip_into "$out/bin/python" --no-deps --no-build-isolation -e "$repo"
    # Airflow's command next to the interpreter, as the tests look for it there.
    printf '#!%s\nimport sys\nfrom airflow.__main__ import main\nsys.exit(main())\n' \
        "$out/bin/python" >"$out/bin/airflow"
    chmod +x "$out/bin/airflow"
    echo "$repo" >"$out/.complete$pins_key-$key"
fi
echo "$out/bin/python"
