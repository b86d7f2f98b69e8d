"""The platform policy on rendered submissions (application/policy/guardrails.py through
services.submit.submission.plan): generated confs it allows render exactly as without a policy;
every generated breach is refused, naming its key, its value (secrets redacted) and rule."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_sparkk8s.application.policy.guardrails import (
    apply_pins,
    registry_path,
    violations,
)
from airflow_provider_sparkk8s.application.policy.platform_policy import Policy, parse_policy
from airflow_provider_sparkk8s.application.policy.redaction import REDACTED
from airflow_provider_sparkk8s.errors import PolicyViolation, SparkConfError
from airflow_provider_sparkk8s.services.submit import submission
from tests.support.driver_conf import IDS
from tests.support.policy_confs import BREACHES, SECRET, Breach, allowed_confs, policy

JAR = "local:///opt/spark/examples/jars/spark-examples.jar"
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def plan(
    conf: Mapping[str, str], rules: Policy | None = None, main: str = JAR, **kwargs
) -> submission.Planned:
    argv = ["--master", "k8s://https://192.0.2.1:6443", "--deploy-mode", "cluster",
            "--name", "pi"]  # fmt: skip
    if main == JAR:
        argv += ["--class", "org.apache.spark.examples.SparkPi"]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    request = submission.SubmissionRequest([*argv, main], environ={}, cwd="/")
    arguments = submission.parse(request, clock_ms=lambda: 1_700_000_000_000)
    return submission.plan(
        arguments, spark_version="4.0.1", environ={}, ids=IDS, policy=rules, **kwargs
    )


@FAST
@given(conf=allowed_confs())
def test_a_conf_the_policy_allows_renders_as_without_a_policy(conf: dict) -> None:
    rules = policy()
    with_policy = plan(conf, rules)
    # Without a policy, the same conf with the pins it left out filled in by hand.
    without = plan(apply_pins(rules, conf))
    assert with_policy.rendered == without.rendered
    assert with_policy.spark_conf == without.spark_conf
    assert with_policy.rendered.system_properties["spark.eventLog.enabled"] == "false"


@FAST
@given(conf=allowed_confs(), breach=st.sampled_from(BREACHES))
def test_every_breach_is_refused_naming_key_value_and_rule(conf: dict, breach: Breach) -> None:
    breach.change(conf)
    with pytest.raises(PolicyViolation) as caught:
        plan(conf, policy())
    error = caught.value
    assert isinstance(error, SparkConfError)  # the bad-input family: never retried
    named = {(key, rule.split(" ", 1)[0]) for key, _, rule in error.violations}
    assert (breach.key, breach.rule) in named, error
    assert "test policy" in str(error)
    assert SECRET not in str(error)
    shown = {key: value for key, value, _ in error.violations}
    if breach.key in conf and breach.rule in ("denied_keys", "pinned"):
        expected = REDACTED if "oauthToken" in breach.key else conf[breach.key]
        assert shown[breach.key] == expected


def test_the_message_names_key_value_and_rule() -> None:
    conf = {"spark.kubernetes.namespace": "kube-system", "spark.executor.instances": "50"}
    rules = parse_policy({"allowed_namespaces": ["team-*"], "max_executors": 8}, "file p.json")
    with pytest.raises(PolicyViolation) as caught:
        plan({**conf, "spark.kubernetes.container.image": "apache/spark:4.0.1"}, rules)
    assert str(caught.value) == (
        "the platform policy from file p.json refuses this submission: "
        "spark.kubernetes.namespace='kube-system' breaks allowed_namespaces ['team-*']; "
        "spark.executor.instances='50' breaks max_executors 8"
    )


def test_a_secret_looking_value_is_redacted_whatever_its_key() -> None:
    rules = parse_policy({"denied_keys": ["spark.myapp.*"]}, "p")
    conf = {"spark.kubernetes.container.image": "apache/spark:4.0.1",
            "spark.myapp.password": "hunter2", "spark.myapp.url": "x?token=abc"}  # fmt: skip
    with pytest.raises(PolicyViolation) as caught:
        plan(conf, rules)
    assert [(k, v) for k, v, _ in caught.value.violations] == [
        ("spark.myapp.password", REDACTED),
        ("spark.myapp.url", REDACTED),
    ]
    assert "hunter2" not in str(caught.value) and "abc" not in str(caught.value)


def test_keys_the_face_provided_are_not_the_authors() -> None:
    rules = parse_policy({"denied_keys": ["spark.kubernetes.driver.label.*"]}, "p")
    conf = {"spark.kubernetes.container.image": "apache/spark:4.0.1",
            "spark.kubernetes.driver.label.team": "etl"}  # fmt: skip
    provided = {"spark.kubernetes.driver.label.team": "etl"}
    assert plan(conf, rules, provided=provided).rendered.driver_pod
    with pytest.raises(PolicyViolation):
        plan(conf, rules, provided={"spark.kubernetes.driver.label.team": "other"})


def test_without_a_policy_nothing_is_checked() -> None:
    conf = {
        "spark.kubernetes.container.image": "quay.io/x:4.0.1",
        "spark.executor.instances": "999",
    }
    planned = plan(conf)
    assert planned.policy is None and submission.dry_run(planned).policy is None


def test_the_dry_run_says_which_policy_was_kept() -> None:
    rules = parse_policy({"max_executors": 8, "pinned": {"spark.ui.enabled": "false"}}, "file p")
    preview = submission.dry_run(plan({"spark.kubernetes.container.image": "a/b:4.0.1"}, rules))
    assert preview.policy == (
        "Policy from file p: every rule kept (pinned=['spark.ui.enabled'], max_executors=8)"
    )


def test_dynamic_allocation_counts_its_maximum() -> None:
    rules = parse_policy({"max_executors": 4, "max_cores": 100}, "p")
    base = {"spark.kubernetes.container.image": "a/b:4.0.1",
            "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
            "spark.executor.instances": "1"}  # fmt: skip
    planned = plan({**base, "spark.dynamicAllocation.maxExecutors": "4"}, rules)
    assert violations(rules, _driver_conf(planned), planned.rendered) == []
    with pytest.raises(PolicyViolation) as caught:
        plan(base, rules)
    assert caught.value.violations[0] == (
        "spark.dynamicAllocation.maxExecutors",
        "unset with dynamic allocation (unbounded)",
        "max_executors 4",
    )
    assert "unbounded" in caught.value.violations[1][1]  # and the cores have no bound


def _driver_conf(planned: submission.Planned):  # type: ignore[no-untyped-def]
    from airflow_provider_sparkk8s.submission.conf import DriverConf, MainAppResource

    return DriverConf(
        spark_conf=planned.spark_conf,
        spark_version="4.0.1",
        ids=IDS,
        main_app_resource=MainAppResource("java", JAR),
        main_class="org.apache.spark.examples.SparkPi",
    )


def test_executor_memory_adds_overhead_pyspark_and_off_heap() -> None:
    rules = parse_policy({"max_memory": 10_000}, "p")  # MiB
    conf = {"spark.kubernetes.container.image": "a/b:4.0.1", "spark.executor.instances": "2",
            "spark.executor.memory": "2g", "spark.memory.offHeap.enabled": "true",
            "spark.memory.offHeap.size": "1g"}  # fmt: skip
    planned = plan(conf, rules)  # driver 1g + 384m; executors 2 x (2048 + 384 + 1024)
    assert planned.rendered  # 1408 + 6912 = 8320 <= 10000
    with pytest.raises(PolicyViolation) as caught:
        plan({**conf, "spark.executor.instances": "3"}, rules)
    assert caught.value.violations[0][1] == "1408 + 3 x 3456 = 11776 MiB"


@pytest.mark.parametrize(
    ("image", "location"),
    [
        ("apache/spark:4.0.1", "docker.io/apache/spark"),
        ("spark", "docker.io/library/spark"),
        (
            "registry.example.com:5000/team/spark:1@sha256:ab",
            "registry.example.com:5000/team/spark",
        ),
        ("localhost/spark:1", "localhost/spark"),
        ("ghcr.io/a/b", "ghcr.io/a/b"),
    ],
)
def test_registry_path_resolves_as_the_runtime_does(image: str, location: str) -> None:
    assert registry_path(image) == location


@pytest.mark.parametrize(
    ("extra", "per_executor"),
    [
        ({}, 4096 + 1638),  # PySpark: the driver's 0.4 factor (system property) applies
        ({"spark.executor.memoryOverheadFactor": "0.2"}, 4096 + 819),
        ({"spark.kubernetes.memoryOverheadFactor": "0.1"}, 4096 + 409),
        ({"spark.executor.memoryOverheadFactor": "0.05"}, 4096 + 384),  # the minimum
        ({"spark.executor.memoryOverhead": "100m", "spark.executor.pyspark.memory": "256m"},
         4096 + 100 + 256),
    ],
)  # fmt: skip
def test_a_pyspark_executors_memory(extra: dict, per_executor: int) -> None:
    rules = parse_policy({"max_memory": 1}, "p")
    conf = {"spark.kubernetes.container.image": "a/b:4.0.1", "spark.executor.instances": "1",
            "spark.executor.memory": "4g", **extra}  # fmt: skip
    with pytest.raises(PolicyViolation) as caught:
        plan(conf, rules, main="local:///opt/job.py")
    assert f" + 1 x {per_executor} = " in caught.value.violations[0][1], caught.value


def test_a_pin_holds_for_keys_the_face_wrote_too() -> None:
    rules = parse_policy({"pinned": {"spark.kubernetes.namespace": "team-a"}}, "p")
    conf = {"spark.kubernetes.container.image": "a/b:4.0.1", "spark.kubernetes.namespace": "x"}
    with pytest.raises(PolicyViolation, match=r"pinned spark\.kubernetes\.namespace='team-a'"):
        plan(conf, rules, provided={"spark.kubernetes.namespace": "x"})


EXECUTOR_TEMPLATE = {
    "metadata": {"labels": {"team": "etl"}},
    "spec": {
        "serviceAccountName": "root-sa",
        "initContainers": [{"name": "fetch", "image": "busybox:1.36"}],
        "containers": [
            # Spark's container (the first): the conf's image replaces this one.
            {"name": "spark", "image": "evil.example/spark:1"},
            {
                "name": "proxy",
                "image": "evil.example/proxy:1",
                "resources": {
                    "requests": {"cpu": "500m", "memory": "256Mi"},
                    "limits": {"nvidia.com/gpu": "1"},
                },
            },
        ],
    },
}
TEMPLATE_RULES = {
    "allowed_image_registries": ["docker.io/apache"],
    "allowed_service_accounts": ["spark-*"],
    "required_labels": ["team"],
}
IMAGE = {"spark.kubernetes.container.image": "apache/spark:4.0.1",
         "spark.kubernetes.driver.label.team": "etl",
         "spark.kubernetes.authenticate.driver.serviceAccountName": "spark-driver"}  # fmt: skip


def test_an_executor_template_is_checked_as_the_driver_will_read_it() -> None:
    rules = parse_policy(TEMPLATE_RULES, "p")
    with pytest.raises(PolicyViolation) as caught:
        plan(IMAGE, rules, executor_pod_template=EXECUTOR_TEMPLATE)
    rule = "allowed_image_registries ['docker.io/apache']"
    assert caught.value.violations == [
        ("executor_pod_template (its service account)", "root-sa",
         "allowed_service_accounts ['spark-*']"),
        ("executor_pod_template (a container's image)", "evil.example/proxy:1", rule),
        ("executor_pod_template (a container's image)", "busybox:1.36", rule),
    ]  # fmt: skip
    # The template's label is on every executor: no required_labels breach for them.


def test_an_executor_template_file_is_read_too_with_the_older_account_field(tmp_path) -> None:
    import yaml

    template = {"spec": {"serviceAccount": "root-sa", "containers": [{"name": "spark"}]}}
    path = tmp_path / "executor.yaml"
    path.write_text(yaml.safe_dump(template))
    rules = parse_policy({"allowed_service_accounts": ["spark-*"]}, "p")
    conf = {**IMAGE, "spark.kubernetes.executor.podTemplateFile": str(path)}
    with pytest.raises(PolicyViolation) as caught:
        plan(conf, rules)
    assert caught.value.violations == [
        ("spark.kubernetes.executor.podTemplateFile (its service account)", "root-sa",
         "allowed_service_accounts ['spark-*']"),
    ]  # fmt: skip


def test_an_executor_templates_side_cars_count_in_every_executors_share() -> None:
    rules = parse_policy({"max_cores": 3.5, "max_memory": "4g", "max_gpus": 1}, "p")
    conf = {**IMAGE, "spark.executor.instances": "2", "spark.driver.cores": "1"}
    with pytest.raises(PolicyViolation) as caught:
        plan(conf, rules, executor_pod_template=EXECUTOR_TEMPLATE)
    side_cars = " + the executor pod template's side-cars)"
    # Per executor: 1 core + the proxy's 0.5; 1g + 384m overhead + the proxy's 256Mi; 1 GPU.
    assert caught.value.violations == [
        ("the driver pod's cpu request + executors x (spark.executor.cores" + side_cars,
         "1 + 2 x 1.5 = 4 cores", "max_cores 3.5"),
        ("the driver pod's memory request + executors x ((executor memory + overhead)"
         + side_cars, "1408 + 2 x 1664 = 4736 MiB", "max_memory 4096"),
        ("spark.driver.resource.gpu.amount + executors x (spark.executor.resource.gpu.amount"
         + side_cars, "0 + 2 x 1 = 2 GPUs", "max_gpus 1"),
    ]  # fmt: skip


def test_an_executor_template_the_policy_allows_renders_as_without_a_policy() -> None:
    allowed = {
        "metadata": {"labels": {"team": "etl"}},
        "spec": {
            "serviceAccountName": "spark-etl",
            "containers": [{"name": "spark"}, {"name": "log", "image": "apache/fluent-bit:3"}],
        },
    }
    rules = parse_policy(TEMPLATE_RULES, "p")
    with_policy = plan(IMAGE, rules, executor_pod_template=allowed)
    assert with_policy.rendered == plan(IMAGE, executor_pod_template=allowed).rendered
