"""The provider's exception family: every message names the key, the value and what is
accepted; the typed outcomes carry their kind; the policy's refusal names every rule."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import (
    FAILURE_CLASSES,
    NOT_RETRIED,
    ApplicationError,
    ApplicationFailed,
    ApplicationTimedOut,
    ConfigurationError,
    CredentialCommandRefused,
    DriverOutOfMemory,
    InfrastructureFailure,
    KubeApiError,
    KubeConfigError,
    KubeConnectionError,
    KubeTLSVerificationError,
    PolicyViolation,
    SparkConfError,
    SparkK8sError,
)


def test_spark_conf_error_names_the_key_the_value_and_what_is_accepted() -> None:
    error = SparkConfError("spark.executor.instances", "two", "a whole number >= 0")
    assert str(error) == "spark.executor.instances='two' is invalid: expected a whole number >= 0"
    assert (error.key, error.value, error.accepted) == (
        "spark.executor.instances",
        "two",
        "a whole number >= 0",
    )
    assert isinstance(error, ValueError) and isinstance(error, SparkK8sError)


def test_spark_conf_error_without_a_value_says_what_is_missing_and_adds_the_hint() -> None:
    error = SparkConfError("spark.kubernetes.container.image", None, "an image", "set it")
    assert str(error) == "spark.kubernetes.container.image is not set: expected an image (set it)"


def test_kube_api_error_names_the_request_the_status_and_the_reason() -> None:
    error = KubeApiError(
        403,
        "Forbidden",
        "missing permission to create pods",
        method="POST",
        path="/api/v1/namespaces/jobs/pods",
        missing_permission="create pods in namespace 'jobs'",
    )
    assert str(error) == (
        "POST /api/v1/namespaces/jobs/pods failed: 403 Forbidden: missing permission to create pods"
    )
    assert error.status == 403 and error.body == {}
    assert error.api_message == "missing permission to create pods"
    assert error.missing_permission == "create pods in namespace 'jobs'"


def test_credential_command_refused_names_the_connection_the_command_and_the_option() -> None:
    error = CredentialCommandRefused("k8s", "aws", "the api-server", "allow_exec_in_api_server")
    assert isinstance(error, KubeConfigError)
    message = str(error)
    assert "'k8s'" in message and "'aws'" in message and "the api-server" in message
    assert message.endswith("[sparkk8s] allow_exec_in_api_server = True")


def test_a_tls_refusal_is_a_connection_error() -> None:
    assert issubclass(KubeTLSVerificationError, KubeConnectionError)


def test_the_typed_outcomes_are_found_by_their_kind_and_carry_what_the_reducer_knew() -> None:
    assert {
        "failed": ApplicationFailed,
        "application_error": ApplicationError,
        "configuration_error": ConfigurationError,
        "out_of_memory": DriverOutOfMemory,
        "infrastructure": InfrastructureFailure,
        "timeout": ApplicationTimedOut,
    } == FAILURE_CLASSES
    error = DriverOutOfMemory(
        "driver OOMKilled", pod="pi-driver", reason="OOMKilled", exit_code=137
    )
    assert (error.pod, error.reason, error.exit_code, error.memory_raised) == (
        "pi-driver",
        "OOMKilled",
        137,
        False,
    )
    assert str(error) == "driver OOMKilled"


@pytest.mark.parametrize(
    ("outcome", "retried"),
    [
        (ApplicationError, False),
        (ConfigurationError, False),
        (DriverOutOfMemory, True),
        (InfrastructureFailure, True),
        (ApplicationTimedOut, True),
    ],
)
def test_only_the_same_code_or_a_missing_image_is_not_retried(
    outcome: type[ApplicationFailed], retried: bool
) -> None:
    assert issubclass(outcome, NOT_RETRIED) is not retried


def test_policy_violation_names_its_source_and_every_broken_rule() -> None:
    violations = [
        ("spark.executor.instances", "50", "at most 20"),
        ("spark.kubernetes.namespace", "prod", "one of: jobs"),
    ]
    error = PolicyViolation("the connection's extra", violations)
    assert isinstance(error, SparkConfError)
    assert str(error) == (
        "the platform policy from the connection's extra refuses this submission: "
        "spark.executor.instances='50' breaks at most 20; "
        "spark.kubernetes.namespace='prod' breaks one of: jobs"
    )
    assert (error.key, error.value, error.accepted) == violations[0]
    assert error.violations == violations
