"""docker-compose.yaml: the structure of Airflow's official layout, with this provider.

No Docker engine runs in CI, so the file is checked as data; `docker compose config`
validates it too where a compose client is installed (it parses offline).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPO / "docker-compose.yaml"
AIRFLOW_SERVICES = {
    "airflow-init": None,
    "airflow-apiserver": "api-server",
    "airflow-scheduler": "scheduler",
    "airflow-dag-processor": "dag-processor",
    "airflow-triggerer": "triggerer",
}
LONG_RUNNING = [
    "postgres",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
]
# Components that talk to Kubernetes: task workers (LocalExecutor: the scheduler), the
# triggerer, and the api-server, which runs the connection's Test button.
KUBE_CLIENTS = ["airflow-scheduler", "airflow-triggerer", "airflow-apiserver"]
SHARED_KEYS = [
    "AIRFLOW__CORE__EXECUTOR",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
    "AIRFLOW__CORE__FERNET_KEY",
    "AIRFLOW__API_AUTH__JWT_SECRET",
    "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
    "AIRFLOW_CONN_SPARK_K8S_DEFAULT",
]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    # PyYAML resolves the anchors and `<<` merge keys the way compose does.
    return dict(yaml.safe_load(COMPOSE_FILE.read_text()))


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> host path of the service's bind mounts."""
    result = {}
    for volume in service.get("volumes", []):
        # Colons inside ${VAR:-default} are not separators.
        host, container = re.split(r":(?![^{]*\})", volume)[:2]
        result[container] = host
    return result


def test_services_follow_the_official_layout(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"postgres", *AIRFLOW_SERVICES}
    for name, command in AIRFLOW_SERVICES.items():
        if command:
            assert services[name]["command"] == command
    # LocalExecutor: no broker and no Celery worker.
    assert "redis" not in services and "airflow-worker" not in services
    assert "postgres-db-volume" in compose["volumes"]


def test_every_airflow_service_shares_the_common_environment(compose: dict[str, Any]) -> None:
    services = compose["services"]
    common = compose["x-airflow-common"]["environment"]
    assert common["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    for name in AIRFLOW_SERVICES:
        env = services[name]["environment"]
        for key in SHARED_KEYS:
            assert env[key] == common[key], (name, key)
        assert services[name]["image"] == compose["x-airflow-common"]["image"]


def test_database_and_execution_api_point_at_their_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    env = compose["x-airflow-common"]["environment"]
    postgres = services["postgres"]["environment"]
    url = env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    match = re.fullmatch(r"postgresql\+psycopg2://(\w+):(\w+)@postgres/(\w+)", url)
    assert match, url
    assert match.groups() == (
        postgres["POSTGRES_USER"],
        postgres["POSTGRES_PASSWORD"],
        postgres["POSTGRES_DB"],
    )
    execution_api = env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"]
    assert execution_api == "http://airflow-apiserver:8080/execution/"
    # Published on the host's loopback only.
    assert services["airflow-apiserver"]["ports"] == ["127.0.0.1:8080:8080"]


def test_provider_is_built_from_the_repository(compose: dict[str, Any]) -> None:
    build = compose["x-airflow-common"]["build"]
    assert (REPO / build["context"]).resolve() == REPO
    dockerfile = (REPO / build["dockerfile"]).read_text()
    assert re.search(r"^FROM apache/airflow:\$\{AIRFLOW_VERSION\}$", dockerfile, re.MULTILINE)
    assert "COPY --chown=airflow:0 airflow_provider_sparkk8s " in dockerfile
    assert re.search(r"^RUN pip install .*/opt/sparkk8s$", dockerfile, re.MULTILINE)
    # The build context lets exactly what the Dockerfile copies through.
    copied = {
        source
        for line in re.findall(r"^COPY --chown=\S+ (.+) \S+$", dockerfile, re.MULTILINE)
        for source in line.split()
    }
    ignored = (REPO / ".dockerignore").read_text().split()
    after_all = ignored[ignored.index("*") + 1 :]
    allowed = {entry[1:].rstrip("/") for entry in after_all if entry.startswith("!")}
    assert {"pyproject.toml", "README.md", "LICENSE", "airflow_provider_sparkk8s"} <= copied
    assert allowed == copied


def test_the_docs_sections_the_compose_file_points_to_exist() -> None:
    guide_headings = {
        line.lstrip("#").strip()
        for line in (REPO / "docs" / "platform.md").read_text().splitlines()
        if line.startswith("#")
    }
    references = re.findall(r'docs/platform\.md,[\s#]*"([^"]+)"', COMPOSE_FILE.read_text())
    assert references, "the compose file names the docs section it relies on"
    assert set(references) <= guide_headings


def test_dags_and_kubeconfig_are_mounted(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in AIRFLOW_SERVICES:
        assert mounts(services[name]).get("/opt/airflow/dags") == "./dags", name
    common_env = compose["x-airflow-common"]["environment"]
    connection = json.loads(common_env["AIRFLOW_CONN_SPARK_K8S_DEFAULT"])
    assert connection["conn_type"] == "spark_k8s"
    kubeconfig = connection["extra"]["kube_config_path"]
    for name in KUBE_CLIENTS:
        assert kubeconfig in mounts(services[name]), f"{name} lacks the kubeconfig mount"
        assert services[name]["volumes"][-1].endswith(":ro")
    # The logs the api-server shows are the ones the scheduler's workers write.
    logs = {mounts(services[name]).get("/opt/airflow/logs") for name in KUBE_CLIENTS}
    assert len(logs) == 1 and None not in logs


def test_connection_variable_is_one_airflow_accepts(compose: dict[str, Any]) -> None:
    from airflow.models.connection import Connection

    value = compose["x-airflow-common"]["environment"]["AIRFLOW_CONN_SPARK_K8S_DEFAULT"]
    connection = Connection.from_json(value, conn_id="spark_k8s_default")
    assert connection.conn_type == "spark_k8s"
    assert connection.extra_dejson["kube_config_path"] == "/opt/airflow/kube/config"


def test_long_running_services_have_healthchecks_and_wait_for_init(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    for name in LONG_RUNNING:
        check = services[name]["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL") and check["retries"] >= 3, name
    for name in AIRFLOW_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["postgres"] == {"condition": "service_healthy"}, name
        if name != "airflow-init":
            assert depends["airflow-init"] == {"condition": "service_completed_successfully"}
    init = services["airflow-init"]["environment"]
    assert init["_AIRFLOW_DB_MIGRATE"] == "true"
    assert init["_AIRFLOW_WWW_USER_CREATE"] == "true"


def compose_command() -> list[str] | None:
    """A compose client that can parse the file offline, if this machine has one."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_docker_compose_config_accepts_the_file(tmp_path: Path) -> None:
    command = compose_command()
    if command is None:
        pytest.skip("no docker compose client on this machine (the structure tests still ran)")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    done = subprocess.run(
        [*command, "-f", str(COMPOSE_FILE), "config", "--quiet"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "SPARKK8S_KUBECONFIG": str(kubeconfig)},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
