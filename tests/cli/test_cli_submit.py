"""sparkk8s-submit without a cluster: dry run, usage errors, exit codes, and waiting on a
scripted sequence of driver pod states."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator

import pytest
import yaml

from airflow_provider_sparkk8s.cli import submit as cli
from airflow_provider_sparkk8s.cli.submit import run, wait_for_driver
from airflow_provider_sparkk8s.errors import (
    FAILURE_CLASSES,
    ApplicationError,
    ConfigurationError,
    DriverOutOfMemory,
    KubeConnectionError,
)
from airflow_provider_sparkk8s.monitoring.reducer import reduce_application
from testenv.harness.recorder import RecordingServer

MASTER = ["--master", "k8s://https://192.0.2.1:6443", "--deploy-mode", "cluster"]
IMAGE = ["--conf", "spark.kubernetes.container.image=apache/spark:4.3.0"]
JAR = ["--class", "org.example.Main", "local:///opt/app.jar", "arg1"]


def no_cluster(*_: object) -> None:
    raise AssertionError("a dry run must not build a client")


def dry_run(*extra: str) -> list[dict]:
    out = io.StringIO()
    outcome = run(
        ["--dry-run", *MASTER, *IMAGE, *extra, *JAR],
        environ={"SPARK_USER": "alice"},
        out=out,
        err=io.StringIO(),
        client_factory=no_cluster,  # type: ignore[arg-type]
    )
    assert outcome.exit_code == 0
    return list(yaml.safe_load_all(out.getvalue()))


def test_dry_run_prints_every_object_in_submission_order() -> None:
    docs = dry_run("--name", "My App", "--conf", "spark.kubernetes.namespace=team")
    assert [d["kind"] for d in docs] == ["Pod", "Service", "NetworkPolicy", "ConfigMap"]
    pod = docs[0]
    assert pod["metadata"]["namespace"] == "team"
    assert pod["metadata"]["name"].startswith("my-app-") and pod["metadata"]["name"].endswith(
        "-driver"
    )
    spark = pod["spec"]["containers"][-1]
    assert spark["args"][-2:] == ["local:///opt/app.jar", "arg1"]
    assert {"name": "SPARK_USER", "value": "alice"} in spark["env"]
    properties = docs[-1]["data"]["spark.properties"]
    assert "spark.app.name=My App" in properties
    assert "spark.master=k8s\\://https\\://192.0.2.1\\:6443" in properties


def test_dry_run_masks_secrets() -> None:
    docs = dry_run(
        "--conf", "spark.kubernetes.authenticate.driver.oauthToken=hunter2-token",
        "--conf", "spark.kubernetes.driverEnv.DB_PASSWORD=hunter2-password",
    )  # fmt: skip
    text = yaml.safe_dump_all(docs)
    assert "hunter2" not in text
    (secret,) = [d for d in docs if d["kind"] == "Secret"]
    assert secret["data"] == {"oauth-token": "*********(redacted)"}


def test_dry_run_follows_the_spark_version() -> None:
    docs = dry_run("--spark-version", "3.5.9")
    assert [d["kind"] for d in docs] == ["Pod", "Service", "ConfigMap"]  # no NetworkPolicy
    assert docs[0]["metadata"]["labels"]["spark-version"] == "3.5.9"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--deploy-mode", "cluster", *JAR], "--master"),
        ([*MASTER, "--conf", "broken", *JAR], "--conf"),
        ([*MASTER, *IMAGE, "--spark-version", "2.4.0", *JAR], "spark_version"),
        ([*MASTER, *IMAGE, "--conf", "spark.driver.memory=lots", *JAR], "spark.driver.memory"),
    ],
)
def test_invalid_input_exits_2_naming_the_key(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--dry-run", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert "--spark-version" in capsys.readouterr().out


def pod(phase: str, terminated: dict | None = None, scheduled: bool = True) -> dict:
    status: dict = {"phase": phase}
    if scheduled:
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    if terminated is not None:
        status["containerStatuses"] = [
            {"name": "spark-kubernetes-driver", "state": {"terminated": terminated}}
        ]
    elif phase == "Running":
        running = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
        status["containerStatuses"] = [{"name": "spark-kubernetes-driver", "state": running}]
    return {
        "metadata": {"name": "d", "namespace": "ns", "labels": {"spark-role": "driver"}},
        "status": status,
    }


def scripted(*pods: dict | None):
    def events(client: object, namespace: str, name: str) -> Iterator[dict | None]:
        yield from pods

    return events


def test_wait_prints_changes_once_and_returns_the_final_state() -> None:
    out = io.StringIO()
    state = wait_for_driver(
        None,  # type: ignore[arg-type]
        "ns",
        "d",
        out,
        scripted(
            pod("Pending"),
            pod("Pending"),
            pod("Running"),
            pod("Running"),
            pod("Failed", {"exitCode": 2, "reason": "Error"}),
            pod("Failed", {"exitCode": 2, "reason": "Error"}),  # never read: already terminal
        ),
    )
    lines = out.getvalue().splitlines()
    assert state.state == "failed" and state.exit_code == 2
    assert len(lines) == 3
    assert "running" in lines[1] and "exit code 2" in lines[2]


def test_wait_treats_a_deleted_driver_as_unknown() -> None:
    state = wait_for_driver(
        None,  # type: ignore[arg-type]
        "ns",
        "d",
        io.StringIO(),
        scripted(pod("Running"), None),  # type: ignore[arg-type]
    )
    assert state.state == "unknown"


class DeleteRecorder:
    """A client that answers only the driver's DELETE, recording it."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    def request(self, method: str, path: str, **_: object) -> dict:
        self.requests.append((method, path))
        return {"metadata": {"name": "d", "namespace": "ns"}}


