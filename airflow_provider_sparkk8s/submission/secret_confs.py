"""Secret confs out of the driver's ConfigMap (ours, opt-in; spark-submit has no such thing).

spark-submit writes every conf entry into the `spark-drv-...-conf-map` in clear, so anyone
with `get configmaps` in the namespace reads `spark.hadoop.fs.s3a.secret.key` there. With
`spark.kubernetes.sparkk8s.secretConfs.enabled=true`, each secret-looking entry (its key
matches `spark.redaction.regex`) that the driver can read back through a reference goes into a
Secret owned by the driver pod instead; the driver gets it as an env var (`secretKeyRef`), and
spark.properties holds a reference that the reader of that key expands:

- `spark.hadoop.*`: `${env.VAR}`, which Hadoop's `Configuration` expands on `get` and
  `getPassword` (checked on Spark 3.5.9 and 4.3.0 with their Hadoop 3.3.4 and 3.4.x);
  executors get the same env from the Secret (`spark.kubernetes.executor.secretKeyRef.VAR`).
- `spark.ssl[.<ns>].{keyPassword,keyStorePassword,privateKeyPassword,trustStorePassword}`:
  `${env:VAR}`, which Spark's `SSLOptions` expands (it reads them with `getWithSubstitution`;
  privateKeyPassword exists from 4.0); executors as above.
- `spark.kubernetes.driverEnv.NAME`: the driver's env var NAME itself comes from the Secret
  (it was a plain value in the pod spec too); spark.properties holds `${env:NAME}`.
- `spark.executorEnv.NAME`: becomes `spark.kubernetes.executor.secretKeyRef.NAME`, so the
  executors' env comes from the Secret (Spark's EnvSecretsFeatureStep on the driver).

Everything else stays in the ConfigMap, named in `in_clear`: Spark reads most keys as plain
strings (`SparkConf.get(key)`, no substitution), e.g. `spark.authenticate.secret`
(SecurityManager's `getOption`) or third-party keys such as OpenLineage's API key, so a
reference would reach the reader unexpanded. Pure: the Secret is one more pre-resource.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.conf_values import ConfLike
from airflow_provider_sparkk8s.submission.redaction_regex import redaction_pattern
from airflow_provider_sparkk8s.submission.spec import KubeObject

ENABLED_KEY = "spark.kubernetes.sparkk8s.secretConfs.enabled"
DRIVER_ENV = "spark.kubernetes.driverEnv."
EXECUTOR_ENV = "spark.executorEnv."
EXECUTOR_KEY_REF = "spark.kubernetes.executor.secretKeyRef."
ENV_PREFIX = "SPARKK8S_CONF_"
# Pattern strings, compiled by re on first use: a plain submission never needs them.
_SSL_PASSWORDS = (
    r"spark\.ssl(\.[^.]+)?\.(keyPassword|keyStorePassword|privateKeyPassword|trustStorePassword)"
)
_SECRET_DATA_KEY = r"[-._a-zA-Z0-9]+"
_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# Keys the pattern matches whose values are not secrets: names of Secrets, files, sizes,
# the pattern itself, this option.
_NOT_SECRETS = (
    r"spark\.kubernetes\.(driver|executor)\.(secretKeyRef|secrets)\..*"
    r"|spark\.kubernetes\.kerberos\.tokenSecret\.(name|itemKey)"
    r"|spark\.redaction\.(string\.)?regex|spark\.authenticate\.secretBitLength"
    r"|.*(File|\.file|Path|\.path)"
    r"|" + re.escape(ENABLED_KEY)
)
# What Spark writes for a token it redacted itself (DriverKubernetesCredentialsFeatureStep).
_ALREADY_REDACTED = "<present_but_redacted>"


@record
class SecretConfs:
    """What the driver's conf becomes with the option on (or, off, what stays in clear)."""

    properties: dict[str, str]  # spark.properties as the ConfigMap holds it
    secret: KubeObject | None = None  # owned by the driver pod; None when nothing moved
    driver_env: tuple[KubeObject, ...] = ()  # Spark container env, from the Secret
    moved: tuple[str, ...] = ()  # keys whose values now live in the Secret only
    in_clear: tuple[str, ...] = ()  # secret-looking keys left in the ConfigMap


def enabled(conf: ConfLike) -> bool:
    return cv.get_bool(conf, ENABLED_KEY, False)


def secret_name(conf: DriverConf) -> str:
    return conf.resource_prefix + "-secret-confs"


def secret_looking(key: str, value: str, pattern: re.Pattern[str]) -> bool:
    """Spark's redaction rule, on the key: a value that merely mentions a token stays."""
    return (
        bool(pattern.search(key))
        and not re.fullmatch(_NOT_SECRETS, key)
        and value != _ALREADY_REDACTED
    )


