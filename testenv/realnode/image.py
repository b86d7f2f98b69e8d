"""Real OCI images for the real node, built from local files: no registry, no Docker.

An image is one uncompressed layer laid out from files of this machine, packed as a
docker-archive tar (`ctr images import` reads it; gzip would cost more on two busy cores than
the import saves), and cached under ~/.cache/sparkk8s-realnode/images keyed by its inputs:

    pause       the sandbox image: testenv/cmd/pause, built by testenv/build.sh
    shell       bash and a few coreutils with their libraries (plain pods in tests)
    spark:<v>   shell, plus Debian's JRE 17 and Python 3.11, and pyspark <v>'s Spark
                distribution laid out as the apache/spark images lay it out: /opt/spark,
                /opt/entrypoint.sh (testenv/image/entrypoint.sh), our programs in
                /opt/sparkk8s/examples, user 185, work dir /opt/spark/work-dir; Python's
                bytecode for the standard library and pyspark's zips (bytecode.py)

Libraries come from `ldd` of every ELF file the image holds; symlinks are followed, so the
image holds files only (Debian's JDK points into /etc).

    python -m testenv.realnode.image [VERSION ...]   # builds and prints the tars (4.3.0)
    python -m testenv.realnode.image --all           # every line a real-node test runs

A node imports pause, shell and spark:4.3.0 when it starts; another line's image only when a
test asks for it (`RealNode.ensure_spark_image`).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from testenv.binaries import find_binaries
from testenv.realnode import bytecode
from testenv.runtime_image import (
    RUNTIME_VERSIONS,
    SPARK_VERSION,
    pyspark_venv,
    spark_image,
)

SPARK_UID = 185  # the apache/spark images' user
PAUSE_IMAGE = "sparkk8s.local/pause:1"
SHELL_IMAGE = "sparkk8s.local/shell:1"
JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
PYTHON = "/usr/bin/python3.11"
TOOLS = (
    "bash", "env", "cat", "dirname", "basename", "uname", "sed", "sort", "grep", "ls",
    "mkdir", "rm", "head", "tail", "tr", "id", "readlink", "echo", "sleep", "cp", "mv",
    "chmod", "true", "false", "wc", "date", "ps", "hostname", "touch", "nproc", "tar", "gzip",
)  # fmt: skip
# Parts of the JDK a JRE does not need (compiler symbols, sources, modules to link).
JDK_SKIP = ("jmods", "include", "man", "docs", "legal", "lib/src.zip", "lib/ct.sym")
# The standard library keeps Debian's bytecode (its __pycache__), and its files their times:
# a timestamp pyc is used only while its source has the time it was compiled from, and a
# layer dated 0 made every pod's Python compile each module it imported.
PYTHON_SKIP = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3")
PYTHON_LIB = "usr/lib/python3.11"
# pyspark's and py4j's zips, which Spark puts on a pod's PYTHONPATH (testenv/realnode/bytecode.py).
PYSPARK_ZIPS = "opt/spark/python/lib"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ETC_FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/bash\nspark:x:185:185:spark:/home/spark:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "etc/group": "root:x:0:\nspark:x:185:\nnogroup:x:65534:\n",
    "etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
}
# Debian is merged-/usr: these are symlinks in the image as on the host.
ROOT_LINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}


def cache_root() -> Path:
    default = Path.home() / ".cache" / "sparkk8s-realnode" / "images"
    return Path(os.environ.get("SPARKK8S_REALNODE_IMAGES", default))


@dataclass
class Layout:
    """What goes into the layer: files copied from the host (arcname -> source), files
    written from text, directories with their owner and mode, and symlinks."""

    files: dict[str, Path] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    text_modes: dict[str, int] = field(default_factory=dict)  # arcname -> mode, else 0o644
    dirs: dict[str, tuple[int, int]] = field(default_factory=dict)  # arcname -> (uid, mode)
    links: dict[str, str] = field(default_factory=dict)
    libraries: set[str] = field(default_factory=set)  # host paths, beside the files' own
    dated: tuple[str, ...] = ()  # arcname prefixes whose files keep their time, not 0

    def add_tree(self, source: Path, arcname: str, skip: Iterable[str] = ()) -> None:
        """Every file under `source` (symlinks followed), at `arcname`."""
        skipped = tuple(skip)
        for directory, subdirs, names in os.walk(source, followlinks=True):
            relative = Path(directory).relative_to(source)
            subdirs[:] = [
                d for d in subdirs if not _skipped(relative / d, skipped) and d not in skipped
            ]
            for name in names:
                path = Path(directory) / name
                if _skipped(relative / name, skipped) or not path.exists():
                    continue  # a dangling symlink (Debian's JDK has a few)
                self.files[str(Path(arcname) / relative / name)] = path

    def add_host_file(self, path: str) -> None:
        self.files[path.lstrip("/")] = Path(path)


def _skipped(relative: Path, skip: tuple[str, ...]) -> bool:
    return str(relative) in skip


def _ldd_closure(binaries: Iterable[Path]) -> set[str]:
    """The libraries (host paths, resolved into /usr) that the ELF files need."""
    elves = [str(path) for path in binaries if _is_elf(path)]
    libraries: set[str] = set()
    for start in range(0, len(elves), 200):
        completed = subprocess.run(
            ["ldd", *elves[start : start + 200]], capture_output=True, text=True, check=False
        )
        for line in completed.stdout.splitlines():
            parts = line.split()
            if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
                libraries.add(parts[2])
            elif parts and parts[0].startswith("/") and len(parts) == 2:
                libraries.add(parts[0])  # the dynamic loader
    return libraries


# Other systems' builds that jars carry beside Linux's (ldd cannot read them).
FOREIGN_NATIVE = ("freebsd", "sunos", "musl", "darwin", "osx", "windows", "aix")


def jar_native_libraries(jars: Iterable[Path]) -> set[str]:
    """The libraries (host paths) that the Linux x86-64 native code inside `jars` needs:
    zstd-jni, snappy-java, lz4-java, netty... are unpacked by the JVM at run time, so their
    needs (libpthread.so.0, librt.so.1, ...) are in no ldd closure of the image's files."""
    with tempfile.TemporaryDirectory(prefix="sparkk8s-jar-native-") as tmp:
        unpacked: list[Path] = []
        for jar in jars:
            with zipfile.ZipFile(jar) as archive:
                for name in archive.namelist():
                    lowered = name.lower()
                    if (
                        lowered.endswith(".so")
                        and any(arch in lowered for arch in ("amd64", "x86_64", "x86-64"))
                        and not any(other in lowered for other in FOREIGN_NATIVE)
                    ):
                        target = Path(tmp) / str(len(unpacked)) / Path(name).name
                        target.parent.mkdir()
                        target.write_bytes(archive.read(name))
                        unpacked.append(target)
        return _ldd_closure(unpacked)


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(4) == b"\x7fELF"
    except OSError:
        return False


