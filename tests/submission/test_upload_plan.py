"""The upload planner: which entries are uploaded and how every setting is rewritten."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.java_text import java_file_name
from airflow_provider_sparkk8s.submission.upload_plan import (
    built_uri,
    local_path,
    local_upload_path_warning,
    plan_uploads,
    upload_dir_names,
)
from tests.support.driver_conf import IDS, make_conf

UP = "s3a://bucket/up"
UUID_DIR = re.compile(
    r"spark-upload-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
)


def plan(extra, **kwargs):
    return plan_uploads(make_conf({"spark.kubernetes.file.upload.path": UP, **extra}, **kwargs))


def test_folder_names_are_v4_uuids_repeatable_per_seed():
    first = upload_dir_names(7)
    names = [next(first) for _ in range(3)]
    again = upload_dir_names(7)
    assert names == [next(again) for _ in range(3)]
    assert len(set(names)) == 3 and all(UUID_DIR.fullmatch(name) for name in names)
    assert next(upload_dir_names(8)) != names[0]


def test_order_is_jars_files_archives_pyfiles_then_main_file():
    result = plan(
        {
            "spark.submit.pyFiles": "/l/p.py",
            "spark.archives": "/l/a.zip",
            "spark.files": "/l/f.txt",
            "spark.jars": "/l/j.jar",
        },
        kind="python",
        primary="file:/l/main.py",
    )
    assert [u.key for u in result.uploads] == [
        "spark.jars", "spark.files", "spark.archives", "spark.submit.pyFiles", "primary resource",
    ]  # fmt: skip
    assert result.main_resource == result.uploads[-1].target
    assert len(set(result.directories)) == 5


def test_uploaded_entries_first_then_remote_in_their_order():
    value = "local:///a.jar,/l/b.jar,https://x/c.jar,file:///l/d.jar,spark-internal"
    result = plan({"spark.jars": value})
    jars = result.properties["spark.jars"].split(",")
    assert [u.source for u in result.uploads] == ["/l/b.jar", "/l/d.jar"]
    assert jars[:2] == [u.target for u in result.uploads]
    assert jars[2:] == ["local:///a.jar", "https://x/c.jar", "spark-internal"]
    for upload in result.uploads:
        assert upload.target == f"{upload.directory}/{java_file_name(upload.source)}"
        assert UUID_DIR.fullmatch(upload.directory.rsplit("/", 1)[1])


def test_a_setting_without_local_entries_is_not_rewritten():
    result = plan(
        {"spark.jars": "local:///a.jar", "spark.files": "", "spark.archives": "s3a://b/x"}
    )
    assert result.properties == {} and result.uploads == ()


def test_nothing_local_needs_no_upload_path():
    result = plan_uploads(make_conf({"spark.jars": "local:///a.jar,https://x/y.jar"}))
    assert result.uploads == () and result.upload_path is None


def test_same_file_twice_is_uploaded_twice():
    result = plan({"spark.files": "/l/x.txt,/l/x.txt"})
    assert len(result.uploads) == 2
    assert result.uploads[0].directory != result.uploads[1].directory


def test_archive_fragment_leaves_for_the_copy_and_comes_back():
    result = plan({"spark.archives": "file:///l/env.tar.gz#environment,/l/plain.zip"})
    env, plain = result.uploads
    assert env.source == "/l/env.tar.gz" and env.target.endswith("/env.tar.gz")
    assert result.properties["spark.archives"] == f"{env.target}#environment,{plain.target}"


def test_archive_values_go_through_the_uri_builder():
    assert built_uri("file:///up/d/my env.zip", "e") == "file:/up/d/my%20env.zip#e"
    assert built_uri("file:///up/d/données.zip", None) == "file:/up/d/donn%C3%A9es.zip"
    assert built_uri("s3a://bucket/d/a.zip", "x y") == "s3a://bucket/d/a.zip#x%20y"
    assert built_uri("/up/d/a%20b.zip", None) == "/up/d/a%20b.zip"  # escapes stay


def test_other_settings_keep_names_as_written():
    result = plan({"spark.files": "file:/l/my%20data.csv"}, kind="python", primary="/l/é job.py")
    assert result.uploads[0].source == "/l/my data.csv"
    assert result.properties["spark.files"].endswith("/my data.csv")
    assert result.main_resource is not None and result.main_resource.endswith("/é job.py")


@pytest.mark.parametrize(
    ("entry", "path"),
    [
        ("/a/b.py", "/a/b.py"),
        ("file:/a/b.py", "/a/b.py"),
        ("file:///a/b.py", "/a/b.py"),
        ("file://host/a/b.py", "/a/b.py"),
        ("file:/a/b%20c.zip#frag", "/a/b c.zip"),
    ],
)
def test_local_path_is_the_decoded_uri_path(entry, path):
    assert local_path(entry) == path


def test_upload_path_is_joined_as_written():
    result = plan_uploads(
        make_conf({"spark.kubernetes.file.upload.path": "file:///up/", "spark.files": "/l/a"})
    )
    assert result.uploads[0].target.startswith("file:///up//spark-upload-")


def test_java_main_jar_is_not_uploaded_on_its_own():
    result = plan({}, primary="file:/l/app.jar")
    assert result.uploads == () and result.main_resource is None


def test_remote_python_main_file_stays():
    assert plan({}, kind="python", primary="s3a://b/main.py").main_resource is None


def test_without_upload_path_spark_submits_refusal_names_key_and_entry():
    with pytest.raises(SparkConfError) as err:
        plan_uploads(make_conf({"spark.archives": "https://x/a.zip,/l/b.zip#b"}))
    assert (err.value.key, err.value.value) == ("spark.archives", "/l/b.zip#b")
    assert "Please specify spark.kubernetes.file.upload.path property." in str(err.value)


def test_the_seed_decides_the_folders():
    conf = make_conf({"spark.kubernetes.file.upload.path": UP, "spark.files": "/l/a"})
    other = replace(conf, ids=replace(IDS, upload_seed=IDS.upload_seed + 1))
    assert plan_uploads(conf) == plan_uploads(conf)
    assert plan_uploads(conf).directories != plan_uploads(other).directories


def _local_plan(upload_path: str):
    conf = {"spark.kubernetes.file.upload.path": upload_path, "spark.files": "/work/a.txt"}
    return plan_uploads(make_conf(conf))


def _driver_pod(volume: dict, mount_path: str) -> dict:
    return {
        "spec": {
            "volumes": [{"name": "up", **volume}, {"name": "conf", "configMap": {"name": "x"}}],
            "containers": [{"volumeMounts": [{"name": "up", "mountPath": mount_path}]}],
        }
    }


@pytest.mark.parametrize("upload_path", ["file:///tmp/up", "/tmp/up", "file:/tmp/up"])
def test_a_local_upload_path_under_the_temp_folder_warns_of_the_driver_mount(upload_path):
    warning = local_upload_path_warning(_local_plan(upload_path), {"spec": {}}, "/tmp")
    assert warning is not None
    assert warning.startswith(f"spark.kubernetes.file.upload.path={upload_path} ")
    assert "must be storage mounted in the driver" in warning
    assert "temp folder (/tmp)" in warning


def test_a_local_upload_path_elsewhere_warns_without_the_temp_folder():
    warning = local_upload_path_warning(_local_plan("file:///shared/up"), {}, "/var/tmp")
    assert warning is not None and "/shared/up in its own pod" in warning
    assert "temp folder" not in warning


@pytest.mark.parametrize(
    ("volume", "mount_path"),
    [
        ({"persistentVolumeClaim": {"claimName": "c"}}, "/shared"),
        ({"hostPath": {"path": "/shared"}}, "/shared/up"),
        ({"nfs": {"server": "n", "path": "/"}}, "/shared/"),
    ],
)
def test_a_shared_volume_mounted_over_the_upload_path_silences_it(volume, mount_path):
    pod = _driver_pod(volume, mount_path)
    assert local_upload_path_warning(_local_plan("file:///shared/up"), pod, "/tmp") is None


@pytest.mark.parametrize(
    ("volume", "mount_path"),
    [
        ({"emptyDir": {}}, "/shared"),  # the pod's own, not the submitter's
        ({"hostPath": {"path": "/x"}}, "/shared/upload"),  # a sibling, not a parent
    ],
)
def test_a_mount_that_does_not_share_the_upload_path_still_warns(volume, mount_path):
    pod = _driver_pod(volume, mount_path)
    assert local_upload_path_warning(_local_plan("file:///shared/up"), pod, "/tmp") is not None


def test_an_object_store_or_no_uploads_never_warn():
    assert local_upload_path_warning(plan({"spark.files": "/work/a.txt"}), {}, "/tmp") is None
    nothing = plan_uploads(make_conf({"spark.kubernetes.file.upload.path": "file:///tmp/up"}))
    assert local_upload_path_warning(nothing, {}, "/tmp") is None
