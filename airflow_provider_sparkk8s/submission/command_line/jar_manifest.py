"""The main class of a jar given without `--class`, read as spark-submit reads it.

spark-submit opens the primary resource through Hadoop's FileSystem, reads it with
`JarInputStream` and takes the manifest's `Main-Class` (the app, without `--name`, is still
named after the jar's file: spark-submit names it first). It refuses, before any request:
- a file that does not exist;
- a jar whose stream does not start with its manifest (JarInputStream looks at the first
  entry, or at the second after a `META-INF/` directory), and a file that is not a jar: the
  manifest is null;
- a manifest without `Main-Class` ("No main class set in JAR").
We read local jars (a path or `file:`). For `local:` spark-submit refuses too (Hadoop knows no
such file system); for a remote jar (`https:`, `s3a:`) it would fetch the jar to read it: we
ask for `--class` instead of fetching anything before the submission.

The shell's `read_jar` finds the manifest's bytes; everything else here is pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.upload_plan import local_path
from airflow_provider_sparkk8s.submission.uris import uri_scheme

_ACCEPTED = "the main class (--class), or a local jar whose manifest names one (Main-Class)"
_SPARK_SAYS = "spark-submit: Failed to get main class in JAR"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@record
class JarFile:
    """What the shell found at a jar's path."""

    exists: bool
    manifest: bytes | None = None  # None: not where JarInputStream looks, or not a jar


ReadJar = Callable[[str], JarFile]


def no_jars(path: str) -> JarFile:
    """The default `read_jar` of the pure parser: no file exists."""
    return JarFile(exists=False)


def main_attributes(manifest: bytes) -> dict[str, str]:
    """The manifest's main section as java.util.jar.Manifest reads it: `Name: value` lines
    (names case-insensitive, kept here in lower case), a line starting with one space
    continues the one before, a blank line ends the section."""
    attributes: dict[str, str] = {}
    last: str | None = None
    for line in _LINE_BREAK.split(manifest.decode("utf-8", errors="replace")):
        if not line:
            break
        if line.startswith(" ") and last is not None:
            attributes[last] += line[1:]
            continue
        name, separator, value = line.partition(": ")
        if not separator:
            raise ValueError(f"invalid manifest header {line!r}")
        last = name.lower()
        attributes[last] = value
    return attributes


def main_class_from_jar(primary: str, read_jar: ReadJar) -> str:
    """The jar's `Main-Class`; a SparkConfError naming the jar and why when there is none."""
    scheme = uri_scheme(primary)
    if scheme not in (None, "file"):
        why = (
            f"{primary}: spark-submit cannot read a local: jar's manifest either"
            if scheme == "local"
            else f"{primary}: only a local jar's manifest is read; give the class of a "
            f"{scheme}: jar"
        )
        raise SparkConfError("--class", None, _ACCEPTED, why)
    path = local_path(primary)
    jar = read_jar(path)
    if not jar.exists:
        raise SparkConfError("--class", None, _ACCEPTED, f"{path} does not exist; {_SPARK_SAYS}")
    if jar.manifest is None:
        raise SparkConfError(
            "--class", None, _ACCEPTED,
            f"{path} is not a jar that starts with its manifest; {_SPARK_SAYS}",
        )  # fmt: skip
    try:
        main_class = main_attributes(jar.manifest).get("main-class")
    except ValueError as error:
        raise SparkConfError("--class", None, _ACCEPTED, f"{path}: {error}") from None
    if not main_class:
        raise SparkConfError(
            "--class", None, _ACCEPTED,
            f"{path}: its manifest has no Main-Class; spark-submit: No main class set in JAR",
        )  # fmt: skip
    return main_class


def read_jar(path: str) -> JarFile:
    """IMPURE: the shell's `read_jar`: the manifest where JarInputStream finds it (the
    first entry in the file, or the second after `META-INF/`)."""
    import zipfile  # here: only a local jar without --class is read (zipfile pulls in bz2, lzma)

    try:
        with zipfile.ZipFile(path) as jar:
            entries = sorted(jar.infolist(), key=lambda entry: entry.header_offset)
            if entries and entries[0].filename.upper() == "META-INF/":
                entries = entries[1:]
            if not entries or entries[0].filename.upper() != "META-INF/MANIFEST.MF":
                return JarFile(exists=True)
            return JarFile(exists=True, manifest=jar.read(entries[0]))
    except FileNotFoundError:
        return JarFile(exists=False)
    except (zipfile.BadZipFile, OSError):
        return JarFile(exists=True)