def shell_layout() -> Layout:
    layout = Layout()
    for tool in TOOLS:
        for directory in ("/usr/bin", "/usr/sbin", "/bin"):
            if os.path.exists(f"{directory}/{tool}"):
                layout.files[f"usr/bin/{tool}"] = Path(f"{directory}/{tool}")
                break
    layout.links["usr/bin/sh"] = "bash"
    layout.links.update(ROOT_LINKS)
    layout.texts.update(ETC_FILES)
    # As Spark's own images: group root may add the entry of a uid the image does not know
    # (a pod's runAsUser runs with group 0 unless it sets runAsGroup; testenv/image/entrypoint.sh).
    layout.text_modes["etc/passwd"] = 0o664
    layout.texts["etc/hosts"] = "127.0.0.1\tlocalhost\n"
    for directory in ("tmp",):
        layout.dirs[directory] = (0, 0o1777)
    for directory in ("proc", "sys", "dev", "etc", "root", "var", "usr/lib64"):
        layout.dirs.setdefault(directory, (0, 0o755))
    layout.dirs["home/spark"] = (SPARK_UID, 0o755)
    return layout


def spark_layout(version: str) -> Layout:
    layout = shell_layout()
    layout.add_tree(Path(JAVA_HOME), JAVA_HOME.lstrip("/"), JDK_SKIP)
    layout.files[PYTHON.lstrip("/")] = Path(PYTHON)
    layout.links["usr/bin/python3"] = "python3.11"
    layout.links["usr/bin/python"] = "python3.11"
    layout.add_tree(Path("/usr/lib/python3.11"), PYTHON_LIB, PYTHON_SKIP)
    layout.dated = (f"{PYTHON_LIB}/",)
    # The runtime tree (testenv/runtime_image.py) holds the distribution's directories as
    # symlinks into pyspark's package, our entrypoint and programs, and the JVM example jar.
    images = json.loads(spark_image(version).read_text())
    tree = Path(images[f"sparkk8s/spark:{version}"]["tree"])
    layout.add_tree(tree / "opt", "opt")
    for source in sorted((tree / PYSPARK_ZIPS).glob("*.zip")):
        image_path = f"/{PYSPARK_ZIPS}/{source.name}"
        layout.files[image_path.lstrip("/")] = bytecode.zip_with_bytecode(
            source, image_path, PYTHON, cache_root() / "bytecode"
        )
    layout.libraries |= jar_native_libraries(sorted((tree / "opt/spark/jars").glob("*.jar")))
    layout.dirs["opt/spark/work-dir"] = (SPARK_UID, 0o775)
    layout.dirs["opt/spark/conf"] = (0, 0o755)
    return layout