def pulling(reason: str, message: str) -> dict:
    driver = pod("Pending")
    driver["status"]["containerStatuses"] = [
        {"name": "spark-kubernetes-driver", "image": "apache/spark:3.5.99",
         "state": {"waiting": {"reason": reason, "message": message}}}
    ]  # fmt: skip
    return driver


NOT_FOUND = (
    'rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/apache/spark:'
    '3.5.99": failed to resolve reference "docker.io/apache/spark:3.5.99": docker.io/apache/'
    "spark:3.5.99: not found"
)


def test_a_missing_image_ends_the_wait_deletes_the_driver_and_exits_6() -> None:
    out, client = io.StringIO(), DeleteRecorder()
    state = wait_for_driver(
        client,  # type: ignore[arg-type]
        "ns",
        "d",
        out,
        scripted(pod("Pending"), pulling("ErrImagePull", NOT_FOUND), pod("Running")),
    )
    assert (state.state, state.reason) == ("failed", "ImageNotFound")
    assert client.requests == [("DELETE", "/api/v1/namespaces/ns/pods/d")]
    lines = out.getvalue().splitlines()
    assert 'failed, ImageNotFound: image "apache/spark:3.5.99"' in lines[-2]
    assert lines[-1].endswith("Deleting driver pod ns:d (its image does not exist).")
    assert cli.exit_code_of(state) == 6


def test_a_transient_pull_error_keeps_waiting() -> None:
    timed_out = NOT_FOUND.replace("docker.io/apache/spark:3.5.99: not found", "i/o timeout")
    client = DeleteRecorder()
    state = wait_for_driver(
        client,  # type: ignore[arg-type]
        "ns",
        "d",
        io.StringIO(),
        scripted(pulling("ErrImagePull", timed_out), pod("Failed", {"exitCode": 1})),
    )
    assert (state.state, state.exit_code, client.requests) == ("failed", 1, [])


def test_the_status_line_repeats_every_report_interval_with_the_latest_phase() -> None:
    out = io.StringIO()
    with cli.StatusReporter(out, "spark-abc", 0.02) as reporter:
        reporter.seen(pod("Pending"))
        deadline = time.monotonic() + 5
        while "phase: Pending" not in out.getvalue():
            assert time.monotonic() < deadline
        reporter.seen(None)  # a deleted pod keeps the last phase seen, as Spark's watcher
        reporter.seen(pod("Running"))
        while "phase: Running" not in out.getvalue():
            assert time.monotonic() < deadline
    lines = out.getvalue().splitlines()
    assert all(
        line.endswith(")") and "Application status for spark-abc (phase: " in line for line in lines
    )
    count = len(lines)
    time.sleep(0.1)
    assert len(out.getvalue().splitlines()) == count, "no line after the reporter stopped"


@pytest.mark.parametrize("value", ["0", "0s", "-1s", "soon"])
def test_a_report_interval_that_is_not_positive_is_refused_before_any_request(value: str) -> None:
    err = io.StringIO()
    with pytest.raises(cli.SparkConfError) as caught:
        run(
            [*MASTER, *IMAGE, "--conf", f"spark.kubernetes.report.interval={value}", *JAR],
            environ={"SPARK_USER": "alice"},
            out=io.StringIO(),
            err=err,
            client_factory=no_cluster,  # type: ignore[arg-type]
        )
    assert "spark.kubernetes.report.interval" in str(caught.value)
    assert value in str(caught.value)


def test_the_image_tag_chooses_the_spark_line() -> None:
    """apache/spark:3.5.1 gets 3.5's objects: no NetworkPolicy, no spark-connect port."""
    docs = dry_run("--conf", "spark.kubernetes.driver.container.image=apache/spark:3.5.1")
    assert [d["kind"] for d in docs] == ["Pod", "Service", "ConfigMap"]
    pod = docs[0]
    assert pod["metadata"]["labels"]["spark-version"] == "3.5.1"
    ports = [p["name"] for p in pod["spec"]["containers"][-1]["ports"]]
    assert "spark-connect" not in ports


