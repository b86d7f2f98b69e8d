"""What an upload and `--packages` add to a submission: `sparkk8s-submit` against real
`spark-submit` 4.3.0, side by side, the same files and the same recording endpoint.

Uploads: each tool submits the same PySpark application twice, once with its files in the
image (`local://`, nothing to upload) and once as local files uploaded to a `file://` path
(Hadoop's LocalFileSystem for spark-submit, fsspec for us). The difference is the time the
upload adds. Packages: the same application with and without `--packages`; spark-submit
resolves them with Ivy on its side (here from a Maven-layout folder named by an Ivy settings
file, so the figure is a floor: a real repository adds the network), we only pass them on.

    python -m benchmarks.bench_uploads [--runs 5] [--mib 8]

Runs alternate between the tools; medians are printed as a Markdown table with the load.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_submit import Sample, run_child
from testenv.harness.oracle import oracle_environment, spark_submit_path
from testenv.harness.recorder import RecordingServer

SPARK_LINE = "4.3.0"
BASE = [
    "--deploy-mode", "cluster", "--name", "bench-uploads",
    "--conf", "spark.kubernetes.container.image=apache/spark:4.0.0",
    "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
]  # fmt: skip
POM = (
    '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
    "<groupId>com.example</groupId><artifactId>{name}</artifactId><version>1.0</version>"
    "</project>\n"
)


def make_files(root: Path, mib: int) -> dict[str, Path]:
    """A main .py, two --py-files, a --files entry and an archive of `mib` MiB (random)."""
    files = {
        "main": root / "etl.py",
        "helpers": root / "helpers.py",
        "deps": root / "deps.zip",
        "conf": root / "app.conf",
        "archive": root / "env.tar.gz",
    }
    files["main"].write_text("from helpers import run\nrun()\n")
    files["helpers"].write_text("def run():\n    print('etl')\n")
    files["deps"].write_bytes(secrets.token_bytes(256 * 1024))
    files["conf"].write_text("mode=batch\n")
    files["archive"].write_bytes(secrets.token_bytes(mib * 1024 * 1024))
    return files


def upload_args(files: dict[str, Path], up: Path, local: bool) -> list[str]:
    if not local:  # the same application, its files already in the image
        return [
            "--py-files", "local:///opt/app/helpers.py,local:///opt/app/deps.zip",
            "--files", "local:///opt/app/app.conf",
            "--archives", "local:///opt/app/env.tar.gz#env",
            "local:///opt/app/etl.py",
        ]  # fmt: skip
    return [
        "--conf", f"spark.kubernetes.file.upload.path=file://{up}",
        "--py-files", f"{files['helpers']},{files['deps']}",
        "--files", str(files["conf"]),
        "--archives", f"{files['archive']}#env",
        str(files["main"]),
    ]  # fmt: skip


def make_ivy_repo(root: Path, count: int) -> tuple[Path, str]:
    """An Ivy settings file and `count` packages in a Maven-layout folder."""
    repo = root / "repo"
    coordinates = []
    for index in range(count):
        name = f"dep{index}"
        folder = repo / "com" / "example" / name / "1.0"
        folder.mkdir(parents=True)
        (folder / f"{name}-1.0.pom").write_text(POM.format(name=name))
        (folder / f"{name}-1.0.jar").write_bytes(secrets.token_bytes(64 * 1024))
        coordinates.append(f"com.example:{name}:1.0")
    settings = root / "ivysettings.xml"
    settings.write_text(
        '<ivysettings><settings defaultResolver="m2"/><resolvers>'
        f'<ibiblio name="m2" m2compatible="true" root="file://{repo}"/></resolvers></ivysettings>\n'
    )
    return settings, ",".join(coordinates)


def package_args(settings: Path, coordinates: str, with_packages: bool) -> list[str]:
    args = ["--conf", f"spark.jars.ivySettings={settings}"]
    if with_packages:
        args += ["--packages", coordinates]
    return [*args, "local:///opt/app/etl.py"]


def measure(runs: int, mib: int) -> dict[tuple[str, str], list[Sample]]:
    tools = {
        "spark-submit 4.3.0": str(spark_submit_path(SPARK_LINE)),
        "sparkk8s-submit": str(Path(sys.executable).with_name("sparkk8s-submit")),
    }
    samples: dict[tuple[str, str], list[Sample]] = {}
    with tempfile.TemporaryDirectory() as tmp_name, RecordingServer() as server:
        tmp = Path(tmp_name)
        home = tmp / "home"
        home.mkdir()
        files = make_files(tmp, mib)
        settings, coordinates = make_ivy_repo(tmp, 3)
        env_theirs = oracle_environment(SPARK_LINE, {"SPARK_USER": "bench"}, home)
        env_ours = {**os.environ, "HOME": str(home), "KUBECONFIG": str(home / "none")}
        cases = {
            "in image": lambda up: upload_args(files, up, local=False),
            "uploaded": lambda up: upload_args(files, up, local=True),
            "no packages": lambda up: package_args(settings, coordinates, False),
            "3 packages": lambda up: package_args(settings, coordinates, True),
        }
        for run in range(runs):
            for tool, binary in tools.items():
                env = env_theirs if tool.startswith("spark-submit") else env_ours
                for case, arguments in cases.items():
                    up = tmp / f"up-{run}-{len(samples)}"
                    master = ["--master", f"k8s://{server.url}"]
                    argv = [binary, *master, *BASE, *arguments(up)]
                    samples.setdefault((tool, case), []).append(run_child(argv, env))
                    server.reset()
    return samples


def median_wall(samples: list[Sample]) -> float:
    return statistics.median(sample.wall for sample in samples)


def median_cpu(samples: list[Sample]) -> float:
    return statistics.median(sample.cpu for sample in samples)


def report(samples: dict[tuple[str, str], list[Sample]], mib: int) -> str:
    load = os.getloadavg()
    runs = len(next(iter(samples.values())))
    lines = [
        (
            f"Load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores); "
            f"medians of {runs} runs; archive {mib} MiB."
        ),
        "",
        (
            "| tool | measure | in image | uploaded | upload adds | no packages | 3 packages "
            "| packages add |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for tool in dict.fromkeys(tool for tool, _ in samples):
        # CPU (user + system of the process tree) shows the work; wall time what a user waits.
        for measure, median in (("wall", median_wall), ("CPU", median_cpu)):
            v = {case: median(samples[(tool, case)]) for _, case in samples if _ == tool}
            lines.append(
                f"| {tool} | {measure} | {v['in image']:.2f} s | {v['uploaded']:.2f} s | "
                f"{v['uploaded'] - v['in image']:+.2f} s | {v['no packages']:.2f} s | "
                f"{v['3 packages']:.2f} s | {v['3 packages'] - v['no packages']:+.2f} s |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mib", type=int, default=8, help="size of the uploaded archive")
    args = parser.parse_args()
    print(report(measure(args.runs, args.mib), args.mib))


if __name__ == "__main__":
    main()
