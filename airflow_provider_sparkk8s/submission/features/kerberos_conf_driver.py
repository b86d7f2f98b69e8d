"""KerberosConfDriverFeatureStep: krb5.conf, keytab and delegation tokens for the driver.

Three parts, as in Spark:

* krb5.conf: a local file (`spark.kubernetes.kerberos.krb5.path`, shipped in a ConfigMap
  `<prefix>-krb5-file`) or an existing ConfigMap (`...krb5.configMapName`), mounted at
  `/etc/krb5.conf`.
* credentials, first match wins: a keytab that is not a `local:` URI is shipped in a Secret
  `<prefix>-kerberos-keytab`; else an existing delegation-token Secret
  (`spark.kubernetes.kerberos.tokenSecret.name` + `.itemKey`) is mounted; else Spark asks the
  submitter's Hadoop login for delegation tokens.

That last case needs a live Kerberos login and a round trip to the Hadoop services, which
this provider does not do. When the Hadoop configuration turns Kerberos on and neither a
keytab nor a token Secret is given, the step refuses the conf instead of silently sending a
driver without tokens. With Kerberos off, Spark's token managers obtain nothing and create
nothing, which is what this step reproduces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.conf_values import is_dns1123_subdomain
from airflow_provider_sparkk8s.submission.features._mounts import (
    add_volumes_and_mounts,
    immutable_data_object,
)
from airflow_provider_sparkk8s.submission.java_text import java_file_name
from airflow_provider_sparkk8s.submission.local_files import (
    check_config_map_data,
    directory_files,
    file_bytes,
    file_text,
)
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import TypeGuard

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.KerberosConfDriverFeatureStep"
SINCE = (3, 0, 0)

PRINCIPAL_KEY = "spark.kerberos.principal"
KEYTAB_KEY = "spark.kerberos.keytab"
# SparkConf still reads the 2.x names when the new ones are absent.
PRINCIPAL_ALTERNATE = "spark.yarn.principal"
KEYTAB_ALTERNATE = "spark.yarn.keytab"
KRB5_PATH_KEY = "spark.kubernetes.kerberos.krb5.path"
KRB5_CONFIG_MAP_KEY = "spark.kubernetes.kerberos.krb5.configMapName"
TOKEN_SECRET_NAME_KEY = "spark.kubernetes.kerberos.tokenSecret.name"
TOKEN_SECRET_ITEM_KEY = "spark.kubernetes.kerberos.tokenSecret.itemKey"

KRB5_VOLUME = "krb5-file"
KRB5_MOUNT_PATH = "/etc/krb5.conf"
KRB5_SUB_PATH = "krb5.conf"
KEYTAB_VOLUME = "kerberos-keytab"
KEYTAB_MOUNT_PATH = "/mnt/secrets/kerberos-keytab"
TOKEN_VOLUME = "hadoop-secret"
TOKEN_MOUNT_PATH = "/mnt/secrets/hadoop-credentials"
ENV_TOKEN_FILE = "HADOOP_TOKEN_FILE_LOCATION"

SECURITY_KEY = "hadoop.security.authentication"


def _get_with_alternate(conf: DriverConf, key: str, alternate: str) -> str | None:
    value = conf.get(key)
    return value if value is not None else conf.get(alternate)


def _require_both_or_neither(
    first_key: str, first: str | None, second_key: str, second: str | None
) -> None:
    if (first is None) != (second is None):
        missing, given_key, given = (
            (second_key, first_key, first) if second is None else (first_key, second_key, second)
        )
        raise SparkConfError(given_key, given, f"{missing} to be set as well")


def _core_site_authentication(conf: DriverConf) -> str | None:
    """`hadoop.security.authentication` from core-site.xml in the submitter's HADOOP_CONF_DIR."""
    conf_dir = conf.local.environment.get("HADOOP_CONF_DIR")
    if conf_dir is None:
        return None
    for name, content in directory_files(conf, "HADOOP_CONF_DIR", conf_dir):
        if name != "core-site.xml":
            continue
        from xml.etree import ElementTree  # here: few submissions ship a Hadoop conf

        try:
            root = ElementTree.fromstring(content)
        except ElementTree.ParseError as error:
            raise SparkConfError(
                "HADOOP_CONF_DIR",
                f"{conf_dir}/core-site.xml",
                "a well-formed XML file",
                str(error),
            ) from None
        for prop in root.iter("property"):
            if (prop.findtext("name") or "").strip() == SECURITY_KEY:
                return (prop.findtext("value") or "").strip()
    return None


def _hadoop_security_enabled(conf: DriverConf) -> bool:
    value = conf.get("spark.hadoop." + SECURITY_KEY)
    if value is None:
        value = _core_site_authentication(conf)
    return (value or "simple").strip().lower() == "kerberos"


def _krb5(conf: DriverConf, prefix: str) -> tuple[KubeObject | None, KubeObject | None]:
    """(pod volume, post-pod ConfigMap) for krb5.conf."""
    krb5_path = conf.get(KRB5_PATH_KEY)
    krb5_map = conf.get(KRB5_CONFIG_MAP_KEY)
    if krb5_map is not None:
        if not is_dns1123_subdomain(krb5_map):
            raise SparkConfError(KRB5_CONFIG_MAP_KEY, krb5_map, "the name of an existing ConfigMap")
        return {"name": KRB5_VOLUME, "configMap": {"name": krb5_map}}, None
    if krb5_path is None:
        return None, None
    file_name = java_file_name(krb5_path)
    content = file_bytes(conf, KRB5_PATH_KEY, krb5_path)
    data = {file_name: file_text(conf, KRB5_PATH_KEY, krb5_path, content)}
    check_config_map_data(KRB5_PATH_KEY, krb5_path, data)
    map_name = f"{prefix}-krb5-file"
    volume = {
        "name": KRB5_VOLUME,
        "configMap": {"name": map_name, "items": [{"key": file_name, "path": file_name}]},
    }
    return volume, immutable_data_object("ConfigMap", map_name, data)


