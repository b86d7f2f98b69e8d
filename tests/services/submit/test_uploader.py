"""The fsspec shell: all uploads or none, sizes checked, secrets kept out of messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.services.submit.uploader import (
    Storage,
    UploadError,
    check_backend,
    upload_all,
)
from airflow_provider_sparkk8s.submission.upload_plan import plan_uploads
from tests.support.driver_conf import make_conf


def make_plan(tmp_path, files, upload_path=None):
    for name in files:
        (tmp_path / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / name).write_bytes(name.encode() * 3)
    entries = ",".join(f"file:{tmp_path}/src/{name}" for name in files)
    path = upload_path or f"file://{tmp_path}/up"
    conf = make_conf({"spark.kubernetes.file.upload.path": path, "spark.files": entries})
    return plan_uploads(conf)


def tree(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_every_file_lands_in_its_folder_byte_for_byte(tmp_path):
    plan = make_plan(tmp_path, ["a.txt", "b.bin"])
    seen = []
    done = upload_all(plan, Storage(), on_upload=seen.append)
    assert seen == list(plan.uploads)
    for upload in plan.uploads:
        target = Path(upload.target[len("file://") :])
        assert target.read_bytes() == Path(upload.source).read_bytes()
    assert len(tree(tmp_path / "up")) == 2
    assert done.remove() == []
    assert tree(tmp_path / "up") == []


def test_missing_source_is_refused_before_anything_is_written(tmp_path):
    plan = make_plan(tmp_path, ["a.txt", "b.txt"])
    (tmp_path / "src" / "b.txt").unlink()
    with pytest.raises(SparkConfError) as err:
        upload_all(plan, Storage())
    assert err.value.key == "spark.files" and err.value.value.endswith("/b.txt")
    assert not (tmp_path / "up").exists()


def test_directory_source_is_refused(tmp_path):
    plan = make_plan(tmp_path, ["a.txt"])
    source = tmp_path / "src" / "a.txt"
    source.unlink()
    source.mkdir()
    with pytest.raises(SparkConfError, match="it is a directory"):
        upload_all(plan, Storage())


class FailingOnSecond:
    """A local file system that fails the second write half-way, naming a secret."""

    def __init__(self, real):
        self.real = real
        self.puts = 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def put_file(self, source, target):
        self.puts += 1
        if self.puts == 2:
            with open(target, "wb") as handle:
                handle.write(b"half")
            raise OSError("disk full (key s3cr3t)")
        self.real.put_file(source, target)


class FailingStorage(Storage):
    def filesystem(self, url):
        fs, path = super().filesystem(url)
        self.__dict__.setdefault("fs", FailingOnSecond(fs))
        return self.__dict__["fs"], path


def test_a_failed_upload_removes_everything_and_hides_secrets(tmp_path):
    plan = make_plan(tmp_path, ["a.txt", "b.txt", "c.txt"])
    with pytest.raises(UploadError) as err:
        upload_all(plan, FailingStorage(secrets=("s3cr3t",)))
    message = str(err.value)
    assert "b.txt" in message and "spark.files" in message and "nothing was left" in message
    assert "s3cr3t" not in message and "***" in message
    assert tree(tmp_path / "up") == []


def test_short_write_is_caught(tmp_path):
    plan = make_plan(tmp_path, ["a.txt"])

    class Short(FailingOnSecond):
        def put_file(self, source, target):
            with open(target, "wb") as handle:
                handle.write(b"x")

    class ShortStorage(Storage):
        def filesystem(self, url):
            fs, path = super().filesystem(url)
            return Short(fs), path

    with pytest.raises(UploadError, match="holds 1 bytes after the upload, not 15"):
        upload_all(plan, ShortStorage())
    assert tree(tmp_path / "up") == []


def test_unknown_scheme_and_missing_extra_are_named(monkeypatch):
    with pytest.raises(SparkConfError) as err:
        check_backend("hdfs://nn/up")
    assert err.value.key == "spark.kubernetes.file.upload.path"
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gcsfs" else real(name, *a)
    )
    with pytest.raises(SparkConfError, match=r"\[gcs\] extra") as err:
        check_backend("gs://bucket/up")
    assert err.value.value == "gs://bucket/up"


def test_storage_repr_holds_no_credentials():
    storage = Storage({"s3": {"key": "AKIA", "secret": "hush"}}, secrets=("hush",))
    assert "hush" not in repr(storage) and "AKIA" not in repr(storage)
