"""Turning ClientSettings into live credentials: an SSL context and a bearer-token source.

Shared by the sync and async clients. Inline PEM is handed to OpenSSL through a private
(0600) temporary file that is removed as soon as it is loaded: OpenSSL's Python API only
loads client certificates and keys from files.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.oidc import OidcTokenSource
from airflow_provider_sparkk8s.kube.settings import ClientSettings

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    # At run time the functions that handle TLS import ssl: a plain-http client never loads
    # it (about 5 ms of sparkk8s-submit's start).
    import ssl

    from airflow_provider_sparkk8s.kube.exec_plugin import ExecCredential

log = logging.getLogger(__name__)


def ssl_context(settings: ClientSettings) -> ssl.SSLContext:
    """The TLS context for `settings`; verification is on unless `verify` is False."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if settings.verify:
        try:
            if settings.ca_file:
                context.load_verify_locations(cafile=settings.ca_file)
            if settings.ca_data:
                context.load_verify_locations(cadata=settings.ca_data)
        except (ssl.SSLError, OSError) as error:
            what = settings.ca_file or "inline CA data"
            raise KubeConfigError(
                f"cannot load the CA certificate {what}{settings.origin()}: {_reason(error)}"
            ) from None
        if not (settings.ca_file or settings.ca_data):
            context.load_default_certs()
    else:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if settings.client_cert_file or settings.client_cert_data:
        _load_client_certificate(context, settings)
    return context


def warn_if_insecure(settings: ClientSettings) -> None:
    if not settings.verify and settings.server.startswith("https://"):
        log.warning(
            "TLS verification is OFF for %s%s: the API server's identity is not checked",
            settings.server,
            settings.origin(),
        )


def _load_client_certificate(context: ssl.SSLContext, settings: ClientSettings) -> None:
    import ssl

    with (
        _as_file(settings.client_cert_file, settings.client_cert_data) as cert_file,
        _as_file(settings.client_key_file, settings.client_key_data) as key_file,
    ):
        try:
            context.load_cert_chain(certfile=cert_file, keyfile=key_file)
        except (ssl.SSLError, OSError) as error:
            cert = settings.client_cert_file or "inline client certificate"
            key = settings.client_key_file or "inline client key"
            raise KubeConfigError(
                f"cannot load the client certificate {cert} with key {key}{settings.origin()}: "
                f"{_reason(error)}"
            ) from None


@contextmanager
def _as_file(path: str | None, pem: str | None) -> Iterator[str]:
    if path:
        yield path
        return
    assert pem is not None
    import tempfile  # imported here: only inline certificates need it (start-up time)

    fd, temp_path = tempfile.mkstemp(prefix="sparkk8s-", suffix=".pem")  # created 0600
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(pem)
        yield temp_path
    finally:
        os.unlink(temp_path)


def _reason(error: BaseException) -> str:
    import ssl

    # ssl/OSError reasons name the failure ("PEM lib", "No such file"), never file contents.
    if isinstance(error, ssl.SSLError) and error.reason:
        return str(error.reason)
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return type(error).__name__


class TokenSource:
    """The bearer token: static, or a file re-read when it changes (and on demand after a 401).

    Projected service-account tokens are rotated by replacing the file; a stat per request
    (mtime, size, inode) notices that without re-reading an unchanged file.
    """

    def __init__(self, token: str | None, token_file: str | None):
        self._token = token
        self._file = token_file
        self._stamp: tuple[int, int, int] | None = None
        self._lock = threading.Lock()

    def authorization(self) -> str | None:
        """The Authorization header value, or None when requests carry no token."""
        if self._file is not None:
            self._refresh_if_changed()
        return f"Bearer {self._token}" if self._token else None

    async def aprepare(self) -> None:
        """Nothing to fetch ahead of a request (the async client calls it for exec plugins)."""

    def reload(self) -> bool:
        """Re-read the token file now; True when the token changed (worth a retry)."""
        if self._file is None:
            return False
        with self._lock:
            before = self._token
            self._read(self._stat())
            return self._token != before

    def _refresh_if_changed(self) -> None:
        stamp = self._stat()
        if stamp == self._stamp:
            return
        with self._lock:
            if stamp != self._stamp:
                self._read(stamp)

    def _stat(self) -> tuple[int, int, int]:
        assert self._file is not None
        try:
            info = os.stat(self._file)
        except OSError as error:
            raise KubeConfigError(
                f"cannot read the token file {self._file}: {error.strerror}"
            ) from None
        return (info.st_mtime_ns, info.st_size, info.st_ino)

    def _read(self, stamp: tuple[int, int, int]) -> None:
        assert self._file is not None
        try:
            with open(self._file) as handle:
                token = handle.read().strip()
        except OSError as error:
            raise KubeConfigError(
                f"cannot read the token file {self._file}: {error.strerror}"
            ) from None
        if not token:
            raise KubeConfigError(f"the token file {self._file} is empty")
        if token != self._token and self._stamp is not None:
            log.info("token file %s changed; using the new token", self._file)
        self._token, self._stamp = token, stamp


