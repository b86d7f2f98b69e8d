"""Reading the platform policy: every field checked, a typo named with its source."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.policy.platform_policy import (
    parse_policy,
    policy_from_value,
    read_policy_text,
)
from airflow_provider_sparkk8s.errors import SparkConfError
from tests.support.policy_confs import POLICY_DOCUMENT


def test_the_documented_policy_parses() -> None:
    policy = parse_policy(POLICY_DOCUMENT, "file p.json")
    assert policy.max_memory_mib == 24 * 1024 and policy.max_cores == 12.0
    assert policy.allowed_namespaces == ("team-*",) and policy.required_labels == ("team",)
    assert policy.pinned == {"spark.eventLog.enabled": "false"}


def test_json_and_yaml_text_and_objects_give_the_same_policy() -> None:
    as_json = read_policy_text('{"max_executors": 4, "pinned": {"spark.ui.enabled": false}}', "s")
    as_yaml = read_policy_text("max_executors: 4\npinned:\n  spark.ui.enabled: false\n", "s")
    as_object = policy_from_value(
        {"max_executors": "4", "pinned": {"spark.ui.enabled": False}}, "s"
    )
    assert as_json == as_yaml == as_object
    assert as_json is not None and as_json.pinned == {"spark.ui.enabled": "false"}


@pytest.mark.parametrize("blank", [None, "", "  \n", {}])
def test_blank_is_no_policy(blank: object) -> None:
    assert policy_from_value(blank, "s") is None


@pytest.mark.parametrize(
    ("document", "key", "fragment"),
    [
        ({"max_executor": 4}, "policy.max_executor", "one of denied_keys"),
        ({"max_executors": 2.5}, "policy.max_executors", "a whole number"),
        ({"max_cores": -1}, "policy.max_cores", "a number >= 0"),
        ({"max_memory": "lots"}, "policy.max_memory", "such as 512m or 2g (in connection"),
        ({"denied_keys": "spark.*"}, "policy.denied_keys", "a list of strings"),
        ({"pinned": {"spark.master": "k8s://x"}}, "policy.pinned", "the submitter"),
        ({"pinned": {"a": {"b": 1}}}, "policy.pinned", "string, number or boolean"),
        ({"labels": {"bad key!": "x"}}, "policy.labels.bad key!", "DNS subdomain"),
        ({"allowed_namespaces": [""]}, "policy.allowed_namespaces", "non-empty"),
        ({"preset": "paranoid"}, "policy.preset", "='paranoid' is invalid: expected one of secure"),
        ({"preset": True}, "policy.preset", "one of secure"),
    ],
)
def test_bad_fields_are_named(document: dict, key: str, fragment: str) -> None:
    with pytest.raises(SparkConfError) as caught:
        parse_policy(document, "connection 'c' (extra policy)")
    assert caught.value.key == key
    assert fragment in str(caught.value)


def test_unparsable_text_names_the_line_and_the_source() -> None:
    with pytest.raises(SparkConfError, match=r"line 2.*in file p.yaml"):
        read_policy_text("a: 1\n  b: [\n", "file p.yaml")


def test_an_empty_allow_list_allows_nothing_and_says_so() -> None:
    policy = parse_policy({"allowed_namespaces": []}, "s")
    assert policy.allowed_namespaces == () and policy.rules() == ["allowed_namespaces=[]"]


def test_the_preset_is_one_word_and_shown_with_the_rules() -> None:
    policy = parse_policy({"preset": "Secure", "max_executors": 4}, "s")
    assert policy.preset == "secure"
    assert policy.rules() == ["max_executors=4", "preset=secure"]
    assert parse_policy({}, "s").preset is None
