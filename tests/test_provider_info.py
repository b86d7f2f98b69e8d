"""The provider's metadata as Airflow reads it: every module and class it names exists, the
connection is declared once with its type and form, and every config option is documented
with a string default."""

from __future__ import annotations

import importlib
from typing import Any

from airflow_provider_sparkk8s import __version__, get_provider_info
from airflow_provider_sparkk8s.provider_info import (
    CONN_TYPE,
    HOOK_NAME,
    SPARK_K8S_CONNECTION,
    provider_info,
)


def resolve(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_the_entry_point_answers_the_same_metadata_at_the_packages_version() -> None:
    info = get_provider_info()
    assert info == provider_info()
    assert info["package-name"] == "airflow-provider-sparkk8s"
    assert info["versions"] == [__version__]


def test_every_module_named_imports_and_every_class_named_exists() -> None:
    info = provider_info()
    for section in ("hooks", "operators", "sensors", "triggers"):
        for entry in info[section]:
            assert entry["integration-name"] == "Spark on Kubernetes"
            for module in entry["python-modules"]:
                importlib.import_module(module)
    for link in info["extra-links"]:
        assert isinstance(resolve(link), type)
    hook = resolve(SPARK_K8S_CONNECTION["hook-class-name"])
    assert hook.conn_type == CONN_TYPE == "spark_k8s"
    assert hook.hook_name == HOOK_NAME


def test_the_connection_form_declares_secrets_as_passwords_and_flags_as_booleans() -> None:
    (connection,) = provider_info()["connection-types"]
    assert connection is SPARK_K8S_CONNECTION
    fields = connection["conn-fields"]
    for name in ("token", "kube_config_secret"):
        assert fields[name]["schema"]["format"] == "password"
    assert fields["in_cluster"]["schema"] == {"type": ["boolean", "null"], "default": False}
    assert all(field["label"] and field["description"] for field in fields.values())


def test_every_config_option_is_documented_with_an_empty_string_default() -> None:
    options = provider_info()["config"]["sparkk8s"]["options"]
    assert {"policy", "spark_ui_url_template", "history_server_url"} <= set(options)
    for option in options.values():
        assert option["type"] == "string" and option["default"] == ""
        assert option["description"] and option["version_added"]
