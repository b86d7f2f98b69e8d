"""sparkk8s-submit's policy: `--policy FILE` or `$SPARKK8S_POLICY_FILE`, shown by the dry
run, a breach or a bad policy file refused with exit code 2 (invalid input)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.cli.submit import main, run

ARGV = ["--master", "k8s://https://192.0.2.1:6443", "--deploy-mode", "cluster",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.0.1",
        "--class", "org.apache.spark.examples.SparkPi"]  # fmt: skip
JAR = "local:///opt/spark/examples/jars/spark-examples.jar"


def policy_file(tmp_path: Path, document: dict) -> str:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(document))
    return str(path)


def test_the_dry_run_prints_the_policy_it_kept_and_the_pins_it_filled(tmp_path: Path) -> None:
    path = policy_file(tmp_path, {"max_executors": 4, "pinned": {"spark.ui.enabled": "false"}})
    out, err = io.StringIO(), io.StringIO()
    outcome = run(["--dry-run", "--policy", path, *ARGV, JAR], environ={}, out=out, err=err)
    assert outcome.exit_code == 0
    assert err.getvalue().splitlines()[0] == (
        f"Policy from file {path}: every rule kept (pinned=['spark.ui.enabled'], max_executors=4)"
    )
    assert "spark.ui.enabled=false" in out.getvalue()


def test_without_a_policy_the_dry_run_is_unchanged(tmp_path: Path) -> None:
    path = policy_file(tmp_path, {})  # empty: no rules, no policy line
    outputs = []
    for extra in ([], ["--policy", path]):
        out, err = io.StringIO(), io.StringIO()
        run(["--dry-run", *extra, *ARGV, JAR], environ={}, out=out, err=err)
        outputs.append(err.getvalue())
    assert outputs[0] == outputs[1] == ""


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_breach_exits_2_naming_key_value_and_rule(
    tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = policy_file(tmp_path, {"max_executors": 4})
    argv = [*ARGV, "--num-executors", "5", JAR]
    if how == "flag":
        argv = ["--policy", path, *argv]
    else:
        monkeypatch.setenv("SPARKK8S_POLICY_FILE", path)
    assert main(argv) == 2
    assert f"the platform policy from file {path} refuses this submission: " in (
        capsys.readouterr().err
    )


def test_a_missing_or_bad_policy_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--policy", str(tmp_path / "none.json"), *ARGV, JAR]) == 2
    assert "--policy=" in capsys.readouterr().err
    path = policy_file(tmp_path, {"max_executor": 4})
    assert main(["--policy", path, *ARGV, JAR]) == 2
    assert "policy.max_executor=4 is invalid" in capsys.readouterr().err