def _with_libraries(layout: Layout) -> Layout:
    """Adds each library at the path the loader looks for (the soname's symlink, not the
    versioned file it points to), moved into /usr as the merged-/usr links expect."""
    for library in _ldd_closure(layout.files.values()) | layout.libraries:
        arc = os.path.normpath(library).lstrip("/")
        if arc.startswith(("lib/", "lib64/")):
            arc = "usr/" + arc
        layout.files.setdefault(arc, Path(library))
    return layout


def _parents(arcname: str) -> Iterator[str]:
    parts = Path(arcname).parts[:-1]
    for index in range(1, len(parts) + 1):
        yield str(Path(*parts[:index]))


def write_layer(layout: Layout, out: Path) -> str:
    """Writes the layer tar (sorted, dated 0, owned by root unless said) and returns its
    sha256 digest (the image's diff_id)."""
    entries: dict[str, tuple[str, object]] = {}
    for arc, (uid, mode) in layout.dirs.items():
        entries[arc] = ("dir", (uid, mode))
    for arc in (*layout.dirs, *layout.files, *layout.texts, *layout.links):
        for parent in _parents(arc):
            if parent not in layout.links:
                entries.setdefault(parent, ("dir", (0, 0o755)))
    for arc, source in layout.files.items():
        entries[arc] = ("file", source)
    for arc, text in layout.texts.items():
        entries[arc] = ("text", (text, layout.text_modes.get(arc, 0o644)))
    for arc, target in layout.links.items():
        entries[arc] = ("link", target)
    digest = hashlib.sha256()
    with open(out, "wb") as raw:
        hashing = _HashingWriter(raw, digest)
        with tarfile.open(fileobj=hashing, mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
            for arc in sorted(entries):
                _add(tar, arc, *entries[arc], dated=arc.startswith(layout.dated))
    return digest.hexdigest()


def _add(tar: tarfile.TarFile, arc: str, kind: str, value: object, dated: bool) -> None:
    info = tarfile.TarInfo(arc)
    info.mtime = 0
    if kind == "dir":
        assert isinstance(value, tuple)
        uid, mode = int(value[0]), int(value[1])
        info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, mode, uid, uid
        tar.addfile(info)
    elif kind == "link":
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, str(value), 0o777
        tar.addfile(info)
    elif kind == "text":
        assert isinstance(value, tuple)
        data = str(value[0]).encode()
        info.size, info.mode = len(data), int(value[1])
        tar.addfile(info, io.BytesIO(data))
    else:
        source = Path(str(value))
        stat = source.stat()
        info.size, info.mode = stat.st_size, stat.st_mode & 0o7777
        info.mtime = int(stat.st_mtime) if dated else 0
        with open(source, "rb") as file:
            tar.addfile(info, file)


class _HashingWriter(io.RawIOBase):
    def __init__(self, sink: io.BufferedWriter, digest: hashlib._Hash) -> None:
        self.sink, self.digest = sink, digest

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.digest.update(data)
        return self.sink.write(data)


def image_config(
    diff_id: str, entrypoint: list[str], user: str, workdir: str, env: list[str]
) -> dict[str, object]:
    return {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {"Env": env, "Entrypoint": entrypoint, "User": user, "WorkingDir": workdir},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
    }


def pack_archive(
    out: Path, layer: Path, diff_id: str, config: dict[str, object], name: str
) -> None:
    """The docker-archive tar: the layer, the config and a manifest naming the image."""
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [name], "Layers": [f"{diff_id}/layer.tar"]}]
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for arc, data in (
            (config_name, config_bytes),
            ("manifest.json", json.dumps(manifest).encode()),
        ):
            info = tarfile.TarInfo(arc)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        tar.add(layer, arcname=f"{diff_id}/layer.tar")


@dataclass(frozen=True)
class ImageSpec:
    name: str  # as containerd names it (docker.io/... for a short name)
    entrypoint: list[str]
    user: str
    workdir: str
    env: list[str]
    inputs: tuple[str, ...]  # what the cache key covers, besides this module's own source


def _file_key(path: Path) -> str:
    stat = path.stat()
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


