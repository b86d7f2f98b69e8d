"""SparkK8sRetryPolicy on Airflow 3.3's retry policies, and the operator's out-of-memory
retry against the fake cluster (the policy decides, the next try submits more memory)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_provider_sparkk8s.errors import (
    ApplicationError,
    ApplicationFailed,
    ApplicationTimedOut,
    ConfigurationError,
    DriverOutOfMemory,
    InfrastructureFailure,
    KubeConnectionError,
)
from airflow_provider_sparkk8s.operators.retry_policy import SparkK8sRetryPolicy
from airflow_provider_sparkk8s.operators.spark_k8s import APPLICATION_XCOM_KEY
from airflow_provider_sparkk8s.version_compat import RetryAction
from testenv.fakes import FakeTaskInstance, driver_status
from tests.operators.test_operator_flow import (
    context,
    existing_driver,
    make_operator,
    progress,
)


def decide(policy: SparkK8sRetryPolicy, error: BaseException):
    return policy.evaluate(error, try_number=1, max_tries=3)


def test_application_errors_fail_at_once_and_say_why():
    decision = decide(SparkK8sRetryPolicy(), ApplicationError("[application_error] boom"))
    assert decision.action is RetryAction.FAIL
    assert decision.reason is not None
    assert decision.reason.startswith("application error, not retried")
    assert "boom" in decision.reason


def test_configuration_errors_fail_at_once_and_say_why():
    missing = ConfigurationError('[configuration_error] ImageNotFound: image "x:1" ...: not found')
    decision = decide(SparkK8sRetryPolicy(), missing)
    assert decision.action is RetryAction.FAIL
    assert decision.reason is not None
    assert decision.reason.startswith("configuration error, not retried")
    assert 'image "x:1"' in decision.reason


@pytest.mark.parametrize(
    "error", [InfrastructureFailure("evicted"), KubeConnectionError("connection refused")]
)
def test_infrastructure_is_retried_after_the_delay(error):
    policy = SparkK8sRetryPolicy(infrastructure_delay=timedelta(seconds=30))
    decision = decide(policy, error)
    assert (decision.action, decision.retry_delay) == (RetryAction.RETRY, timedelta(seconds=30))
    assert decision.reason is not None and decision.reason.startswith("infrastructure failure")


@pytest.mark.parametrize(
    "error", [ApplicationTimedOut("slow"), ApplicationFailed("unclassified"), ValueError("x")]
)
def test_anything_else_keeps_the_tasks_own_retries(error):
    assert decide(SparkK8sRetryPolicy(), error).action is RetryAction.DEFAULT


def test_out_of_memory_is_retried_once_with_a_factor_and_then_fails():
    policy = SparkK8sRetryPolicy(memory_factor=1.5)
    first = decide(policy, DriverOutOfMemory("[out_of_memory] OOMKilled"))
    assert first.action is RetryAction.RETRY
    assert first.reason is not None and "1.5x spark.driver.memory" in first.reason
    again = decide(policy, DriverOutOfMemory("[out_of_memory] OOMKilled", memory_raised=True))
    assert again.action is RetryAction.FAIL
    # Without a factor nothing would change: the task's own retries decide.
    assert decide(SparkK8sRetryPolicy(), DriverOutOfMemory("x")).action is RetryAction.DEFAULT


def test_the_policy_round_trips_through_its_serialized_form():
    policy = SparkK8sRetryPolicy(infrastructure_delay=timedelta(seconds=5), memory_factor=2)
    data = policy.serialize()
    assert data == {
        "__type": "SparkK8sRetryPolicy",
        "infrastructure_delay": 5.0,
        "memory_factor": 2.0,
    }
    again = SparkK8sRetryPolicy.deserialize(data)
    assert (again.infrastructure_delay, again.memory_factor) == (timedelta(seconds=5), 2.0)


def test_the_operator_uses_the_policy_unless_the_task_sets_one():
    assert isinstance(make_operator().retry_policy, SparkK8sRetryPolicy)
    own = SparkK8sRetryPolicy(memory_factor=3)
    assert make_operator(retry_policy=own).retry_policy is own


def oom_status() -> dict:
    return driver_status("finished", exit_code=137, reason="OOMKilled")


def test_an_oom_driver_is_kept_then_the_retry_submits_more_memory(cluster):
    policy = SparkK8sRetryPolicy(memory_factor=2)
    cluster.on_list = progress(oom_status())
    first_try = FakeTaskInstance(try_number=1)
    first_try.max_tries = 2  # type: ignore[attr-defined]
    operator = make_operator(retry_policy=policy, on_finish_action="delete_pod")
    with pytest.raises(DriverOutOfMemory) as raised_error:
        operator.execute(context(first_try))
    assert raised_error.value.memory_raised is False
    assert policy.evaluate(raised_error.value, 1, 2).action is RetryAction.RETRY
    assert len(cluster.pods) == 1  # kept despite delete_pod: the retry's evidence
    failed = first_try.xcom[APPLICATION_XCOM_KEY]
    assert failed["reason"] == "out_of_memory"
    assert failed["driver_memory"] == {
        "used": {"spark.driver.memory": "1024m", "spark.driver.memoryOverhead": "384m"}
    }

    cluster.on_list = progress(driver_status("finished"), only="-2-driver")
    created: list[dict] = []
    cluster.before_create = lambda _, pod: created.append(pod)
    second_try = FakeTaskInstance(try_number=2)
    second_try.max_tries = 2  # type: ignore[attr-defined]
    result = make_operator(retry_policy=policy, on_finish_action="delete_pod").execute(
        context(second_try)
    )
    assert result["driver_pod"].endswith("-2-driver")
    assert result["driver_memory"] == {
        "used": {"spark.driver.memory": "2048m", "spark.driver.memoryOverhead": "768m"},
        "raised_from": {"spark.driver.memory": "1024m", "spark.driver.memoryOverhead": "384m"},
        "factor": 2.0,
    }
    (second,) = created
    limits = second["spec"]["containers"][0]["resources"]["limits"]
    assert limits["memory"] == "2816Mi"  # 2048m + 768m
    assert cluster.pods == {}  # the first try's driver read, then deleted; the second's too


def test_a_raised_try_that_runs_out_again_is_final(cluster):
    policy = SparkK8sRetryPolicy(memory_factor=2)
    existing_driver(cluster, 1, oom_status())
    cluster.on_list = progress(oom_status(), only="-2-driver")
    second_try = FakeTaskInstance(try_number=2)
    second_try.max_tries = 3  # type: ignore[attr-defined]
    with pytest.raises(DriverOutOfMemory) as error:
        make_operator(retry_policy=policy, on_finish_action="keep_pod").execute(context(second_try))
    assert error.value.memory_raised is True
    assert policy.evaluate(error.value, 2, 3).action is RetryAction.FAIL
