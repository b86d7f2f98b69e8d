"""Whatever the conf, these steps either build valid-looking objects or raise SparkConfError."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import pod_template
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.features import (
    env_secrets,
    hadoop_conf_driver,
    kerberos_conf_driver,
    local_dirs,
    mount_secrets,
    mount_volumes,
    pod_template_config_map,
)
from tests.support.driver_conf import make_conf

STEPS = (
    mount_secrets,
    env_secrets,
    mount_volumes,
    hadoop_conf_driver,
    kerberos_conf_driver,
    pod_template_config_map,
    local_dirs,
)
VOLUME_PREFIXES = ("spark.kubernetes.driver.volumes.", "spark.kubernetes.executor.volumes.")
VOLUME_TYPES = ("hostPath", "emptyDir", "nfs", "persistentVolumeClaim", "configMap", "")
VOLUME_OPTIONS = (
    "mount.path",
    "mount.readOnly",
    "mount.subPath",
    "mount.subPathExpr",
    "options.path",
    "options.type",
    "options.claimName",
    "options.storageClass",
    "options.sizeLimit",
    "options.medium",
    "options.server",
    "label.team",
    "annotation.note",
)
SCALAR_KEYS = (
    "spark.kubernetes.hadoop.configMapName",
    "spark.kubernetes.kerberos.krb5.path",
    "spark.kubernetes.kerberos.krb5.configMapName",
    "spark.kerberos.keytab",
    "spark.kerberos.principal",
    "spark.kubernetes.kerberos.tokenSecret.name",
    "spark.kubernetes.kerberos.tokenSecret.itemKey",
    "spark.kubernetes.executor.podTemplateFile",
    "spark.kubernetes.driver.podTemplateFile",
    "spark.kubernetes.driver.podTemplateContainerName",
    "spark.kubernetes.local.dirs.tmpfs",
    "spark.local.dir",
    "spark.kubernetes.legacy.useReadWriteOnceAccessMode",
    "spark.kubernetes.configMap.maxSize",
    "spark.hadoop.hadoop.security.authentication",
)
PATHS = ("/f", "/etc/krb5.conf", "/k.keytab", "/tpl.yaml", "local:///k.keytab")
values = st.one_of(
    st.sampled_from(
        (
            "",
            "/data",
            "true",
            "TRUE",
            "yes",
            "500",
            "10Gi",
            "OnDemand",
            "a:b",
            "kerberos",
            "Memory",
            "Directory",
            "x,,y",
            ",",
            "1048577",
            *PATHS,
        )
    ),
    st.text(alphabet="aZ09-_.:/,$ ()é", max_size=12),
)
names = st.sampled_from(("data", "Data", "a.b", "x" * 64, "spark-local-dir-1", "", "n"))
volume_keys = st.builds(
    lambda prefix, kind, name, option: f"{prefix}{kind}.{name}.{option}",
    st.sampled_from(VOLUME_PREFIXES),
    st.sampled_from(VOLUME_TYPES),
    names,
    st.sampled_from(VOLUME_OPTIONS),
)
family_keys = st.builds(
    lambda prefix, name: prefix + name,
    st.sampled_from(("spark.kubernetes.driver.secrets.", "spark.kubernetes.driver.secretKeyRef.")),
    names,
)
keys = st.one_of(volume_keys, family_keys, st.sampled_from(SCALAR_KEYS))
file_contents = st.sampled_from(
    (
        b"",
        b"kind: Pod\n",
        b"spec: {containers: [{name: c}]}\n",
        b"[1, 2",
        b"\xff\xfe",
        b"<configuration/>",
        b"- a\n",
    )
)
local_inputs = st.builds(
    lambda env, files: LocalInputs(
        environment=env,
        files={**files, "/h/core-site.xml": b"<configuration/>"},
        directories={"/h": ("core-site.xml",)},
    ),
    st.dictionaries(
        st.sampled_from(("HADOOP_CONF_DIR", "SPARK_LOCAL_DIRS")),
        st.sampled_from(("/h", "", "/a,/b", "/missing")),
        max_size=2,
    ),
    st.dictionaries(st.sampled_from(PATHS), file_contents, max_size=3),
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.dictionaries(keys, values, max_size=8),
    version=st.sampled_from(("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")),
    local=local_inputs,
)
def test_only_spark_conf_errors_escape_and_results_are_plain_json(entries, version, local):
    conf = make_conf(entries, version=version, local=local)
    try:
        pod = pod_template.initial_driver_pod(conf)
    except SparkConfError:
        return
    for step in STEPS:
        try:
            result = step.step(conf, pod)
        except SparkConfError:
            continue
        json.dumps(
            [
                result.pod.pod,
                result.pod.container,
                list(result.resources),
                dict(result.system_properties),
            ]
        )
        mounts = [m["mountPath"] for m in result.pod.container.get("volumeMounts", [])]
        assert len(mounts) == len(set(mounts)), mounts
        pod = result.pod