def spark_spec(version: str) -> ImageSpec:
    venv = pyspark_venv(version)
    record = next(venv.glob(f"lib/python*/site-packages/pyspark-{version}.dist-info/RECORD"))
    images = json.loads(spark_image(version).read_text())
    return ImageSpec(
        name=f"docker.io/sparkk8s/spark:{version}",
        entrypoint=["/opt/entrypoint.sh"],
        user=str(SPARK_UID),
        workdir="/opt/spark/work-dir",
        env=[
            f"PATH=/opt/spark/bin:{JAVA_HOME}/bin:{DEFAULT_PATH}",
            "SPARK_HOME=/opt/spark",
            f"JAVA_HOME={JAVA_HOME}",
            "LANG=C.UTF-8",
        ],
        inputs=(
            f"spark {version}",
            hashlib.sha256(record.read_bytes()).hexdigest(),
            images[f"sparkk8s/spark:{version}"]["tree"],  # named by our sources' digest
            _file_key(Path(JAVA_HOME) / "release"),
            _file_key(Path(JAVA_HOME) / "lib" / "modules"),
            _file_key(Path(PYTHON)),
            *(
                _file_key(Path(f"/usr/bin/{tool}"))
                for tool in TOOLS
                if Path(f"/usr/bin/{tool}").exists()
            ),
        ),
    )


def shell_spec() -> ImageSpec:
    return ImageSpec(
        name=f"{SHELL_IMAGE}",
        entrypoint=[],
        user="0",
        workdir="/",
        env=[f"PATH={DEFAULT_PATH}"],
        inputs=tuple(
            _file_key(Path(f"/usr/bin/{tool}"))
            for tool in TOOLS
            if Path(f"/usr/bin/{tool}").exists()
        ),
    )


def pause_spec() -> ImageSpec:
    return ImageSpec(
        name=PAUSE_IMAGE,
        entrypoint=["/pause"],
        user="65534",
        workdir="/",
        env=[],
        inputs=(_file_key(find_binaries() / "pause"),),
    )


def _layout(spec: ImageSpec) -> Layout:
    if spec.name == PAUSE_IMAGE:
        layout = Layout()
        layout.files["pause"] = find_binaries() / "pause"
        return layout
    if spec.name == SHELL_IMAGE:
        return _with_libraries(shell_layout())
    return _with_libraries(spark_layout(spec.name.rsplit(":", 1)[1]))


def image_key(spec: ImageSpec) -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(Path(bytecode.__file__).read_bytes())
    digest.update(
        json.dumps(
            [spec.name, spec.entrypoint, spec.user, spec.workdir, spec.env, spec.inputs]
        ).encode()
    )
    return digest.hexdigest()[:12]


def build_image(spec: ImageSpec) -> Path:
    """The image's docker-archive tar, built (under a lock) unless cached."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    safe = spec.name.replace("/", "_").replace(":", "_")
    out = root / f"{safe}-{image_key(spec)}.tar"
    with open(root / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.exists():
            return out
        started = time.monotonic()
        layer = root / f".{safe}.layer.tar"
        partial = root / f".{safe}.partial.tar"
        try:
            diff_id = write_layer(_layout(spec), layer)
            config = image_config(diff_id, spec.entrypoint, spec.user, spec.workdir, spec.env)
            pack_archive(partial, layer, diff_id, config, spec.name)
            partial.rename(out)
            _prune(root, safe, keep=out)
        finally:
            layer.unlink(missing_ok=True)
            partial.unlink(missing_ok=True)
        print(
            f"built image {spec.name} in {time.monotonic() - started:.1f}s: {out}", file=sys.stderr
        )
    return out


def _prune(root: Path, safe: str, keep: Path) -> None:
    """Older builds of the same image (other inputs) go, but the newest of them stays: a
    checkout on older sources may still be importing it (the Spark tar is ~760 MB)."""
    older = sorted(
        (p for p in root.glob(f"{safe}-*.tar") if p != keep), key=lambda p: p.stat().st_mtime
    )
    for path in older[:-1]:
        path.unlink(missing_ok=True)


def node_images(versions: Iterable[str] = (SPARK_VERSION,)) -> list[tuple[str, Path]]:
    """Every image the real node imports: pause, shell, and Spark for each version."""
    specs = [pause_spec(), shell_spec(), *(spark_spec(version) for version in versions)]
    return [(spec.name, build_image(spec)) for spec in specs]


if __name__ == "__main__":
    arguments = sys.argv[1:]
    versions = RUNTIME_VERSIONS if arguments == ["--all"] else (arguments or (SPARK_VERSION,))
    for name, path in node_images(versions):
        print(name, path)
