#!/usr/bin/env bash
# `make test`'s full run (TESTS=tests) in three lanes at once on CI's two cores:
#
#   lane "e2e":    the real node's tests, in one pytest session so they share one real node
#                  and its image imports: tests/e2e (real Airflow and real Spark: mostly
#                  waiting on heartbeats, deferrals and execution timeouts), tests/realnode
#                  (the real kubelet) and tests/runtime (real Spark through the provider).
#                  It decides the wall time, so it runs at the normal priority.
#   lane "rest":   every other test but REST_B_PATHS (the CPU-bound unit, parity and fuzz
#                  tests, the KWOK control-plane tests), at `nice` REST_NICE
#   lane "rest-b": REST_B_PATHS (the operator's, the plugins' and the two-triggerer tests:
#                  each starts Airflow processes of its own), then the Airflow compatibility
#                  suite, at `nice` REST_NICE
#
#   tests/run_lanes.sh PYTHON COMPAT_COMMAND
#
# Why three, and why nice (measured on this 2-core machine, 2026-12-07; docs/testing.md,
# "Where the CPU goes"): with two lanes (this e2e lane; every other test, then the
# compatibility suite) runs 8 and 9 took 1,366 s and 1,385 s with the machine only 75 % busy.
# One pytest session uses about one core, so the rest lane could not use the second core
# while the e2e lane waited; and at equal priority it slowed the e2e lane's real Spark, the
# critical path, by a third. Split in two and niced, the rest soaks up what the e2e lane
# leaves. (Three lanes with a second real node were slower, 1,721 s: that node cost more
# than it overlapped.)
# Each lane is its own pytest session, so its session fixtures are its own: control planes,
# Airflow stacks and S3 server on free loopback ports and in their own temp dirs, and a real
# node in the e2e lane alone. Every test still runs, each exactly once: the rest lane is
# `tests` less E2E_PATHS and REST_B_PATHS.
#
# The rest lane prints as it goes; the other two lanes' output is kept in files and printed
# after it, whole, so none interleaves, the e2e lane's last: its pytest summary is the last
# line. Exits non-zero when any lane does (pytest's exit 5, "no tests collected", included),
# naming the lane.
set -uo pipefail
py=${1:?usage: run_lanes.sh PYTHON COMPAT_COMMAND}
compat=${2:?usage: run_lanes.sh PYTHON COMPAT_COMMAND}
# Each lane ends with where its time went (tests/support/timing.py: set-up against test time,
# the session fixtures' starts, the ten slowest), the data for keeping CI in its budget.
pytest=("$py" -m pytest -q -p no:cacheprovider)
E2E_PATHS=(tests/e2e tests/realnode tests/runtime)
REST_B_PATHS=(tests/operators tests/plugins tests/failover)
REST_NICE=5

# The two rest lanes yield to the e2e lane. With the kernel's autogroups (on this
# machine, /proc/sys/kernel/sched_autogroup_enabled), the scheduler shares CPU between sessions
# first, and each lane is a session (setsid): a process's own nice counts only inside its
# session, so the session's nice is set too. Run 10 set the processes' alone: the three
# sessions then got a third of the machine each, and the e2e lane took 1,555 s.
yield_to_e2e() {
    echo "$REST_NICE" >/proc/self/autogroup 2>/dev/null || true
}

# One pytest session over the given paths; its verdict goes to $status, so the output's
# last line stays a pytest summary, as CI reads it.
run_pytest_lane() {
    local lane=$1 status=$2
    shift 2
    local rc=0
    "${pytest[@]}" "$@" || rc=$?
    [ "$rc" -eq 5 ] && echo "make test: no tests were collected in lane $lane ($*)" >>"$status"
    echo "lane $lane: pytest exit $rc after ${SECONDS}s" >>"$status"
    return "$rc"
}

if [ "${3:-}" = --e2e-lane ]; then
    run_pytest_lane e2e "$4" "${E2E_PATHS[@]}"
    exit
fi

if [ "${3:-}" = --rest-b-lane ]; then
    yield_to_e2e
    rc=0
    run_pytest_lane rest-b "$4" "${REST_B_PATHS[@]}" || rc=$?
    compat_rc=0
    $compat || compat_rc=$?
    echo "lane rest-b: compatibility suite exit $compat_rc; the lane took ${SECONDS}s" >>"$4"
    [ "$rc" -ne 0 ] && exit "$rc"
    exit "$compat_rc"
fi

if [ "${3:-}" = --rest-lane ]; then
    yield_to_e2e
    ignored=()
    for path in "${E2E_PATHS[@]}" "${REST_B_PATHS[@]}"; do ignored+=("--ignore=$path"); done
    rc=0
    "${pytest[@]}" tests "${ignored[@]}" || rc=$?
    [ "$rc" -eq 5 ] && echo "make test: no tests were collected in lane rest" >&2
    echo "lane rest: pytest exit $rc after ${SECONDS}s"
    exit "$rc"
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/sparkk8s-lanes-XXXXXX")
# Each lane in a session (process group) of its own, so an interrupt of this script reaches
# all of it: pytest turns SIGTERM into an interrupt that stops its control planes and Airflow.
setsid "$0" "$py" "$compat" --e2e-lane "$logs/e2e.status" >"$logs/e2e.log" 2>&1 &
e2e_pid=$!
setsid nice -n "$REST_NICE" "$0" "$py" "$compat" --rest-b-lane "$logs/rest-b.status" \
    >"$logs/rest-b.log" 2>&1 </dev/null &
rest_b_pid=$!
started=$SECONDS
rest_pid=
stop_lanes() {
    for pid in $rest_pid $rest_b_pid $e2e_pid; do kill -TERM -- "-$pid" 2>/dev/null; done
    wait
    cat "$logs/rest-b.status" "$logs/rest-b.log" "$logs/e2e.status" "$logs/e2e.log" 2>/dev/null
    rm -rf "$logs"
    exit 130
}
trap stop_lanes INT TERM

# In the background too, so a signal to this script runs the trap at once (bash runs it
# only after a foreground command ends); its output still streams here.
setsid nice -n "$REST_NICE" "$0" "$py" "$compat" --rest-lane </dev/null &
rest_pid=$!
rest_rc=0
wait "$rest_pid" || rest_rc=$?
rest_seconds=$((SECONDS - started))

rest_b_rc=0
wait "$rest_b_pid" || rest_b_rc=$?
e2e_rc=0
wait "$e2e_pid" || e2e_rc=$?
trap - INT TERM
echo
echo "========================= lane rest-b (ran alongside) =========================="
cat "$logs/rest-b.status" "$logs/rest-b.log" 2>/dev/null
echo
echo "=========================== lane e2e (ran alongside) ==========================="
echo "make test: lane rest exit $rest_rc after ${rest_seconds}s, lane rest-b exit $rest_b_rc," \
    "lane e2e exit $e2e_rc; all done after $((SECONDS - started))s"
cat "$logs/e2e.status" "$logs/e2e.log" 2>/dev/null
rm -rf "$logs"
[ "$rest_rc" -ne 0 ] && exit "$rest_rc"
[ "$rest_b_rc" -ne 0 ] && exit "$rest_b_rc"
exit "$e2e_rc"
