"""The secure preset (`"preset": "secure"` in the policy): what it turns on, per Spark line.

One word for what a platform team otherwise writes key by key and gets wrong on some line:

- `spark.authenticate=true` with a secret for this application only, in a Secret the driver
  pod owns, read by the driver from a mounted file and by the executors through a
  `secretKeyRef` variable (features/auth_secret.py): never in spark.properties, never a
  literal in a pod spec. The author's `spark.authenticate.secret*` is refused (the preset
  draws the secret and sets the file key).
- RPC encryption: `spark.network.crypto.enabled=true` (Spark's AES protocol, which needs the
  authentication above), with no SASL fallback (there is no older shuffle service to talk
  to on Kubernetes, and a fallback is a downgrade). From 3.5.2 and 4.0.0 on (SPARK-47172
  and SPARK-47318, backported to 3.5.2): AES-GCM (`spark.network.crypto.cipher=
  AES/GCM/NoPadding`, authenticated, where the default AES-CTR is not) and the HKDF key
  derivation (`authEngineVersion=2`); 3.5.0 and 3.5.1 keep AES-CTR and version 1, the
  only ones they have (a dry run's spark.properties shows which).
- I/O encryption: `spark.io.encryption.enabled=true` (shuffle and spill files, broadcast
  and cached blocks on local disk), on every line we build (Spark has had it since 2.1).
- The executors' NetworkPolicy: Spark's own step on 4.2+, ours before
  (features/executor_network_policy.py). Excluding a step the preset needs (4.1+'s
  `excludedFeatureSteps`) is refused.
- Pod Security Admission's "restricted" profile on the driver and the executors
  (submission/restricted_profile.py); what the author wrote against it is refused.
- 4.3's `spark.kubernetes[.driver|.executor].securityContext.allowPrivilegeEscalation`
  may not be set to true.

The preset's keys are pins: the conf gets them when it leaves them out, and a different
value is refused naming the preset. A pin of the policy's own wins over the preset's (a
platform team that will not pay for I/O encryption pins it off, in writing). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission import restricted_profile
from airflow_provider_sparkk8s.submission.features import (
    auth_secret,
    executor_network_policy,
    network_policy,
    pod_security,
    pod_template_config_map,
)

SECURE = "secure"
GCM_SINCE = ((3, 5, 2), (4, 0, 0))  # the 3.5 backport, and the 4.x lines
EXCLUDED_STEPS_KEY = "spark.kubernetes.driver.pod.excludedFeatureSteps"
# The author may not name the secret: the preset draws one per application.
DENIED_KEYS = ("spark.authenticate.secret", "spark.authenticate.secret.*")
# The steps the preset needs, which `excludedFeatureSteps` (4.1+) could drop by name.
_STEPS = {
    network_policy.SPARK_CLASS: "the executors' NetworkPolicy",
    executor_network_policy.NAME: "the executors' NetworkPolicy",
    pod_template_config_map.SPARK_CLASS: "the executors' restricted pod template",
    pod_security.NAME: "the driver's restricted pod",
    auth_secret.NAME: "the authentication Secret",
}
_ESCALATION_KEYS = tuple(
    f"spark.kubernetes.{role}securityContext.allowPrivilegeEscalation"
    for role in ("", "driver.", "executor.")
)


def has_gcm(version: tuple[int, int, int]) -> bool:
    """Whether the line's RPC encryption offers AES-GCM and HKDF (SPARK-47172, -47318)."""
    if version[:2] == (3, 5):
        return version >= GCM_SINCE[0]
    return version >= GCM_SINCE[1]


def pins(spark_version: str) -> dict[str, str]:
    """The conf the preset pins on this Spark line."""
    pinned = {
        "spark.authenticate": "true",
        auth_secret.ENABLED_KEY: "true",
        "spark.network.crypto.enabled": "true",
        "spark.network.crypto.saslFallback": "false",
        "spark.io.encryption.enabled": "true",
        executor_network_policy.ENABLED_KEY: "true",
        restricted_profile.KEY: restricted_profile.RESTRICTED,
    }
    if has_gcm(cv.version_tuple(spark_version)):
        pinned["spark.network.crypto.cipher"] = "AES/GCM/NoPadding"
        pinned["spark.network.crypto.authEngineVersion"] = "2"
    return pinned


def conf_problems(conf: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(key, value, rule) of what the conf sets against the preset, beyond its pins."""
    found = []
    excluded = sorted(set(cv.get_list(conf, EXCLUDED_STEPS_KEY)) & set(_STEPS))
    if excluded:
        rule = f"preset secure: its steps run ({', '.join(_STEPS[name] for name in excluded)})"
        found.append((EXCLUDED_STEPS_KEY, conf[EXCLUDED_STEPS_KEY], rule))
    for key in _ESCALATION_KEYS:
        if (conf.get(key) or "").strip().lower() == "true":
            found.append((key, conf[key], "preset secure: restricted pods"))
    return found


def pod_problems(where: str, pod: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(where, what, rule) for each field of `pod` the restricted profile refuses."""
    return [(where, problem, "preset secure: restricted pods")
            for problem in restricted_profile.problems(pod)]  # fmt: skip
