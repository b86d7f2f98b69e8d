"""One `sparkk8s-submit` run in a child process, its wall time split into phases.

    python benchmarks/cli_phases.py list <out_file> <argv...>   # the modules the run loads
    python benchmarks/cli_phases.py time <spawn_ns> <modules_file> <out_file> <argv...>

Run as a script, never imported: nothing but the standard library's builtins is loaded
before the first clock read, so the interpreter phase is the parent's spawn to here.
`time` writes one JSON object of nanoseconds to `out_file`:
- interpreter: from the parent's clock before spawning to this script's first line (exec,
  the interpreter's start, `site`);
- imports: importing every module `list` saw the same command load (the CLI's own start-up
  and every module it imports later, lazily, for this command);
- render: from there to the end of `services.submit.submission.plan` (parse the arguments, choose
  the Spark line, read the policy, prepare, render, plan the uploads);
- requests: from there to the command's result (the client, the API requests on loopback);
- what the parent's wall clock has left is the command's end (`end_process`): "exit".
Both clocks are CLOCK_MONOTONIC, which is one clock for every process on Linux.
"""

import time

STARTED_NS = time.monotonic_ns()

import importlib  # noqa: E402  (after the first clock read, on purpose)
import json  # noqa: E402
import sys  # noqa: E402


def _run(argv: list[str]) -> int:
    """The command's work, as the console script runs it, but for its end (`end_process`,
    which `time` calls once the phases are written)."""
    from airflow_provider_sparkk8s.cli import submit as cli

    sys.argv = ["sparkk8s-submit", *argv]
    return cli.main(argv)


def list_modules(out_file: str, argv: list[str]) -> int:
    before = set(sys.modules)
    code = _run(argv)
    loaded = [name for name in sys.modules if name not in before]
    with open(out_file, "w", encoding="utf-8") as handle:
        handle.write("\n".join(loaded) + "\n")
    return code


def time_phases(spawn_ns: int, modules_file: str, out_file: str, argv: list[str]) -> int:
    with open(modules_file, encoding="utf-8") as handle:
        modules = handle.read().split()
    for name in modules:
        if name not in sys.modules:
            importlib.import_module(name)
    imported_ns = time.monotonic_ns()
    from airflow_provider_sparkk8s.services.submit import submission

    planned_ns = 0
    plan = submission.plan

    def timed_plan(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal planned_ns
        result = plan(*args, **kwargs)
        planned_ns = time.monotonic_ns()
        return result

    submission.plan = timed_plan  # type: ignore[assignment]
    code = _run(argv)
    ended_ns = time.monotonic_ns()
    if code != 0 or not planned_ns:
        raise SystemExit(f"sparkk8s-submit failed ({code})")
    phases = {
        "interpreter": STARTED_NS - spawn_ns,
        "imports": imported_ns - STARTED_NS,
        "render": planned_ns - imported_ns,
        "requests": ended_ns - planned_ns,
    }
    with open(out_file, "w", encoding="utf-8") as handle:
        json.dump(phases, handle)
    from airflow_provider_sparkk8s.cli import submit as cli

    # The command's own end: what the parent's wall has left is "exit". A --baseline tree
    # from before end_process() ends as its command did, through the interpreter's exit.
    end_process = getattr(cli, "end_process", None)
    if end_process is not None:
        end_process(code)
    return code


if __name__ == "__main__":
    if sys.argv[1] == "list":
        sys.exit(list_modules(sys.argv[2], sys.argv[3:]))
    sys.exit(time_phases(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]))
