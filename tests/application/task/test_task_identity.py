"""Task-instance labels and driver pod names: valid for Kubernetes, distinct per identity."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_sparkk8s.application.task.task_identity import (
    LABEL_VALUE_MAX,
    SUBMISSION_LABEL,
    TASK_INSTANCE_ANNOTATION,
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
    driver_label_conf,
    driver_labels,
    driver_pod_name,
    label_value,
    ref_of_pod,
    selector,
    submission_number,
)

LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def ref(**overrides) -> TaskInstanceRef:
    values: dict[str, Any] = {
        "dag_id": "etl",
        "task_id": "spark_pi",
        "run_id": "manual__2026-11-29T18:00:00+00:00",
    }
    values.update(overrides)
    return TaskInstanceRef(**values)


def test_run_ids_become_valid_label_values_that_still_read_like_them():
    value = label_value("manual__2026-11-29T18:00:00+00:00")
    assert value == "manual__2026-11-29T18-00-00-00-00"
    assert LABEL_VALUE.match(value)


def test_long_values_are_cut_to_63_chars_with_a_hash_that_keeps_them_apart():
    first = label_value("x" * 100 + "a")
    second = label_value("x" * 100 + "b")
    assert len(first) == len(second) == LABEL_VALUE_MAX
    assert first != second
    assert LABEL_VALUE.match(first)


@given(st.text(max_size=300))
def test_any_text_gives_a_valid_label_value(text):
    value = label_value(text)
    assert len(value) <= LABEL_VALUE_MAX
    assert LABEL_VALUE.match(value), value


def test_the_digest_tells_apart_identities_that_sanitise_the_same():
    # "a:b" and "a-b" are the same label value; the digest keeps them apart.
    assert label_value("a:b") == label_value("a-b")
    assert ref(task_id="a:b").digest != ref(task_id="a-b").digest
    assert ref(map_index=0).digest != ref(map_index=1).digest


def test_try_number_is_not_part_of_the_identity():
    # A retry must find the driver an earlier try left running.
    assert ref(try_number=1).digest == ref(try_number=2).digest


def test_labels_carry_the_identity_and_the_submission_number():
    labels = driver_labels(ref(map_index=3, try_number=2), submission=4)
    assert labels[TASK_INSTANCE_LABEL] == ref(map_index=3).digest
    assert labels["sparkk8s.io/map-index"] == "3"
    assert labels["sparkk8s.io/try-number"] == "2"
    assert labels[SUBMISSION_LABEL] == "4"
    assert all(LABEL_VALUE.match(v) for v in labels.values())
    assert driver_labels(ref(), 1)["sparkk8s.io/map-index"] == "none"
    conf = driver_label_conf(ref(), 1)
    assert conf[f"spark.kubernetes.driver.label.{TASK_INSTANCE_LABEL}"] == ref().digest
    assert selector(ref()) == f"{TASK_INSTANCE_LABEL}={ref().digest},spark-role=driver"


def test_driver_pod_names_are_deterministic_per_submission_and_fit_a_dns_label():
    name = driver_pod_name("Spark Pi", ref(), 1)
    assert name == driver_pod_name("Spark Pi", ref(try_number=5), 1)
    assert name != driver_pod_name("Spark Pi", ref(), 2)
    assert name.startswith("spark-pi-") and name.endswith("-1-driver")
    assert DNS_LABEL.match(name)


@given(st.text(max_size=200), st.integers(min_value=1, max_value=10_000))
def test_any_app_name_gives_a_valid_short_pod_name(app_name, number):
    name = driver_pod_name(app_name, ref(), number)
    assert len(name) <= 63
    assert DNS_LABEL.match(name), name


def test_submission_number_reads_the_label_and_ignores_odd_values():
    assert submission_number({"metadata": {"labels": {SUBMISSION_LABEL: "7"}}}) == 7
    assert submission_number({"metadata": {"labels": {SUBMISSION_LABEL: "x"}}}) == 0
    assert submission_number({"metadata": {}}) == 0


def test_the_annotation_holds_the_exact_identity_the_clean_up_reads_back():
    exact = TaskInstanceRef("dag with spaces", "task.x", "manual__2026-11-29T12:00:00+00:00", 3)
    conf = driver_label_conf(exact, 1)
    annotation = conf[f"spark.kubernetes.driver.annotation.{TASK_INSTANCE_ANNOTATION}"]
    labels = {TASK_INSTANCE_LABEL: conf[f"spark.kubernetes.driver.label.{TASK_INSTANCE_LABEL}"]}
    pod = {"metadata": {"labels": labels, "annotations": {TASK_INSTANCE_ANNOTATION: annotation}}}
    assert ref_of_pod(pod) == exact
    # junk, or an annotation that does not match the label: not ours to judge
    junk = {"metadata": {"labels": labels, "annotations": {TASK_INSTANCE_ANNOTATION: "junk"}}}
    assert ref_of_pod(junk) is None
    other = TaskInstanceRef("other", "task.x", exact.run_id).key
    swapped = {"metadata": {"labels": labels, "annotations": {TASK_INSTANCE_ANNOTATION: other}}}
    assert ref_of_pod(swapped) is None
    assert ref_of_pod({"metadata": {"labels": labels}}) is None