def test_an_image_that_says_nothing_warns_and_names_the_line_and_the_flag() -> None:
    err = io.StringIO()
    argv = ["--dry-run", *MASTER, "--conf", "spark.kubernetes.container.image=mycorp/etl:7", *JAR]
    run(argv, environ={}, out=io.StringIO(), err=err, client_factory=no_cluster)  # type: ignore[arg-type]
    assert "warning" in err.getvalue() and "--spark-version" in err.getvalue()
    assert "4.3.0" in err.getvalue() and "mycorp/etl:7" in err.getvalue()
    quiet = io.StringIO()
    run(["--spark-version", "4.0.5", *argv], environ={}, out=io.StringIO(), err=quiet,
        client_factory=no_cluster)  # type: ignore[arg-type]  # fmt: skip
    assert quiet.getvalue() == ""


def test_no_image_is_one_clear_refusal_without_a_line_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Papercut 10 (issue 29): no image printed `None` twice, after a warning about the
    image's tag; one message says what is missing."""
    assert cli.main([*MASTER, *JAR]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.splitlines() == [
        (
            "sparkk8s-submit: spark.kubernetes.container.image is not set: expected a container "
            "image (or spark.kubernetes.driver.container.image) (Must specify the driver "
            "container image)"
        )
    ]


def test_no_primary_resource_says_it_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*MASTER, *IMAGE]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "primary resource is not set: expected the application's jar, .py or .R file" in err
    assert "None" not in err


def test_a_typod_conf_key_warns_with_the_key_meant_and_is_not_refused() -> None:
    """Papercut 9 (issue 29): the dry run and the submission both say it; spark-submit
    accepts the key, and so do we (it reaches the driver's properties as written)."""
    typo = [
        "--conf",
        "spark.executor.memroy=2g",
        "--conf",
        "spark.kubernetes.driver.label.memroy=x",
    ]
    err = io.StringIO()
    out = io.StringIO()
    argv = ["--dry-run", *MASTER, *IMAGE, *typo, *JAR]
    assert run(argv, environ={}, out=out, err=err, client_factory=no_cluster).exit_code == 0  # type: ignore[arg-type]
    assert err.getvalue().splitlines() == [
        (
            "sparkk8s-submit: warning: spark.executor.memroy is not a conf key of Spark 4.3: "
            "did you mean spark.executor.memory? (Spark ignores keys it does not define; the "
            "submission goes ahead.)"
        )
    ]
    assert "spark.executor.memroy=2g" in out.getvalue()  # in the conf ConfigMap as written
    with RecordingServer() as server:
        submitted = io.StringIO()
        master = ["--master", f"k8s://{server.url}", "--deploy-mode", "cluster"]
        wait = ["--conf", "spark.kubernetes.submission.waitAppCompletion=false"]
        argv = [*master, *IMAGE, *wait, *typo, *JAR]
        assert run(argv, environ={}, out=io.StringIO(), err=submitted).exit_code == 0
    assert "did you mean spark.executor.memory?" in submitted.getvalue()
    assert "memroy=x" not in submitted.getvalue() and "label.memroy" not in submitted.getvalue()


def test_help_says_where_credentials_and_the_namespace_come_from() -> None:
    out = io.StringIO()
    assert run(["--help"], environ={}, out=out, err=io.StringIO()).exit_code == 0
    text = out.getvalue()
    for expected in ("$KUBECONFIG", "~/.kube/config", "spark.kubernetes.context", "service account",
                     "spark.kubernetes.authenticate.submission.", "spark.kubernetes.namespace"):  # fmt: skip
        assert expected in text, expected


@pytest.mark.parametrize(
    ("terminated", "code"),
    [
        ({"exitCode": 0, "reason": "Completed"}, 0),
        ({"exitCode": 1, "reason": "Error"}, 1),
        ({"exitCode": 137, "reason": "OOMKilled"}, 3),
        ({"exitCode": 52, "reason": "Error"}, 3),
        ({"exitCode": 143, "reason": "Error"}, 4),
    ],
)
def test_the_exit_code_says_the_failure_kind(terminated: dict, code: int) -> None:
    phase = "Succeeded" if terminated["exitCode"] == 0 else "Failed"
    state = reduce_application([pod(phase, terminated)], driver_pod_name="d")
    assert cli.exit_code_of(state) == code


def test_a_vanished_driver_exits_as_infrastructure() -> None:
    state = reduce_application([], driver_pod_name="d")
    assert cli.exit_code_of(state) == 4


def test_the_exit_codes_cover_every_failure_class() -> None:
    assert set(cli.EXIT_CODES) == set(FAILURE_CLASSES)
    assert len({cli.EXIT_CODES[k] for k in FAILURE_CLASSES if k != "failed"}) == 5


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (KubeConnectionError("connection refused"), 4),
        (DriverOutOfMemory("[out_of_memory] OOMKilled"), 3),
        (ApplicationError("[application_error] boom"), 1),
        (ConfigurationError("[configuration_error] ImageNotFound"), 6),
    ],
)
def test_main_maps_raised_failures_to_their_exit_codes(
    monkeypatch: pytest.MonkeyPatch, error: Exception, code: int
) -> None:
    def fail(argv):
        raise error

    monkeypatch.setattr(cli, "run", fail)
    assert cli.main([]) == code
