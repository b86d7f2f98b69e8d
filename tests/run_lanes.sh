#!/usr/bin/env bash
# `make test`'s full run (TESTS=tests) in two lanes at once, one per core of CI's machine:
#
#   lane "e2e":  the real node's tests, in one pytest session so they share one real node
#                and its image imports: tests/e2e (real Airflow and real Spark: mostly
#                waiting on heartbeats, deferrals and execution timeouts), tests/realnode
#                (the real kubelet) and tests/runtime (real Spark through the provider)
#   lane "rest": every other test (the CPU-bound unit, parity and fuzz tests among them;
#                tests/failover's two triggerers on PostgreSQL and KWOK, which need no real
#                node and once made the e2e lane end 5 minutes after this one), and beside
#                them the Airflow compatibility suite
#
#   tests/run_lanes.sh PYTHON COMPAT_COMMAND
#
# Measured on this 2-core machine (2026-12-07, SPARKK8S_TIMINGS and testenv/process_cpu.py;
# docs/testing.md, "Where the CPU goes"). Alone, the rest lane with tests/runtime used about
# one core (1,380 CPU-s in 1,435 s) and the e2e lane 1.4 (1,484 CPU-s in 1,060 s). Whole
# warm runs, each green:
# - tests/runtime in the rest lane and the compatibility suite after the e2e lane: 1,800 s;
# - this layout: 1,587 s, the machine 82 % busy;
# - three lanes (tests/runtime alone, with a second real node): 1,721 s, 81 % busy.
# The suite is CPU-bound side by side, so one real node beats a third lane's overlap.
# Again after the long applications went to sleep (2026-12-07, nothing else running; the
# same tests; docs/testing.md, "Lane layouts tried"):
# - this layout: 1,385 s, 2,044 CPU-s, 75 % busy (run 9);
# - three lanes, this e2e lane and the rest in two sessions at nice 5 (process and autogroup):
#   1,416 s, 2,233 CPU-s, 80 % busy (run 12); the rest ended after 925 and 998 s and the e2e
#   lane, 1,410 s, was no faster for its priority;
# - four lanes, tests/e2e and tests/realnode+tests/runtime each on a real node of its own and
#   the rest in two niced sessions: 1,442 s (run 13); the node lanes ended after 1,063 and
#   1,076 s, the starved rest after 1,339 s and 1,441 s.
# Each extra session costs its own planes, stacks and fixtures (190 CPU-s for the third), and
# the machine is then short of CPU: this layout stays.
# Each lane is its own pytest session, so its session fixtures are its own: control planes,
# the Airflow stack and S3 server on free loopback ports and in their own temp dirs, and a
# real node in the e2e lane alone. Every test still runs, each exactly once: the rest lane
# is `tests` less E2E_PATHS.
#
# The rest lane prints as it goes; the e2e lane's output is kept in a file and printed after
# it, whole, so neither interleaves, and its pytest summary is the last line. Exits non-zero
# when any lane does (pytest's exit 5, "no tests collected", included), naming the lane.
set -uo pipefail
py=${1:?usage: run_lanes.sh PYTHON COMPAT_COMMAND}
compat=${2:?usage: run_lanes.sh PYTHON COMPAT_COMMAND}
# Each lane ends with where its time went (tests/support/timing.py: set-up against test time,
# the session fixtures' starts, the ten slowest), the data for keeping CI in its budget.
pytest=("$py" -m pytest -q -p no:cacheprovider)
E2E_PATHS=(tests/e2e tests/realnode tests/runtime)

if [ "${3:-}" = --e2e-lane ]; then
    # Its verdict goes to a file of its own ($4), printed before its output: the output's
    # last line stays a pytest summary, as CI reads it.
    rc=0
    "${pytest[@]}" "${E2E_PATHS[@]}" || rc=$?
    [ "$rc" -eq 5 ] && echo "make test: no tests were collected in ${E2E_PATHS[*]}" >>"$4"
    echo "lane e2e: ${E2E_PATHS[*]} exit $rc after ${SECONDS}s" >>"$4"
    exit "$rc"
fi

if [ "${3:-}" = --rest-lane ]; then
    ignored=()
    for path in "${E2E_PATHS[@]}"; do ignored+=("--ignore=$path"); done
    # The compatibility suite runs beside this lane's pytest, in the lane's session, so the
    # e2e lane keeps its half of the machine: it mostly waits on Airflow's processes, and
    # fills this lane's own waits. Its output is kept and printed after the lane's.
    compat_log=$(mktemp "${TMPDIR:-/tmp}/sparkk8s-compat-XXXXXX")
    $compat >"$compat_log" 2>&1 &
    compat_pid=$!
    rc=0
    "${pytest[@]}" tests "${ignored[@]}" || rc=$?
    [ "$rc" -eq 5 ] && echo "make test: no tests were collected outside ${E2E_PATHS[*]}" >&2
    echo "lane rest: pytest exit $rc after ${SECONDS}s; the compatibility suite beside it:"
    compat_rc=0
    wait "$compat_pid" || compat_rc=$?
    cat "$compat_log"
    rm -f "$compat_log"
    echo "lane rest: compatibility suite exit $compat_rc; the lane took ${SECONDS}s"
    [ "$rc" -ne 0 ] && exit "$rc"
    exit "$compat_rc"
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/sparkk8s-lanes-XXXXXX")
# The e2e lane in a session (process group) of its own, so an interrupt of this script
# reaches all of it: pytest turns SIGTERM into an interrupt that stops its control planes
# and Airflow.
setsid "$0" "$py" "$compat" --e2e-lane "$logs/e2e.status" >"$logs/e2e.log" 2>&1 &
e2e_pid=$!
started=$SECONDS
rest_pid=
stop_lanes() {
    [ -n "$rest_pid" ] && kill -TERM -- "-$rest_pid" 2>/dev/null
    kill -TERM -- "-$e2e_pid" 2>/dev/null
    wait
    cat "$logs/e2e.status" "$logs/e2e.log" 2>/dev/null
    rm -rf "$logs"
    exit 130
}
trap stop_lanes INT TERM

# In the background too, so a signal to this script runs the trap at once (bash runs it
# only after a foreground command ends), in a session of its own like the e2e lane's, so the
# trap reaches its pytest and the compatibility suite beside it; its output still streams here.
setsid "$0" "$py" "$compat" --rest-lane </dev/null &
rest_pid=$!
rest_rc=0
wait "$rest_pid" || rest_rc=$?
rest_seconds=$((SECONDS - started))

e2e_rc=0
wait "$e2e_pid" || e2e_rc=$?
trap - INT TERM
echo
echo "=========================== lane e2e (ran alongside) ==========================="
echo "make test: lane rest exit $rest_rc after ${rest_seconds}s, lane e2e exit $e2e_rc;" \
    "both done after $((SECONDS - started))s"
cat "$logs/e2e.status" "$logs/e2e.log" 2>/dev/null
rm -rf "$logs"
[ "$rest_rc" -ne 0 ] && exit "$rest_rc"
exit "$e2e_rc"
