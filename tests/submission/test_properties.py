import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import properties
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from tests.support.driver_conf import make_conf


def body(text: str) -> list[str]:
    return text.splitlines()[2:]


def test_header_and_sorted_entries():
    text = properties.properties_text(
        {"b": "2", "a": "1"}, "Java properties built from x", "Fri Nov 28 17:59:02 UTC 2025"
    )
    assert text == "#Java properties built from x\n#Fri Nov 28 17:59:02 UTC 2025\na=1\nb=2\n"


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        (
            "spark.master",
            "k8s://https://10.0.0.1:6443",
            r"spark.master=k8s\://https\://10.0.0.1\:6443",
        ),
        ("k", "a=b#c!d\\e", r"k=a\=b\#c\!d\\e"),
        ("k", " lead  and trail ", r"k=\ lead  and trail "),
        ("key with space", "v", r"key\ with\ space=v"),
        ("k:=#!", "v", r"k\:\=\#\!=v"),
        ("k", "tab\tnl\ncr\rff\f", r"k=tab\tnl\ncr\rff\f"),
        ("k", "", "k="),
        ("k", "café ☃ 日本", "k=café ☃ 日本"),  # Writer variant: non-ASCII raw
        (" k", "v", r"\ k=v"),
    ],
)
def test_java_escaping(key, value, line):
    assert body(properties.properties_text({key: value}, "c", "d")) == [line]


def test_comment_escapes_like_java():
    assert properties.properties_text({}, "a☃\nb\n#c", "d") == "#a\\u2603\n#b\n#c\n#d\n"


def conf_dir_conf(files, extra=None, env=None):
    directory = "/etc/spark"
    local = LocalInputs(
        environment={"SPARK_CONF_DIR": directory, **(env or {})},
        files={f"{directory}/{name}": content for name, content in files.items()},
        directories={directory: tuple(files)},
    )
    return make_conf(extra, local=local)


def test_conf_dir_selection_and_order():
    files = {
        "spark-defaults.conf": b"x",
        "spark.properties": b"x",
        "log4j2.properties.template": b"x",
        "lib.jar": b"x",
        "a.tar": b"x",
        "spark-env.sh": b"export A=1\n",
        "log4j2.properties": b"rootLogger.level=info\n",
        "hive-site.xml": b"<c/>",
        "bin.dat": b"\xff\xfe",
        "metrics.properties": b"",
    }
    selected = properties.conf_dir_files(conf_dir_conf(files))
    # by name length + size: 17, 18, 23, 39; undecodable, excluded and templates dropped
    assert list(selected) == [
        "hive-site.xml",
        "metrics.properties",
        "spark-env.sh",
        "log4j2.properties",
    ]
    assert selected["log4j2.properties"] == "rootLogger.level=info\n"


def test_conf_dir_budget():
    files = {"a": b"x" * 40, "bb": b"y" * 50, "c": b"z" * 200}
    selected = properties.conf_dir_files(
        conf_dir_conf(files, {"spark.kubernetes.configMap.maxSize": "100"})
    )
    # "c" is over budget alone; a (41) fits, a + bb (41 + 52 = 93) < 100 fits.
    assert list(selected) == ["a", "bb"]
    selected = properties.conf_dir_files(
        conf_dir_conf(files, {"spark.kubernetes.configMap.maxSize": "93"})
    )
    assert list(selected) == ["a"]
    with pytest.raises(SparkConfError):
        properties.conf_dir_files(
            conf_dir_conf(files, {"spark.kubernetes.configMap.maxSize": "2000000"})
        )


def test_a_file_that_does_not_fit_is_skipped_with_a_warning_and_later_ones_still_tried(caplog):
    # Ordered by name + bytes: a (6), bb (52), c (53), m (58: 27 chars of 2 bytes, 28 units);
    # running total a 6, bb 58, c 111 >= 100 skipped, m 58 + 29 = 87 < 100 kept; big
    # alone (104 > 100) is left out without a word.
    files = {
        "a": b"x" * 5,
        "bb": b"y" * 50,
        "c": b"z" * 52,
        "m": "\u00e9".encode() * 27 + b"\n",
        "big": b"q" * 101,
    }
    conf = conf_dir_conf(files, {"spark.kubernetes.configMap.maxSize": "100"})
    with caplog.at_level("WARNING"):
        selected = properties.conf_dir_files(conf)
    assert list(selected) == ["a", "bb", "m"]
    warning = (
        "Skipped conf file(s) c, due to size constraint. Please see, config: "
        "`spark.kubernetes.configMap.maxSize` for more details."
    )
    assert [record.getMessage() for record in caplog.records] == [warning]


def test_spark_home_conf_dir():
    local = LocalInputs(
        files={"/opt/spark/conf/x.xml": b"1"}, directories={"/opt/spark/conf": ("x.xml",)}
    )
    assert properties.conf_dir_files(make_conf({"spark.home": "/opt/spark"}, local=local)) == {
        "x.xml": "1"
    }
    assert properties.conf_dir_files(make_conf(local=local)) == {}


def test_config_map_and_volume():
    conf = conf_dir_conf({"hive-site.xml": b"<c/>"}, {"spark.kubernetes.namespace": "jobs"})
    cm = properties.conf_config_map(
        conf,
        {
            "spark.app.id": "x",
            "spark.kubernetes.authenticate.driver.oauthToken": "<present_but_redacted>",
        },
    )
    assert cm["metadata"] == {"name": "spark-drv-d4e5f69ad0f8a400-conf-map", "namespace": "jobs"}
    assert cm["immutable"] is True
    assert list(cm["data"]) == ["hive-site.xml", "spark.properties", "spark.kubernetes.namespace"]
    assert cm["data"]["spark.kubernetes.namespace"] == "jobs"
    assert cm["data"]["spark.properties"].splitlines() == [
        "#Java properties built from Kubernetes config map with name: spark-drv-d4e5f69ad0f8a400-conf-map",
        "#Fri Nov 28 17:59:02 UTC 2025",
        "spark.app.id=x",
        "spark.kubernetes.authenticate.driver.oauthToken=<present_but_redacted>",
    ]
    assert properties.conf_volume(cm) == {
        "name": "spark-conf-volume-driver",
        "configMap": {
            "name": "spark-drv-d4e5f69ad0f8a400-conf-map",
            "items": [
                {"key": "hive-site.xml", "path": "hive-site.xml", "mode": 420},
                {"key": "spark.properties", "path": "spark.properties", "mode": 420},
            ],
        },
    }
