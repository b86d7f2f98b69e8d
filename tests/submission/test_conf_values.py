import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import conf_values as cv
from tests.support.driver_conf import make_conf


@pytest.mark.parametrize(
    ("value", "mib"),
    [
        ("1g", 1024),
        ("1G", 1024),
        ("1500k", 1),
        ("2047k", 1),
        ("2048k", 2),
        ("512", 512),
        ("512m", 512),
        ("512MB", 512),
        (" 2gb ", 2048),
        ("1t", 1 << 20),
        ("1p", 1 << 30),
        ("1048575b", 0),
        ("0", 0),
    ],
)
def test_size_in_mib_truncates_like_spark(value, mib):
    assert cv.parse_size("spark.driver.memory", value, "m") == mib


def test_size_in_bytes_bare_number_is_bytes():
    assert cv.parse_size("k", "1048576") == 1048576
    assert cv.parse_size("k", "1k") == 1024


def test_size_conf_in_mib_reads_the_conf_then_the_default():
    assert cv.get_size_mib({"k": "2048k"}, "k", "1g") == 2
    assert cv.get_size_mib({}, "k", "1g") == 1024
    assert cv.get_size_mib({}, "k") is None


def test_size_conf_takes_iec_units_by_the_confs_release():
    assert cv.get_size_mib(make_conf(version="4.2.1"), "k", "2gib") == 2048
    with pytest.raises(SparkConfError, match=r"needs Spark 4\.2 or later"):
        cv.get_size_mib(make_conf(version="4.1.4"), "k", "2gib")
    with pytest.raises(SparkConfError, match=r"needs Spark 4\.2 or later"):
        cv.get_size_mib({}, "k", "2gib")  # a plain mapping knows no release


@pytest.mark.parametrize(
    "value", ["-1g", "1.5g", "g", "1x", "1 g", "", "1gib", "99999999999999999999"]
)
def test_bad_sizes_name_key_and_value(value):
    with pytest.raises(SparkConfError) as err:
        cv.parse_size("spark.driver.memory", value, "m")
    assert err.value.key == "spark.driver.memory"
    assert err.value.value == value


# What JavaUtils.byteStringAsMb answered on each line's jars (3.5.9-4.1.4 refuse every
# one of these; 4.2.1 and 4.3.0 take them), probed while writing this.
IEC_MIB = {"2gib": 2048, "2GiB": 2048, "2gi": 2048, "2GIB": 2048, "512mi": 512, "512MiB": 512,
           "1kib": 0, "1ki": 0, "1tib": 1 << 20, "1pi": 1 << 30, " 2gib ": 2048, "0gib": 0}  # fmt: skip


@pytest.mark.parametrize(("value", "mib"), IEC_MIB.items())
def test_iec_units_are_sizes_from_spark_4_2_on(value, mib):
    assert cv.parse_size("spark.driver.memory", value, "m", iec=True) == mib
    with pytest.raises(SparkConfError, match=r"needs Spark 4\.2 or later"):
        cv.parse_size("spark.driver.memory", value, "m")


@pytest.mark.parametrize("value", ["1bi", "1ib", "1eib", "2gibb", "2gbi", "1.5gib", "-1gib"])
def test_what_4_2_still_refuses(value):
    with pytest.raises(SparkConfError):
        cv.parse_size("spark.driver.memory", value, "m", iec=True)


def test_which_releases_take_iec_units():
    assert [cv.iec_sizes(v) for v in ("3.5.9", "4.0.5", "4.1.4", "4.2.0", "4.3.0-preview1")] == [
        False, False, False, True, True,
    ]  # fmt: skip


def test_time_strings():
    assert cv.parse_time_ms("k", "1s") == 1000
    assert cv.parse_time_ms("k", "500ms") == 500
    assert cv.parse_time_ms("k", "2min") == 120_000
    assert cv.parse_time_ms("k", "10", "s") == 10_000
    with pytest.raises(SparkConfError):
        cv.parse_time_ms("k", "1 sec")


def test_ints_follow_java_parse_int():
    assert cv.get_int({"k": " 7 "}, "k", 1) == 7
    assert cv.get_int({"k": "+7"}, "k", 1) == 7
    assert cv.get_int({}, "k", 3) == 3
    with pytest.raises(SparkConfError):
        cv.get_int({"k": " 7"}, "k", 1, trim=False)
    with pytest.raises(SparkConfError):
        cv.get_int({"k": "2147483648"}, "k", 1)
    with pytest.raises(SparkConfError):
        cv.get_int({"k": "1.0"}, "k", 1)


def test_doubles_and_java_formatting():
    assert cv.get_double({"k": "0.4"}, "k") == 0.4
    assert cv.get_double({"k": "1d"}, "k") == 1.0
    assert cv.get_double({"k": " .5 "}, "k") == 0.5
    assert cv.get_double({}, "k", 0.1) == 0.1
    with pytest.raises(SparkConfError):
        cv.get_double({"k": "1_0"}, "k")
    with pytest.raises(SparkConfError):
        cv.get_double({"k": "ten"}, "k")
    expected = {
        0.1: "0.1",
        0.4: "0.4",
        1.0: "1.0",
        1e-4: "1.0E-4",
        1e7: "1.0E7",
        0.001: "0.001",
        1234567.0: "1234567.0",
        12345678.9: "1.23456789E7",
        100.0: "100.0",
        0.0: "0.0",
    }
    for value, text in expected.items():
        assert cv.java_double_to_string(value) == text


def test_booleans_are_case_insensitive_and_strict():
    assert cv.get_bool({"k": "TRUE"}, "k", False) is True
    assert cv.get_bool({"k": "False"}, "k", True) is False
    assert cv.get_bool({}, "k", True) is True
    with pytest.raises(SparkConfError):
        cv.get_bool({"k": "yes"}, "k", False)


def test_lists():
    assert cv.get_list({"k": " a, ,b ,,c "}, "k") == ["a", "b", "c"]
    assert cv.get_list({}, "k") == []


@pytest.mark.parametrize("value", ["0.5", "500m", "2", "1.5", "100", "1e3", "2Ki"])
def test_valid_core_quantities_pass_verbatim(value):
    assert cv.get_cores_quantity({"k": value}, "k") == value


@pytest.mark.parametrize("value", ["-1", "abc", "1 cpu", "", "0.5.1", "m"])
def test_invalid_core_quantities(value):
    with pytest.raises(SparkConfError):
        cv.get_cores_quantity({"k": value}, "k")


def test_label_and_annotation_validation():
    assert cv.validate_labels("p.", {"app": "x", "example.com/team": "a_b.c-d", "e": ""})
    for key in ["-a", "a/", "/a", "Example.com/a", "a" * 64]:
        with pytest.raises(SparkConfError) as err:
            cv.validate_label_key("p." + key, key)
        assert err.value.key == "p." + key
    for value in ["-x", "x-", "a b", "a" * 64]:
        with pytest.raises(SparkConfError):
            cv.validate_label_value("p.k", value)
    assert cv.validate_annotation_key("p.A", "Example.com/Note") == "Example.com/Note"
    with pytest.raises(SparkConfError):
        cv.validate_annotation_key("p.a b", "a b")
    with pytest.raises(SparkConfError):
        cv.validate_annotations("p.", {"a": "x" * (256 * 1024)})
