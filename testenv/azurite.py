"""A real Azure Blob Storage emulator for the abfs:// upload tests: Azurite's blob service.

    with Azurite() as azure:
        azure.make_container("apps")
        # adlfs: AzureBlobFileSystem(connection_string=azure.connection_string)
        azure.objects("apps")        # {blob name: bytes}, read back through the blob API

Azurite (testenv/install_azurite.sh installs it from the npm registry into ~/.cache) runs on
node, serves the blob API over plain HTTP on 127.0.0.1 and keeps its blobs in a temp
directory that goes with it. Its account is not the public development one: a random name
and key per run (AZURITE_ACCOUNTS), so the key can be planted and looked for like a secret.
"""

from __future__ import annotations

import base64
import secrets
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from testenv.controlplane import free_port
from testenv.processes import ManagedProcess, Server, built_by, wait_until

INSTALL_SCRIPT = Path(__file__).resolve().parent / "install_azurite.sh"
START_DEADLINE_SECONDS = 60.0


def find_azurite_blob() -> Path:
    """$SPARKK8S_AZURITE_BLOB_JS, else the blob server's entry point install_azurite.sh
    installs (or finds cached)."""
    return built_by(INSTALL_SCRIPT, "SPARKK8S_AZURITE_BLOB_JS")


class Azurite(Server):
    """Azurite's blob service on a loopback port; `.connection_string` for adlfs."""

    def __init__(self) -> None:
        self.account = "sparkk8s" + secrets.token_hex(4)
        self.account_key = base64.b64encode(secrets.token_bytes(64)).decode()
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="sparkk8s-azurite-"))
        self.process: ManagedProcess | None = None

    @property
    def endpoint(self) -> str:
        """The account's blob endpoint (path style: the account is the first segment)."""
        return f"http://127.0.0.1:{self.port}/{self.account}"

    @property
    def connection_string(self) -> str:
        return self.connection_string_with(self.account_key)

    def connection_string_with(self, account_key: str) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={self.account};"
            f"AccountKey={account_key};BlobEndpoint={self.endpoint};"
        )

    def start(self) -> Azurite:
        node = shutil.which("node")
        if node is None:
            raise FileNotFoundError("Azurite needs node on PATH")
        argv = [
            node, str(find_azurite_blob()),
            "--blobHost", "127.0.0.1",
            "--blobPort", str(self.port),
            "--location", str(self.workdir / "data"),
            "--disableTelemetry",
            # The SDK's newest API version may be newer than this Azurite release knows.
            "--skipApiVersionCheck",
            "--silent",
        ]  # fmt: skip
        env = {"AZURITE_ACCOUNTS": f"{self.account}:{self.account_key}"}
        self.process = ManagedProcess("azurite", argv, self.workdir / "azurite.log", env=env)
        self.process.start()
        try:
            wait_until(self._serving, START_DEADLINE_SECONDS, "azurite", [self.process])
        except BaseException:
            self.stop()
            raise
        return self

    def _serving(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint + "?comp=list", timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # it answered (unsigned requests are refused): it is serving

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _client(self):  # type: ignore[no-untyped-def]
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string)

    def make_container(self, name: str) -> str:
        self._client().create_container(name)
        return name

    def objects(self, container: str) -> dict[str, bytes]:
        """Every blob of `container` as the service serves it: name -> content; a blob
        deleted between the listing and its download is left out (a watcher polls this while
        the uploads go with the driver)."""
        from azure.core.exceptions import ResourceNotFoundError

        client = self._client().get_container_client(container)
        found = {}
        for blob in sorted(client.list_blobs(), key=lambda blob: str(blob.name)):
            try:
                found[blob.name] = client.download_blob(blob.name).readall()
            except ResourceNotFoundError:
                continue
        return found
