"""The event log's conf per application (application/ui/event_log.py), on plain data."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.ui.event_log import (
    EventLogChoice,
    choose,
    with_event_log,
)
from airflow_provider_sparkk8s.errors import SparkConfError

DIR = "event_log_dir"
SIZE = "event_log_rolling_max_file_size"


def test_the_parameter_wins_over_the_connection_which_wins_over_the_config():
    extras = {DIR: "s3a://conn/events", SIZE: "64m"}
    config = {DIR: "file:/config/events", SIZE: "32m"}
    assert choose("s3a://mine/events", None, extras, config) == EventLogChoice(
        "s3a://mine/events", "64m"
    )
    assert choose(None, None, extras, config) == EventLogChoice("s3a://conn/events", "64m")
    assert choose(None, None, {}, config) == EventLogChoice("file:/config/events", "32m")
    assert choose(None, "", {DIR: " "}, {DIR: None}) == EventLogChoice()


def test_no_folder_no_event_log_even_with_a_rolling_size():
    assert choose(None, "128m", {}, {}) == EventLogChoice()
    assert with_event_log({"a": "1"}, EventLogChoice()) == {"a": "1"}


@pytest.mark.parametrize("folder", ["spark-events", "events/here", "bucket:events", "../x"])
def test_a_relative_folder_is_refused_naming_the_option(folder):
    with pytest.raises(SparkConfError) as raised:
        choose(folder, None, {}, {})
    assert "event_log_dir" in str(raised.value) and folder in str(raised.value)


@pytest.mark.parametrize("size", ["1m", "9m", "ten", "1.5g"])
def test_a_rolling_size_below_sparks_minimum_or_not_a_size_is_refused(size):
    with pytest.raises(SparkConfError) as raised:
        choose("/shared/events", size, {}, {})
    assert "event_log_rolling_max_file_size" in str(raised.value)


def test_the_conf_enables_the_log_in_the_folder_and_rolls_when_asked():
    choice = EventLogChoice("s3a://logs/events", "128m")
    assert with_event_log({"spark.x": "1"}, choice) == {
        "spark.x": "1",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": "s3a://logs/events",
        "spark.eventLog.rolling.enabled": "true",
        "spark.eventLog.rolling.maxFileSize": "128m",
    }
    assert "spark.eventLog.rolling.enabled" not in with_event_log(
        {}, EventLogChoice("/shared/events")
    )


def test_the_users_own_keys_win_key_by_key():
    choice = EventLogChoice("s3a://logs/events", "128m")
    assert with_event_log({"spark.eventLog.enabled": "False"}, choice) == {
        "spark.eventLog.enabled": "False"
    }
    mine = with_event_log(
        {"spark.eventLog.dir": "hdfs:///mine", "spark.eventLog.rolling.maxFileSize": "1g"},
        choice,
    )
    assert mine["spark.eventLog.dir"] == "hdfs:///mine"
    assert mine["spark.eventLog.rolling.maxFileSize"] == "1g"
    assert mine["spark.eventLog.enabled"] == "true"
    unrolled = with_event_log({"spark.eventLog.rolling.enabled": "false"}, choice)
    assert unrolled["spark.eventLog.rolling.enabled"] == "false"
    assert "spark.eventLog.rolling.maxFileSize" not in unrolled
