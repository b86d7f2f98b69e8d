"""sparkk8s-submit imports only what the command it runs needs.

Start-up is most of the CLI's wall time (docs/benchmarks.md), so each command is run in a
fresh interpreter and the modules it loaded are read from `sys.modules`: an import-set
check, never a timing one. No command imports Airflow, the async stack, YAML, fsspec or
the package metadata machinery; start-up and --help/--version import no feature step, no
render and no API client; a plain submission imports the feature steps it runs but none
of what only a policy, a wait, --kill/--status, an upload, an exec plugin, a glob, TLS, a
kubeconfig read or an optional step needs.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from testenv.harness.recorder import RecordingServer

PACKAGE = "airflow_provider_sparkk8s"
CHECKOUT = Path(__file__).resolve().parents[2]
# Never on the command line's path (the operator's stack, heavy libraries, slow lookups).
NEVER: tuple[str, ...] = (
    "airflow", "httpx", "httpcore", "asyncio", "yaml", "fsspec", "pydantic",
    "importlib.metadata", "pkg_resources", "http.client", "email", f"{PACKAGE}.version_compat",
    *(f"{PACKAGE}.{face}" for face in ("operators", "sensors", "triggers", "hooks", "links")),
)  # fmt: skip
# Only a submission that gets this far needs them.
RENDER_AND_CLIENT = (
    f"{PACKAGE}.submission.features",
    f"{PACKAGE}.submission.builder",
    f"{PACKAGE}.submission.render",
    f"{PACKAGE}.kube",
    f"{PACKAGE}.services.submit.send",
)
# Only a policy, a wait, --kill/--status, an upload or Volcano needs them.
NOT_FOR_A_PLAIN_SUBMISSION = (
    f"{PACKAGE}.application.policy.platform_policy",
    f"{PACKAGE}.application.policy.guardrails",
    f"{PACKAGE}.application.following.follower",
    f"{PACKAGE}.application.task.task_identity",
    f"{PACKAGE}.application.following.timeouts",
    f"{PACKAGE}.application.policy.redaction",
    f"{PACKAGE}.monitoring",
    f"{PACKAGE}.services.pods.driver_pods",
    f"{PACKAGE}.services.following.follow_runs",
    f"{PACKAGE}.kube.listwatch",
    f"{PACKAGE}.kube.watch_sync",
    f"{PACKAGE}.submission.features.volcano",
    "zipfile",
    "tempfile",
    "uuid",
    "random",
    # Only a kubeconfig user with an exec plugin, a glob in --jars/--files, or a time conf
    # (the report interval of a wait, a Kueue queue timeout) needs them.
    f"{PACKAGE}.kube.exec_plugin",
    "glob",
    "decimal",
    # Only TLS (an https server or OIDC issuer, a failure's TLS cause), a kubeconfig or
    # service-account mount that is read, a remote upload path or a Secret's data needs them.
    "ssl",
    "_ssl",
    "base64",
    "pathlib",
    "importlib.util",
    # Only the type checker reads the modules' typing names (TYPE_CHECKING blocks).
    "typing",
)

LOADED = """
import json, sys
before = set(sys.modules)
{body}
print(json.dumps([name for name in sys.modules if name not in before]))
"""


def loaded_by(body: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules `body` loads in a fresh interpreter (this checkout first on the path).

    Without site (-S), site-packages named on the path instead: site runs the .pth files,
    and an editable install's finder imports pathlib and importlib.util before `body` runs.
    """
    path = os.pathsep.join([str(CHECKOUT), *site.getsitepackages()])
    environ = {**os.environ, **(env or {}), "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-S", "-c", LOADED.format(body=body)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=CHECKOUT,  # `-c` puts the working directory first on the path
        check=True,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def under(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    """The modules that are one of `prefixes` or inside one of them."""
    return sorted(
        name
        for name in modules
        if any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)
    )


def run_cli(argv: list[str]) -> str:
    return (
        "import io\n"
        "from airflow_provider_sparkk8s.cli import submit\n"
        f"outcome = submit.run({argv!r}, out=io.StringIO(), err=io.StringIO())\n"
        "assert outcome.exit_code == 0, outcome\n"
    )


def test_start_up_imports_no_airflow_no_render_and_no_client() -> None:
    loaded = loaded_by("import airflow_provider_sparkk8s.cli.submit")
    assert f"{PACKAGE}.cli.submit" in loaded  # the check reads the right process
    assert under(loaded, NEVER) == []
    assert under(loaded, RENDER_AND_CLIENT) == []
    assert under(loaded, NOT_FOR_A_PLAIN_SUBMISSION) == []


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_help_and_version_import_no_render_and_no_client(flag: str) -> None:
    loaded = loaded_by(run_cli([flag]))
    assert f"{PACKAGE}.submission.command_line.arguments" in loaded
    assert under(loaded, NEVER) == []
    assert under(loaded, RENDER_AND_CLIENT) == []
    assert under(loaded, NOT_FOR_A_PLAIN_SUBMISSION) == []


def test_a_submission_imports_its_steps_and_client_and_nothing_it_does_not_use(
    tmp_path: Path,
) -> None:
    with RecordingServer() as server:
        argv = [
            "--master", f"k8s://{server.url}", "--deploy-mode", "cluster",
            "--name", "spark-pi", "--class", "org.apache.spark.examples.SparkPi",
            "--conf", "spark.kubernetes.container.image=apache/spark:4.3.0",
            "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
            "local:///opt/spark/examples/jars/spark-examples.jar", "100",
        ]  # fmt: skip
        loaded = loaded_by(run_cli(argv), env={"KUBECONFIG": str(tmp_path / "none")})
        posts = [r for r in server.recording.as_list() if r["method"] == "POST"]
    assert [post["path"] for post in posts] == ["/api/v1/namespaces/default/pods"]
    # What it sent needed these: the feature steps Spark runs, the render, the client.
    assert f"{PACKAGE}.submission.features.basic_driver" in loaded
    assert f"{PACKAGE}.submission.features.local_dirs" in loaded
    assert {f"{PACKAGE}.submission.render", f"{PACKAGE}.kube.sync_client"} <= loaded
    assert under(loaded, NEVER) == []
    assert under(loaded, NOT_FOR_A_PLAIN_SUBMISSION) == []


def test_the_command_ends_its_process_flushed_and_a_caller_of_main_carries_on() -> None:
    """The command ends its process itself once its work is done, without the interpreter's
    teardown (benchmarks/cli_phases.py's exit phase): its exit code kept, what was written
    before flushed. A test or an embedder calling main(argv) gets the code back."""
    code = (
        "import sys\n"
        "from airflow_provider_sparkk8s.cli import submit\n"
        "print('main(argv) gave', submit.main(['--bogus-option']))\n"
        "sys.argv = ['sparkk8s-submit', '--bogus-option']\n"
        "submit.main()\n"
        "print('not reached')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT), "PYTHONUNBUFFERED": ""},
        cwd=CHECKOUT,
        check=False,
    )
    # stdout is a pipe, so block-buffered: the line reached it only by the command's flush.
    assert (done.returncode, done.stdout) == (2, "main(argv) gave 2\n"), done
    usage = "sparkk8s-submit: argument='--bogus-option' is invalid"
    assert done.stderr.count(usage) == 2, done.stderr
