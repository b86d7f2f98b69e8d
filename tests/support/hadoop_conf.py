"""The submitter's Hadoop configuration directory on plain data, for the Hadoop and Kerberos
feature-step tests."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_provider_sparkk8s.submission.conf import LocalInputs

HADOOP_DIR = "/etc/hadoop/conf"
CORE_SITE = b"<configuration><property><name>fs.defaultFS</name><value>hdfs://nn:8020</value></property></configuration>"
KERBEROS_SITE = (
    b"<configuration><property><name>hadoop.security.authentication</name>"
    b"<value>kerberos</value></property></configuration>"
)


def hadoop_local(
    core_site: bytes = CORE_SITE, extra_files: Mapping[str, bytes] | None = None
) -> LocalInputs:
    files = {
        f"{HADOOP_DIR}/core-site.xml": core_site,
        f"{HADOOP_DIR}/hdfs-site.xml": "<configuration/>\u00e9".encode(),
    }
    files.update(extra_files or {})
    return LocalInputs(
        environment={"HADOOP_CONF_DIR": HADOOP_DIR},
        files=files,
        directories={HADOOP_DIR: ("core-site.xml", "hdfs-site.xml")},
    )
