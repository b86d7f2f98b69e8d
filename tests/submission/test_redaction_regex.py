"""`spark.redaction.regex` as Spark reads it, plus the keys masked whatever the user sets."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.submission.redaction_regex import (
    DEFAULT_REDACTION_REGEX,
    redaction_pattern,
)


@pytest.mark.parametrize(
    "key",
    [
        "spark.ssl.keyPassword",
        "spark.authenticate.SECRET",
        "spark.hadoop.fs.s3a.access.key",
        "spark.hadoop.fs.s3a.accesskey",
        "spark.kubernetes.authenticate.oauthToken",
        "spark.openlineage.transport.auth.apiKey",
        "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net",
    ],
)
def test_spark_default_pattern_and_the_always_redacted_keys_match(key: str) -> None:
    assert redaction_pattern({}).search(key)


@pytest.mark.parametrize("key", ["spark.executor.memory", "spark.app.name", "spark.keytab.path"])
def test_ordinary_keys_do_not_match_the_default(key: str) -> None:
    assert not redaction_pattern({}).search(key)


def test_a_users_pattern_replaces_sparks_default_but_api_keys_stay_masked() -> None:
    pattern = redaction_pattern({"spark.redaction.regex": "internal"})
    assert pattern.search("spark.my.internal.url")
    assert not pattern.search("spark.ssl.keyPassword")
    assert pattern.search("spark.openlineage.transport.auth.api_key")
    assert pattern.search("spark.hadoop.fs.azure.account.key.acct")


def test_java_style_leading_flags_stay_in_front() -> None:
    pattern = redaction_pattern({"spark.redaction.regex": "(?i)internal"})
    assert pattern.pattern.startswith("(?i)")
    assert pattern.search("spark.INTERNAL.url")


def test_an_empty_user_pattern_falls_back_to_the_default() -> None:
    pattern = redaction_pattern({"spark.redaction.regex": ""})
    assert pattern.pattern.startswith("(?i)")
    assert DEFAULT_REDACTION_REGEX[len("(?i)") :] in pattern.pattern
    assert pattern.search("db.password")
