"""Which Spark release's objects to build: given, else read from the image's tag.

The objects differ by Spark line (3.5 has no NetworkPolicy, no spark-connect port, other
labels), so an `apache/spark:3.5.1` image must not get 4.3's. The official images say
their release in the tag:

- `apache/spark:3.5.1`, `apache/spark:4.0.1-scala2.13-java17-python3-ubuntu`,
  `spark:3.5.6-java17` (Docker's official image, also `library/spark`, `docker.io/...`),
  `apache/spark-py:v3.4.0`, `apache/spark-r:v3.4.0` (the older images, with a `v`),
  the same names behind any registry or mirror (`ghcr.io/apache/spark-docker/spark:...`);
- the repository's last path part is `spark`, `spark-py` or `spark-r`, and the tag starts
  with `X.Y.Z` or `vX.Y.Z` (what follows a `-` is the build: Scala, Java, Python, OS,
  `preview1`); a digest (`@sha256:...`) is ignored, the tag before it is read.

Anything else (no tag, `latest`, `python3`, `{{SPARK_VERSION}}`, another repository name)
says nothing: the default line is used and the caller logs the warning we return.
Pure: strings in, a choice out.
"""

from __future__ import annotations

import re

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record

# The Spark lines whose objects we build, and the one built when nothing says which.
SUPPORTED_LINES = ((3, 5), (4, 0), (4, 1), (4, 2), (4, 3))
DEFAULT_SPARK_VERSION = "4.3.0"
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_VERSION_ACCEPTED = "a release of Spark 3.5.x, 4.0.x, 4.1.x, 4.2.x or 4.3.x, such as 4.3.0"
OFFICIAL_REPOSITORIES = ("spark", "spark-py", "spark-r")
_RELEASE_TAG = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-.*)?")
IMAGE_KEYS = ("spark.kubernetes.driver.container.image", "spark.kubernetes.container.image")


@record
class SparkLine:
    """The Spark release whose objects are built, and why."""

    version: str  # "3.5.1"
    source: str  # "set" | "image" | "default"
    image: str | None = None
    warning: str | None = None  # for the task log / stderr

    def describe(self) -> str:
        if self.source == "image":
            return f"Spark {self.version} (from the image tag of {self.image})"
        if self.source == "set":
            return f"Spark {self.version} (set)"
        return f"Spark {self.version} (the default: the image tag does not say)"


def check_spark_version(version: str) -> tuple[int, int, int]:
    """`X.Y.Z` of a supported line as numbers; anything else is refused, naming the value."""
    match = _VERSION.fullmatch(version)
    if not match or (int(match.group(1)), int(match.group(2))) not in SUPPORTED_LINES:
        raise SparkConfError("spark_version", version, _VERSION_ACCEPTED)
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def version_from_image(image: str) -> str | None:
    """`X.Y.Z` of an official Spark image's tag, None when the reference does not say."""
    reference = image.strip().split("@", 1)[0]
    path, colon, tag = reference.rpartition(":")
    if not colon or "/" in tag:  # no tag (a ':' there belongs to a registry's port)
        return None
    repository = path.rsplit("/", 1)[-1]
    match = _RELEASE_TAG.fullmatch(tag)
    if repository not in OFFICIAL_REPOSITORIES or match is None:
        return None
    return ".".join(match.groups())


def driver_image(conf: dict[str, str] | None, image: str | None = None) -> str | None:
    """The image the driver pod runs: the operator's `image`, else the driver's, else the
    common conf key (Spark's fallback order)."""
    if image:
        return image
    for key in IMAGE_KEYS:
        if (conf or {}).get(key):
            return (conf or {})[key]
    return None


def choose_spark_line(given: str | None, image: str | None, *, how_to_set: str) -> SparkLine:
    """`given` wins; else the image's tag; else the default, with a warning that names the
    line used and `how_to_set` it (`spark_version=...` or `--spark-version ...`)."""
    from_tag = version_from_image(image) if image else None
    if given:
        warning = None
        if from_tag is not None and from_tag.split(".")[:2] != given.split(".")[:2]:
            warning = (
                f"Building the objects of Spark {given} as set, but the image {image} is "
                f"Spark {from_tag}; the driver may not match them"
            )
        return SparkLine(given, "set", image, warning)
    if from_tag is not None:
        major, minor, _ = (int(part) for part in from_tag.split("."))
        if (major, minor) not in SUPPORTED_LINES:
            raise SparkConfError(
                "image", image, "an image of Spark 3.5.x or 4.0.x-4.3.x",
                f"its tag says Spark {from_tag}; set {how_to_set} to build another line's "
                "objects anyway",
            )  # fmt: skip
        return SparkLine(from_tag, "image", image)
    if not image:
        # No image is refused by itself (Spark: "Must specify the driver container image");
        # a warning about its tag would only precede that refusal.
        return SparkLine(DEFAULT_SPARK_VERSION, "default", image)
    warning = (
        f"The image {image!r} does not say its Spark release in an official tag (such as "
        f"apache/spark:3.5.1); building the objects of Spark {DEFAULT_SPARK_VERSION}. Set "
        f"{how_to_set} to the image's release if it is another."
    )
    return SparkLine(DEFAULT_SPARK_VERSION, "default", image, warning)


def release_for_checks(given: str | None, image: str | None) -> str:
    """The release `choose_spark_line` picks, without its warning or refusal: for
    spark-submit's own argument checks, which run before the caller chooses."""
    return given or (version_from_image(image) if image else None) or DEFAULT_SPARK_VERSION
