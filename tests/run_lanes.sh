#!/usr/bin/env bash
# `make test`'s full run (TESTS=tests) in three lanes at once, each its own pytest session:
#
#   lane "e2e":     tests/e2e (real Airflow and real Spark: mostly waiting on heartbeats,
#                   deferrals and execution timeouts) and tests/realnode (the real kubelet)
#   lane "runtime": tests/runtime (real Spark through the provider, on a real node of its own)
#   lane "rest":    every other test (the CPU-bound unit, parity and fuzz tests among them),
#                   then the Airflow compatibility suite
#
#   tests/run_lanes.sh PYTHON COMPAT_COMMAND
#
# Three lanes on two cores, because every lane mostly waits. Measured alone on this 2-core
# machine (2026-12-07, SPARKK8S_TIMINGS and testenv/process_cpu.py): the old rest lane (with
# tests/runtime) used about one core, 1,380 CPU-s in 1,435 s; the e2e lane 1.4, 1,484 CPU-s
# in 1,060 s; the compatibility suite 148 CPU-s in 198 s. Two lanes side by side kept the
# machine 79 % busy, and whichever lane held tests/runtime (about 410 s alone) ended minutes
# after the other. A third session costs a second real node (its start and image imports,
# about a minute of CPU) and buys the overlap of three lanes' waits.
#
# Each lane's session fixtures are its own: control planes, Airflow stacks and storage
# servers on free loopback ports and in their own temp dirs, a real node in namespaces and
# cgroups of its own. Every test still runs, each exactly once: the rest lane is `tests` less
# the other lanes' paths.
#
# The rest lane prints as it goes; the other lanes' output is kept in files and printed after
# it, whole, so nothing interleaves, the e2e lane's last, so a pytest summary is the last
# line. Exits non-zero when any lane does (pytest's exit 5, "no tests collected", included),
# naming the lane.
set -uo pipefail
py=${1:?usage: run_lanes.sh PYTHON COMPAT_COMMAND}
compat=${2:?usage: run_lanes.sh PYTHON COMPAT_COMMAND}
# Each lane ends with where its time went (tests/support/timing.py: set-up against test time,
# the session fixtures' starts, the ten slowest), the data for keeping CI in its budget.
pytest=("$py" -m pytest -q -p no:cacheprovider)
E2E_PATHS=(tests/e2e tests/realnode)
RUNTIME_PATHS=(tests/runtime)

# One lane, run by this script again in a session of its own (so an interrupt reaches all of
# it: pytest turns SIGTERM into an interrupt that stops its control planes and Airflow).
# Its verdict lines go to the file $4, printed before its output ($4.log).
if [ "${3:-}" = --lane ]; then
    status=$4 lane=$5
    shift 5
    rc=0
    if [ "$lane" = rest ]; then
        "${pytest[@]}" "$@" || rc=$?
    else
        "${pytest[@]}" "$@" >"$status.log" 2>&1 || rc=$?
    fi
    [ "$rc" -eq 5 ] && echo "make test: lane $lane collected no tests" >>"$status"
    echo "lane $lane: pytest exit $rc after ${SECONDS}s" >>"$status"
    if [ "$lane" = rest ]; then
        compat_rc=0
        $compat || compat_rc=$?
        echo "lane rest: compatibility suite exit $compat_rc; the lane took ${SECONDS}s" >>"$status"
        [ "$rc" -eq 0 ] && rc=$compat_rc
    fi
    exit "$rc"
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/sparkk8s-lanes-XXXXXX")
rest_args=(tests)
for path in "${E2E_PATHS[@]}" "${RUNTIME_PATHS[@]}"; do rest_args+=("--ignore=$path"); done
started=$SECONDS
pids=()
# In the background, so a signal to this script runs the trap at once (bash runs it only
# after a foreground command ends); the rest lane's output still streams here.
setsid "$0" "$py" "$compat" --lane "$logs/e2e" e2e "${E2E_PATHS[@]}" </dev/null &
pids+=($!)
setsid "$0" "$py" "$compat" --lane "$logs/runtime" runtime "${RUNTIME_PATHS[@]}" </dev/null &
pids+=($!)
setsid "$0" "$py" "$compat" --lane "$logs/rest" rest "${rest_args[@]}" </dev/null &
pids+=($!)
stop_lanes() {
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
    wait
    cat "$logs"/* 2>/dev/null
    rm -rf "$logs"
    exit 130
}
trap stop_lanes INT TERM

codes=()
for pid in "${pids[@]}"; do
    code=0
    wait "$pid" || code=$?
    codes+=("$code")
done
trap - INT TERM
echo "make test: lanes e2e exit ${codes[0]}, runtime exit ${codes[1]}, rest exit ${codes[2]};" \
    "all done after $((SECONDS - started))s"
cat "$logs/rest" 2>/dev/null
for lane in runtime e2e; do
    echo
    echo "=========================== lane $lane (ran alongside) ==========================="
    cat "$logs/$lane" "$logs/$lane.log" 2>/dev/null
done
rm -rf "$logs"
for code in "${codes[@]}"; do
    [ "$code" -ne 0 ] && exit "$code"
done
exit 0