@dataclass
class _DriverAdditions:
    """What the step adds to the driver, gathered part by part before the pod is built."""

    volumes: list[KubeObject] = field(default_factory=list)
    mounts: list[KubeObject] = field(default_factory=list)
    env: list[KubeObject] = field(default_factory=list)
    resources: list[KubeObject] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    principal = _get_with_alternate(conf, PRINCIPAL_KEY, PRINCIPAL_ALTERNATE)
    keytab = _get_with_alternate(conf, KEYTAB_KEY, KEYTAB_ALTERNATE)
    token_secret = conf.get(TOKEN_SECRET_NAME_KEY)
    token_item_key = conf.get(TOKEN_SECRET_ITEM_KEY)
    _check_pairs(conf, principal, keytab, token_secret, token_item_key)

    needs_prefix = conf.get(KRB5_PATH_KEY) is not None or _ships_keytab(keytab)
    prefix = conf.resource_prefix if needs_prefix else ""
    added = _DriverAdditions()
    _add_krb5(conf, prefix, added)
    if _ships_keytab(keytab):
        _add_keytab_secret(conf, keytab, prefix, added)
    elif token_secret is not None:
        assert token_item_key is not None
        _add_token_secret(token_secret, token_item_key, added)
    elif keytab is None and _hadoop_security_enabled(conf):
        raise SparkConfError(
            SECURITY_KEY,
            "kerberos",
            f"{KEYTAB_KEY} with {PRINCIPAL_KEY}, or {TOKEN_SECRET_NAME_KEY} with "
            f"{TOKEN_SECRET_ITEM_KEY}",
            "Spark would obtain delegation tokens from the submitter's live Kerberos login; "
            "this provider does not log in to Kerberos",
        )

    return StepResult(
        pod=add_volumes_and_mounts(pod, added.volumes, added.mounts, added.env),
        system_properties=added.properties,
        resources=added.resources,
    )


def _check_pairs(
    conf: DriverConf,
    principal: str | None,
    keytab: str | None,
    token_secret: str | None,
    token_item_key: str | None,
) -> None:
    """Spark's constructor checks, in its order: one krb5 source, keys that come in pairs."""
    if conf.get(KRB5_PATH_KEY) is not None and conf.get(KRB5_CONFIG_MAP_KEY) is not None:
        raise SparkConfError(
            KRB5_CONFIG_MAP_KEY,
            conf.get(KRB5_CONFIG_MAP_KEY),
            f"either {KRB5_PATH_KEY} or {KRB5_CONFIG_MAP_KEY}, not both",
        )
    _require_both_or_neither(KEYTAB_KEY, keytab, PRINCIPAL_KEY, principal)
    _require_both_or_neither(
        TOKEN_SECRET_NAME_KEY, token_secret, TOKEN_SECRET_ITEM_KEY, token_item_key
    )


def _add_krb5(conf: DriverConf, prefix: str, added: _DriverAdditions) -> None:
    """krb5.conf mounted at /etc/krb5.conf, with the ConfigMap that ships a local one."""
    krb5_volume, krb5_map = _krb5(conf, prefix)
    if krb5_volume is not None:
        added.volumes.append(krb5_volume)
        added.mounts.append(
            {"name": KRB5_VOLUME, "mountPath": KRB5_MOUNT_PATH, "subPath": KRB5_SUB_PATH}
        )
    if krb5_map is not None:
        added.resources.append(krb5_map)


def _ships_keytab(keytab: str | None) -> TypeGuard[str]:
    """A keytab travels in a Secret unless it is already in the image (`local:`)."""
    return keytab is not None and not keytab.startswith("local:")


def _add_keytab_secret(conf: DriverConf, keytab: str, prefix: str, added: _DriverAdditions) -> None:
    """The submitter's keytab in a Secret `<prefix>-kerberos-keytab`, mounted; the driver
    reads it from the mount."""
    keytab_name = java_file_name(keytab)
    content = file_bytes(conf, KEYTAB_KEY, keytab)
    secret_name = f"{prefix}-kerberos-keytab"
    check_config_map_data(KEYTAB_KEY, keytab, {keytab_name: content})
    added.volumes.append({"name": KEYTAB_VOLUME, "secret": {"secretName": secret_name}})
    added.mounts.append({"name": KEYTAB_VOLUME, "mountPath": KEYTAB_MOUNT_PATH})
    added.properties[KEYTAB_KEY] = f"{KEYTAB_MOUNT_PATH}/{keytab_name}"
    import base64  # here: only a shipped keytab needs it (start-up time)

    keytab_data = {keytab_name: base64.b64encode(content).decode("ascii")}
    added.resources.append(immutable_data_object("Secret", secret_name, keytab_data))


def _add_token_secret(token_secret: str, token_item_key: str, added: _DriverAdditions) -> None:
    """An existing delegation-token Secret, mounted and named by HADOOP_TOKEN_FILE_LOCATION."""
    if not is_dns1123_subdomain(token_secret):
        raise SparkConfError(TOKEN_SECRET_NAME_KEY, token_secret, "the name of an existing Secret")
    added.volumes.append({"name": TOKEN_VOLUME, "secret": {"secretName": token_secret}})
    added.mounts.append({"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT_PATH})
    added.env.append({"name": ENV_TOKEN_FILE, "value": f"{TOKEN_MOUNT_PATH}/{token_item_key}"})


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
