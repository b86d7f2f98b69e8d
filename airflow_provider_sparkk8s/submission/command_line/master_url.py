"""`spark.master` for Kubernetes: `k8s://[scheme://]host:port` to the API server's URL."""

from __future__ import annotations

import logging

from airflow_provider_sparkk8s.errors import SparkConfError

log = logging.getLogger(__name__)

_ACCEPTED = "k8s://[https://]<host>:<port>"


def normalize_master_url(master: str) -> str:
    """`spark.master` `k8s://...` -> API server URL (Spark's checkAndGetK8sMasterUrl).

    `k8s://host:port` without a scheme means https; http is kept with a warning.
    """
    if not master.startswith("k8s://"):
        raise SparkConfError("spark.master", master, _ACCEPTED)
    rest = master[len("k8s://") :]
    if "://" not in rest:
        log.info("spark.master %s has no scheme; using https://%s", master, rest)
        rest = f"https://{rest}"
    scheme = rest.split("://", 1)[0].lower()
    if scheme == "http":
        log.warning("spark.master %s uses plain http: requests are not encrypted", master)
    elif scheme != "https":
        raise SparkConfError("spark.master", master, "a k8s:// URL with scheme https or http")
    if not rest.split("://", 1)[1].strip("/"):
        raise SparkConfError("spark.master", master, _ACCEPTED)
    return rest.rstrip("/")
