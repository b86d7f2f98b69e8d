"""`spark.master` k8s:// URLs, as Spark's checkAndGetK8sMasterUrl reads them."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.command_line.master_url import normalize_master_url


@pytest.mark.parametrize(
    ("master", "url"),
    [
        ("k8s://10.0.0.1:6443", "https://10.0.0.1:6443"),
        ("k8s://https://api.example:443/", "https://api.example:443"),
        ("k8s://http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_master_url_normalisation(master: str, url: str) -> None:
    assert normalize_master_url(master) == url


@pytest.mark.parametrize("master", ["local[2]", "k8s://ftp://h:1", "spark://h:7077", "k8s://"])
def test_master_url_rejected(master: str) -> None:
    with pytest.raises(SparkConfError) as caught:
        normalize_master_url(master)
    assert caught.value.key == "spark.master"


def test_master_http_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    normalize_master_url("k8s://http://h:1")
    assert any(
        r.levelno == logging.WARNING and "plain http" in r.getMessage() for r in caplog.records
    )
