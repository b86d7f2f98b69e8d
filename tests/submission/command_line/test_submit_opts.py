import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.command_line import submit_opts


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("", []),
        ("  -Xmx1g   -Da=b ", ["-Xmx1g", "-Da=b"]),
        ("'-Da=x y' \"-Db=it's\"", ["-Da=x y", "-Db=it's"]),
        ("-Da=x\\ y -Db=\\'", ["-Da=x y", "-Db='"]),
        ("'-Da=\\n'", ["-Da=\\n"]),  # no escapes inside single quotes
        ("-Da=''", ["-Da="]),
        ("''", [""]),  # quotes alone make an (empty) option
    ],
)
def test_options_split_as_the_launcher_splits_them(text: str, options: list[str]) -> None:
    assert submit_opts.parse_option_string(text) == options


@pytest.mark.parametrize("text", ["'-Da=b", '"-Da', "-Da\\"])
def test_an_unclosed_quote_or_trailing_backslash_is_refused(text: str) -> None:
    with pytest.raises(SparkConfError) as refused:
        submit_opts.parse_option_string(text)
    assert refused.value.key == "SPARK_SUBMIT_OPTS"
    assert "Invalid option string" in str(refused.value)


def test_spark_properties_and_the_hadoop_user() -> None:
    env = {"SPARK_SUBMIT_OPTS": "-Dspark.x=1 -Dspark.x=2 -Dspark.flag -DHADOOP_USER_NAME=h -D"}
    assert submit_opts.spark_properties(env) == {"spark.x": "2", "spark.flag": ""}
    assert submit_opts.hadoop_user_name(env) == "h"
    assert submit_opts.hadoop_user_name({**env, "HADOOP_USER_NAME": "e"}) == "e"
    assert submit_opts.hadoop_user_name({}) is None