def keys_in_clear(conf: DriverConf, properties: Mapping[str, str]) -> tuple[str, ...]:
    """The secret-looking keys of `properties`, sorted (what the option-off warning names)."""
    pattern = redaction_pattern(conf.spark_conf)
    return tuple(sorted(k for k, v in properties.items() if secret_looking(k, v, pattern)))


def _env_name(key: str, taken: set[str]) -> str:
    base = ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", key).upper()
    name, number = base, 2
    while name in taken:  # `a.b` and `a_b` would share a name
        name, number = f"{base}_{number}", number + 1
    taken.add(name)
    return name


def _from_secret(env_name: str, secret: str, key: str) -> KubeObject:
    return {"name": env_name, "valueFrom": {"secretKeyRef": {"key": key, "name": secret}}}


def plan_secret_confs(conf: DriverConf, properties: Mapping[str, str]) -> SecretConfs:
    """With the option on, the secret-looking entries of `properties` that can be referenced
    moved into a Secret; off, `properties` unchanged (spark-submit's ConfigMap)."""
    candidates = keys_in_clear(conf, properties)
    if not enabled(conf) or not candidates:
        return SecretConfs(dict(properties), in_clear=candidates)
    import base64  # here: only confs moved into a Secret need it (start-up time)

    name = secret_name(conf)
    result = dict(properties)
    data: dict[str, str] = {}
    env: list[KubeObject] = []
    kept: list[str] = []
    taken = {k.removeprefix(DRIVER_ENV) for k in properties if k.startswith(DRIVER_ENV)}
    for key in candidates:
        value = properties[key]
        if not re.fullmatch(_SECRET_DATA_KEY, key):
            kept.append(key)
            continue
        if key.startswith("spark.hadoop.") or re.fullmatch(_SSL_PASSWORDS, key):
            var = _env_name(key, taken)
            # Hadoop's syntax is ${env.VAR}; Spark's ConfigReader's is ${env:VAR}.
            hadoop = key.startswith("spark.hadoop.")
            result[key] = f"${{env.{var}}}" if hadoop else f"${{env:{var}}}"
            result[EXECUTOR_KEY_REF + var] = f"{name}:{key}"
            env.append(_from_secret(var, name, key))
        elif key.startswith(DRIVER_ENV) and re.fullmatch(_ENV_NAME, key.removeprefix(DRIVER_ENV)):
            var = key.removeprefix(DRIVER_ENV)
            result[key] = f"${{env:{var}}}"
            env.append(_from_secret(var, name, key))
        elif (
            key.startswith(EXECUTOR_ENV)
            and re.fullmatch(_ENV_NAME, key.removeprefix(EXECUTOR_ENV))
            and EXECUTOR_KEY_REF + key.removeprefix(EXECUTOR_ENV) not in properties
        ):
            del result[key]
            result[EXECUTOR_KEY_REF + key.removeprefix(EXECUTOR_ENV)] = f"{name}:{key}"
        else:
            kept.append(key)
            continue
        data[key] = base64.b64encode(value.encode("utf-8")).decode("ascii")
    if not data:
        return SecretConfs(dict(properties), in_clear=candidates)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "data": data,
        "immutable": True,
    }
    return SecretConfs(result, secret, tuple(env), tuple(data), tuple(kept))


def with_env_from_secret(container: KubeObject, driver_env: tuple[KubeObject, ...]) -> KubeObject:
    """A copy of the Spark container whose env takes `driver_env`: every variable of the same
    name (the driverEnv value, and a template's) is replaced in place, the others appended."""
    if not driver_env:
        return container
    by_name = {entry["name"]: entry for entry in driver_env}
    existing = container.get("env") or []
    env = [by_name.get(e.get("name"), e) for e in existing]
    present = {e.get("name") for e in existing}
    return {**container, "env": [*env, *(e for n, e in by_name.items() if n not in present)]}


def in_clear_warning(
    keys: tuple[str, ...], option_on: bool, conf_map: str, namespace: str
) -> str | None:
    """The one warning line for secret-looking keys left in the ConfigMap: names, never
    values; None when there are none."""
    if not keys:
        return None
    where = (
        f"ConfigMap {conf_map} holds secret-looking confs in clear (anyone with get "
        f"configmaps in namespace {namespace!r} can read them): {', '.join(keys)}"
    )
    if option_on:
        return (
            f"{where}; {ENABLED_KEY} cannot move them: their readers do not expand a "
            "reference (only spark.hadoop.*, spark.ssl.*Password, spark.kubernetes.driverEnv.* "
            "and spark.executorEnv.* can be moved); mount them as files from a Secret instead"
        )
    return f"{where}; set {ENABLED_KEY}=true to keep those it can in a Secret owned by the driver"
