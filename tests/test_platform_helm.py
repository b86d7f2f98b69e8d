"""The Helm snippet of docs/platform.md (the README's before issue 46): valid YAML, one
identity per component, and a RoleBinding to the Role docs/rbac.yaml defines for those
identities."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def snippets() -> list[dict]:
    guide = (REPO / "docs" / "platform.md").read_text()
    section = guide.split("## Helm (the official Airflow chart)", 1)[1].split("\n## ", 1)[0]
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)]


def test_values_give_each_component_its_own_service_account() -> None:
    values, binding = snippets()
    accounts = {
        component: values[component]["serviceAccount"]["name"]
        for component in ("workers", "scheduler", "triggerer", "apiServer")
    }
    assert len(set(accounts.values())) == 4
    subjects = {s["name"] for s in binding["subjects"] if s["kind"] == "ServiceAccount"}
    assert subjects == set(accounts.values())
    assert "spark_k8s" in values["env"][0]["value"]


def test_the_binding_names_the_documented_role() -> None:
    _, binding = snippets()
    roles = {
        doc["metadata"]["name"]
        for doc in yaml.safe_load_all((REPO / "docs" / "rbac.yaml").read_text())
        if doc and doc["kind"] == "Role"
    }
    assert binding["kind"] == "RoleBinding" and binding["roleRef"]["name"] in roles
