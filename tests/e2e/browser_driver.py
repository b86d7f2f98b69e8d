"""One run of a browser script under tests/e2e/browser (node, playwright-core, chromium):
the config goes in as a JSON file, removed after (it holds a password or a key), and what the
script saw comes back as one JSON object."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

BROWSER_DIR = Path(__file__).resolve().parent / "browser"


def run_browser(
    script: str, config: dict[str, Any], workdir: Path, timeout: float
) -> dict[str, Any]:
    installed = (BROWSER_DIR / "node_modules/playwright-core").is_dir()
    if shutil.which("chromium") is None or not installed:
        pytest.fail("chromium or playwright-core missing: run tests/e2e/install_browser.sh")
    config_file = workdir / "browser-input.json"
    config_file.write_text(json.dumps(config))
    try:
        done = subprocess.run(
            ["node", str(BROWSER_DIR / script), str(config_file)],
            cwd=BROWSER_DIR,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        config_file.unlink()  # it holds a secret
    assert done.returncode == 0, f"browser driver failed:\n{done.stderr[-4000:]}"
    return dict(json.loads(done.stdout))
