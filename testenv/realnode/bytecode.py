"""Python's bytecode for the Spark images, so a pod's Python does not compile what it imports.

A Spark pod's Python (the driver's program, each executor's worker daemon) imports pyspark
and py4j from the zips in /opt/spark/python/lib, which Spark puts on its PYTHONPATH, and
zipimport never writes bytecode: every process compiled pyspark's modules again (importing
pyspark.daemon and pyspark.worker took 0.50-0.53 CPU-s from pyspark 4.3.0's zip, 0.15-0.19
with the bytecode; this machine, 2026-12-07). `zip_with_bytecode` gives such a zip with each
module's bytecode beside its source, compiled by the image's own Python, as unchecked-hash
pycs (PEP 552): zipimport uses them as they are, with no timestamp to keep. The sources stay
in the zip, so tracebacks and `inspect` read them as before. A test image's tuning only,
like its JVM options: Spark reads the same modules, and nothing the provider submits sees it.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

# Run by the image's Python (its bytecode's magic number is that interpreter's): copies the
# zip, adding `<module>.pyc` after each `<module>.py`, compiled under the name the pods see.
_COMPILE = """
import os, py_compile, sys, tempfile, zipfile
source, target, where = sys.argv[1:]
mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
with tempfile.TemporaryDirectory() as scratch, zipfile.ZipFile(source) as inside, \\
        zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
    for info in inside.infolist():
        data = inside.read(info)
        out.writestr(info, data)
        if not info.filename.endswith(".py"):
            continue
        plain = os.path.join(scratch, "module.py")
        with open(plain, "wb") as file:
            file.write(data)
        compiled = py_compile.compile(plain, cfile=plain + "c", dfile=where + "/" + info.filename,
                                      doraise=True, invalidation_mode=mode)
        with open(compiled, "rb") as file:
            out.writestr(zipfile.ZipInfo(info.filename[:-3] + ".pyc", info.date_time),
                         file.read(), zipfile.ZIP_DEFLATED)
"""


def zip_with_bytecode(source: Path, image_path: str, python: str, cache: Path) -> Path:
    """`source` with bytecode beside each module, cached in `cache` by the zip's content, the
    interpreter and `image_path` (where the pods find it; their tracebacks name it)."""
    digest = hashlib.sha256(source.read_bytes())
    digest.update(f"{python}:{Path(python).stat().st_size}:{image_path}:{_COMPILE}".encode())
    out = cache / f"{source.stem}-{digest.hexdigest()[:12]}.zip"
    if out.exists():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    try:
        subprocess.run(
            [python, "-I", "-W", "ignore", "-c", _COMPILE, str(source), str(partial), image_path],
            check=True,
        )
        partial.rename(out)
    finally:
        partial.unlink(missing_ok=True)
    return out