class ExecCredentialSource:
    """A kubeconfig exec credential plugin: token and/or client certificate (exec_plugin.py).

    Credentials come from the process-wide cache until they expire. The sync clients run a
    stale plugin inline; the async client calls `aprepare()` first, which runs it as an
    asyncio subprocess. A certificate is handed to `on_certificate` (the sender loads it
    into its TLS context) before the request that needs it.
    """

    def __init__(
        self,
        settings: ClientSettings,
        on_certificate: Callable[[ExecCredential], None] | None = None,
    ):
        # exec_plugin is imported by its users only: few kubeconfigs run a plugin, and
        # start-up is most of sparkk8s-submit's wall time (tests/cli/test_cli_startup.py).
        from airflow_provider_sparkk8s.kube.exec_plugin import ExecPlugin

        self.plugin = ExecPlugin.of(settings)
        self._on_certificate = on_certificate
        self._current: ExecCredential | None = None
        self._lock = threading.Lock()

    def authorization(self) -> str | None:
        from airflow_provider_sparkk8s.kube.exec_plugin import credential_sync

        credential = self._use(credential_sync(self.plugin))
        return f"Bearer {credential.token}" if credential.token else None

    async def aprepare(self) -> None:
        from airflow_provider_sparkk8s.kube.exec_plugin import credential_async

        self._use(await credential_async(self.plugin))

    def reload(self) -> bool:
        """After a 401: forget the refused credential; the next request runs the plugin."""
        from airflow_provider_sparkk8s.kube.exec_plugin import CACHE

        CACHE.forget(self.plugin, self._current)
        return True

    def _use(self, credential: ExecCredential) -> ExecCredential:
        with self._lock:
            if credential is not self._current:
                if credential.client_cert_data and self._on_certificate is not None:
                    self._on_certificate(credential)
                self._current = credential
        return credential


def load_exec_certificate(context: ssl.SSLContext | None, credential: ExecCredential) -> None:
    """A plugin's client certificate into the TLS context (new connections present it)."""
    if context is None:
        raise KubeConfigError(
            "an exec credential plugin returned a client certificate for a plain-http server"
        )
    import ssl

    with (
        _as_file(None, credential.client_cert_data) as cert_file,
        _as_file(None, credential.client_key_data) as key_file,
    ):
        try:
            context.load_cert_chain(certfile=cert_file, keyfile=key_file)
        except (ssl.SSLError, OSError) as error:
            raise KubeConfigError(
                f"cannot load the exec plugin's client certificate: {_reason(error)}"
            ) from None


def token_source(
    settings: ClientSettings, on_certificate: Callable[[ExecCredential], None] | None = None
) -> TokenSource | ExecCredentialSource | OidcTokenSource:
    """Static token or token file first; an exec plugin or oidc only when neither is set."""
    if not (settings.token or settings.token_file):
        if settings.exec_command:
            return ExecCredentialSource(settings, on_certificate)
        if settings.oidc_config:
            return OidcTokenSource(dict(settings.oidc_config), settings.source)
    return TokenSource(settings.token, settings.token_file)
