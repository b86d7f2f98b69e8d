import subprocess
import zipfile
from pathlib import Path

import pytest

from testenv.realnode.bytecode import zip_with_bytecode
from testenv.realnode.image import PYTHON

pytestmark = pytest.mark.skipif(not Path(PYTHON).exists(), reason=f"no {PYTHON}")


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_each_module_gains_bytecode_that_the_zip_import_uses(tmp_path: Path):
    source = _zip(
        tmp_path / "lib.zip",
        {"pkg/__init__.py": "", "pkg/mod.py": "def fail():\n    raise ValueError('x')\n",
         "pkg/data.txt": "kept"},
    )  # fmt: skip
    built = zip_with_bytecode(source, "/opt/lib/lib.zip", PYTHON, tmp_path / "cache")
    with zipfile.ZipFile(built) as archive:
        names = archive.namelist()
        assert archive.read("pkg/data.txt") == b"kept"
    assert names == [
        "pkg/__init__.py", "pkg/__init__.pyc", "pkg/mod.py", "pkg/mod.pyc", "pkg/data.txt"
    ]  # fmt: skip
    probe = (
        "import traceback, pkg.mod\n"
        "print(pkg.mod.__file__)\n"
        "try:\n    pkg.mod.fail()\n"
        "except ValueError:\n    print(traceback.format_exc())\n"
    )
    ran = subprocess.run(
        [PYTHON, "-I", "-c", f"import sys; sys.path.insert(0, {str(built)!r})\n{probe}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    # Loaded from the bytecode, and a traceback names the module where the pods see it.
    assert ran.stdout.splitlines()[0] == f"{built}/pkg/mod.pyc"
    assert 'File "/opt/lib/lib.zip/pkg/mod.py", line 2, in fail' in ran.stdout


def test_the_zip_is_built_once_per_content(tmp_path: Path):
    source = _zip(tmp_path / "lib.zip", {"m.py": "A = 1\n"})
    first = zip_with_bytecode(source, "/opt/lib/lib.zip", PYTHON, tmp_path / "cache")
    assert zip_with_bytecode(source, "/opt/lib/lib.zip", PYTHON, tmp_path / "cache") == first
    _zip(source, {"m.py": "A = 2\n"})
    assert zip_with_bytecode(source, "/opt/lib/lib.zip", PYTHON, tmp_path / "cache") != first
    assert zip_with_bytecode(source, "/elsewhere/lib.zip", PYTHON, tmp_path / "cache") != first
