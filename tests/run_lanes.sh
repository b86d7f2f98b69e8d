#!/usr/bin/env bash
# `make test`'s full run (TESTS=tests) in four lanes at once on CI's two cores:
#
#   lane "e2e":    tests/e2e, real Airflow 3.3 and real Spark on a real node: mostly waiting
#                  on heartbeats, deferrals, executors and execution timeouts
#   lane "node":   tests/realnode and tests/runtime, real Spark on a real node of their own
#                  (the kubelet, containerd, runc) through the CLI and the operator
#   lane "rest":   every other test but REST_B_PATHS (the CPU-bound unit, parity and fuzz
#                  tests, the KWOK control-plane tests)
#   lane "rest-b": REST_B_PATHS (the operator's, the plugins' and the two-triggerer tests:
#                  each starts Airflow processes of its own), then the Airflow compatibility
#                  suite
#
#   tests/run_lanes.sh PYTHON COMPAT_COMMAND
#
# The two real-node lanes decide the wall time, so the two rest lanes run at `nice`
# REST_NICE and soak up what they leave. Measured on this 2-core machine (2026-12-07,
# docs/testing.md, "Where the CPU goes"), each run green:
# - two lanes (tests/e2e, tests/realnode and tests/runtime on one node; every other test, then
#   the compatibility suite): 1,385 s, the machine 75 % busy (run 9);
# - three lanes (that node lane; the rest in two niced sessions): 1,437 s and 1,4xx s (runs 11
#   and 12): the rest ended after about 950 and 1,000 s, and the node lane then ran alone for
#   about 450 s, mostly waiting, so its waits, not CPU, decided the wall time;
# - this layout: see docs/testing.md.
# Each lane is its own pytest session, so its session fixtures are its own: control planes,
# Airflow stacks and servers on free loopback ports and in their own temp dirs, and one real
# node in each real-node lane (in namespaces of its own; the images are built before the
# lanes start, by `make test`'s prerequisites). Every test still runs, each exactly once: the
# rest lane is `tests` less the other lanes' paths.
#
# The rest lane prints as it goes; the other lanes' output is kept in files and printed after
# it, whole, so none interleaves, the e2e lane's last: its pytest summary is the last line.
# Exits non-zero when any lane does (pytest's exit 5, "no tests collected", included), naming
# the lane.
set -uo pipefail
py=${1:?usage: run_lanes.sh PYTHON COMPAT_COMMAND}
compat=${2:?usage: run_lanes.sh PYTHON COMPAT_COMMAND}
# Each lane ends with where its time went (tests/support/timing.py: set-up against test time,
# the session fixtures' starts, the ten slowest), the data for keeping CI in its budget.
pytest=("$py" -m pytest -q -p no:cacheprovider)
E2E_PATHS=(tests/e2e)
NODE_PATHS=(tests/realnode tests/runtime)
REST_B_PATHS=(tests/operators tests/plugins tests/failover)
REST_NICE=5

# The rest lanes yield to the real-node lanes. With the kernel's autogroups (on this machine,
# /proc/sys/kernel/sched_autogroup_enabled), the scheduler shares CPU between sessions first,
# and each lane is a session (setsid): a process's own nice counts only inside its session,
# so the session's nice is set too (and the lane's own, for a kernel without autogroups). Run
# 10 set the processes' alone: the three sessions then got a third of the machine each, and
# the node lane took 1,555 s.
yield_to_real_nodes() {
    echo "$REST_NICE" >/proc/self/autogroup 2>/dev/null || true
    renice -n "$REST_NICE" -p $$ >/dev/null 2>&1 || true
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

case "${3:-}" in
    --e2e-lane)
        run_pytest_lane e2e "$4" "${E2E_PATHS[@]}"
        exit
        ;;
    --node-lane)
        run_pytest_lane node "$4" "${NODE_PATHS[@]}"
        exit
        ;;
    --rest-b-lane)
        yield_to_real_nodes
        rc=0
        run_pytest_lane rest-b "$4" "${REST_B_PATHS[@]}" || rc=$?
        compat_rc=0
        $compat || compat_rc=$?
        echo "lane rest-b: compatibility suite exit $compat_rc; the lane took ${SECONDS}s" >>"$4"
        [ "$rc" -ne 0 ] && exit "$rc"
        exit "$compat_rc"
        ;;
    --rest-lane)
        yield_to_real_nodes
        ignored=()
        for path in "${E2E_PATHS[@]}" "${NODE_PATHS[@]}" "${REST_B_PATHS[@]}"; do
            ignored+=("--ignore=$path")
        done
        rc=0
        "${pytest[@]}" tests "${ignored[@]}" || rc=$?
        [ "$rc" -eq 5 ] && echo "make test: no tests were collected in lane rest" >&2
        echo "lane rest: pytest exit $rc after ${SECONDS}s"
        exit "$rc"
        ;;
esac

logs=$(mktemp -d "${TMPDIR:-/tmp}/sparkk8s-lanes-XXXXXX")
# Each lane in a session (process group) of its own, so an interrupt of this script reaches
# all of it: pytest turns SIGTERM into an interrupt that stops its control planes and Airflow.
background=(e2e node rest-b)
declare -A pids
for lane in "${background[@]}"; do
    setsid "$0" "$py" "$compat" "--$lane-lane" "$logs/$lane.status" \
        >"$logs/$lane.log" 2>&1 </dev/null &
    pids[$lane]=$!
done
started=$SECONDS
rest_pid=
print_kept() {
    for lane in "$@"; do cat "$logs/$lane.status" "$logs/$lane.log" 2>/dev/null; done
}
stop_lanes() {
    for pid in $rest_pid "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
    wait
    print_kept "${background[@]}"
    rm -rf "$logs"
    exit 130
}
trap stop_lanes INT TERM

# In the background too, so a signal to this script runs the trap at once (bash runs it
# only after a foreground command ends); its output still streams here.
setsid "$0" "$py" "$compat" --rest-lane </dev/null &
rest_pid=$!
declare -A rcs
rcs[rest]=0
wait "$rest_pid" || rcs[rest]=$?
rest_seconds=$((SECONDS - started))
for lane in "${background[@]}"; do
    rcs[$lane]=0
    wait "${pids[$lane]}" || rcs[$lane]=$?
done
trap - INT TERM
for lane in node rest-b; do
    echo
    echo "========================= lane $lane (ran alongside) ========================="
    print_kept "$lane"
done
echo
echo "=========================== lane e2e (ran alongside) ==========================="
echo "make test: lane rest exit ${rcs[rest]} after ${rest_seconds}s, lane rest-b exit" \
    "${rcs[rest-b]}, lane node exit ${rcs[node]}, lane e2e exit ${rcs[e2e]};" \
    "all done after $((SECONDS - started))s"
print_kept e2e
rm -rf "$logs"
for lane in rest rest-b node e2e; do
    [ "${rcs[$lane]}" -ne 0 ] && exit "${rcs[$lane]}"
done
exit 0
