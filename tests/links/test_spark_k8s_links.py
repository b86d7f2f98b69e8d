"""Link URL templates: filled from plain values, connection extras before config."""

from __future__ import annotations

import json
import os
import types

import jsonschema

from airflow_provider_sparkk8s import get_provider_info
from airflow_provider_sparkk8s.links.spark_k8s import (
    DRIVER_POD_TEMPLATE_KEY,
    SPARK_UI_TEMPLATE_KEY,
    DriverPodLink,
    SparkUiLink,
    configured_templates,
    fill_url_template,
    link_templates,
    link_urls,
)

VALUES = {
    "namespace": "team-a",
    "driver_pod": "spark-pi-1-driver",
    "application_id": "spark-0123",
    "submission_id": "team-a:spark-pi-1-driver",
    "conn_id": "spark_k8s_default",
}


def test_placeholders_are_replaced_and_url_quoted():
    url = fill_url_template("https://ui/{namespace}/{driver_pod}?id={submission_id}", VALUES)
    assert url == "https://ui/team-a/spark-pi-1-driver?id=team-a%3Aspark-pi-1-driver"


def test_templates_cannot_reach_attributes_of_the_values():
    # str.format would evaluate this; plain substitution leaves it as text.
    url = fill_url_template("https://ui/{namespace.__class__}/{application_id}", VALUES)
    assert url == "https://ui/{namespace.__class__}/spark-0123"


def test_connection_extras_win_over_the_config_and_blank_means_unset():
    templates = link_templates(
        {SPARK_UI_TEMPLATE_KEY: "https://conn/{driver_pod}", DRIVER_POD_TEMPLATE_KEY: "  "},
        {
            SPARK_UI_TEMPLATE_KEY: "https://cfg/{driver_pod}",
            DRIVER_POD_TEMPLATE_KEY: "https://d/{namespace}",
        },
    )
    assert templates == {
        SPARK_UI_TEMPLATE_KEY: "https://conn/{driver_pod}",
        DRIVER_POD_TEMPLATE_KEY: "https://d/{namespace}",
    }


def test_no_template_means_no_link():
    assert link_urls(link_templates({}, {}), VALUES) == {}
    urls = link_urls({DRIVER_POD_TEMPLATE_KEY: "https://d/{namespace}/{driver_pod}"}, VALUES)
    assert urls == {DriverPodLink().xcom_key: "https://d/team-a/spark-pi-1-driver"}
    assert SparkUiLink().xcom_key not in urls


def test_config_templates_are_read_from_the_sparkk8s_section(monkeypatch):
    monkeypatch.setenv("AIRFLOW__SPARKK8S__SPARK_UI_URL_TEMPLATE", "https://ui/{driver_pod}")
    templates = configured_templates()
    assert templates[SPARK_UI_TEMPLATE_KEY] == "https://ui/{driver_pod}"
    assert not templates[DRIVER_POD_TEMPLATE_KEY]


def test_provider_info_declares_the_links_and_the_config_section():
    import airflow

    info = get_provider_info()
    schema_path = os.path.join(os.path.dirname(airflow.__file__), "provider_info.schema.json")
    with open(schema_path) as schema:
        jsonschema.validate(info, json.load(schema))
    assert "airflow_provider_sparkk8s.links.spark_k8s.SparkUiLink" in info["extra-links"]
    assert "airflow_provider_sparkk8s.links.spark_k8s.DriverPodLink" in info["extra-links"]
    options = info["config"]["sparkk8s"]["options"]
    # The links' templates, the platform policy (docs/policy.md), the event log's defaults.
    assert set(options) == {
        SPARK_UI_TEMPLATE_KEY,
        DRIVER_POD_TEMPLATE_KEY,
        "policy",
        "event_log_dir",
        "event_log_rolling_max_file_size",
        "history_server_url",
    }


def test_in_the_worker_the_link_comes_from_the_operator_without_an_xcom_read(monkeypatch):
    from airflow_provider_sparkk8s.links import spark_k8s as links_module

    def no_read(ti_key, key):
        raise AssertionError(f"XCom {key} read")

    monkeypatch.setattr(links_module, "xcom_value", no_read)

    ran = types.SimpleNamespace(link_urls={SparkUiLink().xcom_key: "https://ui/d"})
    assert SparkUiLink().get_link(ran, ti_key=None) == "https://ui/d"  # type: ignore[arg-type]
    monkeypatch.setattr(links_module, "xcom_value", lambda ti_key, key: "https://from/xcom")
    assert DriverPodLink().get_link(object(), ti_key=None) == "https://from/xcom"  # type: ignore[arg-type]
