"""The releasable package: the wheel built from this checkout, its metadata, and an install
into a clean virtual environment that holds only Airflow (the lowest minor we declare),
where Airflow's own CLI lists the provider, its hook and its triggers."""

from __future__ import annotations

import email
import json
import subprocess
import sys
import sysconfig
import zipfile
from email.message import Message
from pathlib import Path

import pytest

import airflow_provider_sparkk8s
from airflow_provider_sparkk8s.provider_info import provider_info

REPO = Path(__file__).resolve().parents[2]
LOWEST_AIRFLOW = "3.0.6"
PACKAGE = "airflow-provider-sparkk8s"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
        check=True,
        timeout=600,
        capture_output=True,
    )
    (built,) = out.glob("airflow_provider_sparkk8s-*.whl")
    return built


@pytest.fixture(scope="module")
def metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


def test_one_version_everywhere(wheel: Path, metadata: Message) -> None:
    version = airflow_provider_sparkk8s.__version__
    assert metadata["Version"] == version
    assert wheel.name.startswith(f"airflow_provider_sparkk8s-{version}-")
    assert provider_info()["versions"] == [version]
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and "\nversion =" not in pyproject.split("[tool")[0]


def test_runtime_dependencies_are_what_the_provider_imports(metadata: Message) -> None:
    runtime = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    names = sorted(r.split(">")[0].split("=")[0].split("<")[0].strip() for r in runtime)
    assert names == ["apache-airflow", "httpx", "pyyaml"]
    test_extra = [r for r in metadata.get_all("Requires-Dist") or [] if 'extra == "test"' in r]
    assert any(r.startswith("kubernetes") for r in test_extra)


def test_license_classifiers_and_no_invented_urls(wheel: Path, metadata: Message) -> None:
    assert metadata["License-Expression"] == "Apache-2.0"
    classifiers = metadata.get_all("Classifier") or []
    assert "Framework :: Apache Airflow :: Provider" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    # The project has no public home yet: the metadata names none rather than a made-up one.
    assert metadata.get_all("Project-URL") is None
    assert metadata.get_all("Home-page") is None
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert b"Apache License" in archive.read(license_file)
        assert not [n for n in names if n.startswith("tests/")]
        entry_points = archive.read(
            next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        ).decode()
    assert "provider_info = airflow_provider_sparkk8s:get_provider_info" in entry_points
    assert "sparkk8s-submit = airflow_provider_sparkk8s.cli.submit:main" in entry_points
    # Every Airflow component loads it, whatever [core] lazy_discover_providers says.
    plugin = "sparkk8s_spark_ui = airflow_provider_sparkk8s.plugins.spark_ui:SparkK8sUiPlugin"
    assert f"[airflow.plugins]\n{plugin}" in entry_points


@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    """A new venv that sees only the cached bare Airflow layer, with the wheel installed."""
    bare = subprocess.run(
        [str(REPO / "tests/compat/airflow_venv.sh"), LOWEST_AIRFLOW, "--bare"],
        check=True,
        capture_output=True,
        text=True,
        timeout=1200,
    ).stdout.strip()
    venv = tmp_path_factory.mktemp("clean") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv)}))
    bare_site = sysconfig.get_path("purelib", vars={"base": bare})
    (site / "_airflow_layer.pth").write_text(f"import site; site.addsitedir({bare_site!r})\n")
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin/python")]
    subprocess.run(
        [*pip, "install", "-q", str(wheel)],
        check=True,
        timeout=600,
        capture_output=True,
    )
    return venv


def airflow_cli(venv: Path, tmp_path: Path, *args: str) -> list[dict]:
    env = {
        "AIRFLOW_HOME": str(tmp_path),
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "ERROR",
    }
    done = subprocess.run(
        [str(venv / "bin/python"), "-m", "airflow", *args, "--output", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,  # not the checkout: only the installed wheel may be found
        timeout=300,
        check=True,
    )
    # Some Airflow versions still print start-up log lines before the JSON document.
    lines = [line for line in done.stdout.splitlines() if line.startswith("[") and "{" in line]
    return json.loads(lines[-1])


def test_clean_venv_runs_the_wheel_not_the_checkout(clean_venv: Path, tmp_path: Path) -> None:
    probe = (
        "import airflow, airflow_provider_sparkk8s, importlib.util;"
        "print(airflow.__version__, airflow_provider_sparkk8s.__file__,"
        " importlib.util.find_spec('kubernetes') is None)"
    )
    done = subprocess.run(
        [str(clean_venv / "bin/python"), "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=True,
    )
    version, location, no_kubernetes = done.stdout.split()
    assert version == LOWEST_AIRFLOW
    assert location.startswith(str(clean_venv)) and not location.startswith(str(REPO))
    assert no_kubernetes == "True"  # the official client is not pulled in any more
    help_text = subprocess.run(
        [str(clean_venv / "bin/sparkk8s-submit"), "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=True,
    ).stdout
    assert "--dry-run" in help_text


def test_airflow_providers_list_shows_it(clean_venv: Path, tmp_path: Path) -> None:
    providers = {
        p["package_name"]: p for p in airflow_cli(clean_venv, tmp_path, "providers", "list")
    }
    assert providers[PACKAGE]["version"] == airflow_provider_sparkk8s.__version__
    hooks = airflow_cli(clean_venv, tmp_path, "providers", "hooks")
    ours = [h for h in hooks if h.get("connection_type") == "spark_k8s"]
    assert ours and ours[0]["class"].endswith("hooks.spark_k8s.SparkK8sHook"), ours


def test_airflow_providers_triggers_lists_ours(clean_venv: Path, tmp_path: Path) -> None:
    triggers = airflow_cli(clean_venv, tmp_path, "providers", "triggers")
    ours = [t for t in triggers if t.get("package_name") == PACKAGE]
    assert ours, triggers
    listed = {t["class"] for t in ours}
    assert {
        "airflow_provider_sparkk8s.triggers.spark_k8s",
        "airflow_provider_sparkk8s.triggers.connect_server",
    } <= listed, ours
