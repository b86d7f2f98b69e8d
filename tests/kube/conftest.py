from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from testenv.tinyproxy import TinyProxy
from tests.kube.tlsfiles import Pki, make_pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def tinyproxy_binary() -> str:
    """Debian's tinyproxy, unpacked into ~/.cache by testenv/install_tinyproxy.sh."""
    script = Path(__file__).resolve().parents[2] / "testenv" / "install_tinyproxy.sh"
    done = subprocess.run([str(script)], capture_output=True, text=True, check=True, timeout=600)
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
def http_proxy(tinyproxy_binary: str, tmp_path: Path) -> Iterator[TinyProxy]:
    """A real HTTP proxy on loopback that resolves PROXIED_HOST to the API server's host."""
    proxy = TinyProxy(tinyproxy_binary, tmp_path / "proxy").start()
    yield proxy
    proxy.stop()


@pytest.fixture
def http_proxy_with_login(tinyproxy_binary: str, tmp_path: Path) -> Iterator[TinyProxy]:
    """The same proxy, asking for Basic credentials (user `spark`)."""
    proxy = TinyProxy(
        tinyproxy_binary, tmp_path / "proxy-login", basic_auth=("spark", "pr0xy-s3cret")
    ).start()
    yield proxy
    proxy.stop()
