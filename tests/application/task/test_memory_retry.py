"""The out-of-memory retry's sizes and its evidence (plain data)."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.task.memory_retry import (
    DriverMemory,
    check_factor,
    keep_for_retry,
    memory_xcom,
    out_of_memory_drivers,
    planned_memory,
    raised,
    retries_left,
    with_memory,
)
from airflow_provider_sparkk8s.application.task.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.errors import SparkConfError
from testenv.harness.pod_builders import pod, terminated


def driver_pod(limit: str) -> dict:
    return {"spec": {"containers": [{"name": "spark-kubernetes-driver",
                                     "resources": {"limits": {"memory": limit}}}]}}  # fmt: skip


def test_the_planned_sizes_are_the_heap_and_the_rest_of_the_container_limit():
    assert planned_memory({"spark.driver.memory": "512m"}, driver_pod("896Mi"), "4.3.0") == (
        DriverMemory(512, 384)
    )
    assert planned_memory({}, driver_pod("1408Mi"), "4.0.1") == DriverMemory(1024, 384)
    assert planned_memory({"spark.driver.memory": "2g"}, driver_pod("2432Mi"), "3.5.9") == (
        DriverMemory(2048, 384)
    )


def test_raising_multiplies_both_sizes_and_rounds_up():
    assert raised(DriverMemory(512, 384), 2.0) == DriverMemory(1024, 768)
    assert raised(DriverMemory(1000, 385), 1.5) == DriverMemory(1500, 578)
    assert DriverMemory(1024, 768).conf() == {
        "spark.driver.memory": "1024m",
        "spark.driver.memoryOverhead": "768m",
    }


@pytest.mark.parametrize("factor", [1, 0.5, -2, float("inf"), float("nan"), "2", True])
def test_a_factor_must_be_a_finite_number_above_one(factor):
    with pytest.raises(SparkConfError, match="memory_factor"):
        check_factor(factor)


def test_no_factor_means_no_memory_retry():
    assert check_factor(None) is None
    assert check_factor(2) == 2.0


def test_only_drivers_that_ended_out_of_memory_are_evidence():
    drivers = [
        pod("a-1-driver", phase="Failed", containers=[terminated(137, "OOMKilled")]),
        pod("a-2-driver", phase="Failed", containers=[terminated(1, "Error")]),
        pod("a-3-driver", phase="Failed", containers=[terminated(52, "Error")]),
        pod("a-4-driver", phase="Running"),
    ]
    assert out_of_memory_drivers(drivers) == ["a-1-driver", "a-3-driver"]


def test_the_xcom_records_both_sizes_on_a_memory_retry():
    before, after = DriverMemory(512, 384), DriverMemory(1024, 768)
    assert memory_xcom(before, None, None) == {"used": before.conf()}
    assert memory_xcom(after, before, 2.0) == {
        "used": after.conf(),
        "raised_from": before.conf(),
        "factor": 2.0,
    }


def test_the_retrys_sizes_win_over_the_tasks_own():
    given = SubmitParameters(conf={"spark.driver.memory": "1g", "spark.k": "v"}, driver_memory="1g")
    retried = with_memory(given, DriverMemory(1536, 576))
    assert retried.driver_memory == "1536m"
    assert retried.conf == {
        "spark.driver.memory": "1536m",
        "spark.driver.memoryOverhead": "576m",
        "spark.k": "v",
    }


def test_an_out_of_memory_driver_stays_only_for_a_retry_that_raises_the_memory():
    assert keep_for_retry("out_of_memory", False, 1.5, retries_left=True)
    assert not keep_for_retry("out_of_memory", True, 1.5, retries_left=True)  # raised already
    assert not keep_for_retry("out_of_memory", False, None, retries_left=True)  # no factor
    assert not keep_for_retry("out_of_memory", False, 1.5, retries_left=False)
    assert not keep_for_retry("application_error", False, 1.5, retries_left=True)


def test_another_try_follows_while_the_try_number_is_within_max_tries():
    assert retries_left(1, 1) and not retries_left(2, 1) and not retries_left(None, None)
