"""Turning ClientSettings into live credentials: an SSL context and a bearer-token source.

Shared by the sync and async clients. Inline PEM is handed to OpenSSL through a private
(0600) temporary file that is removed as soon as it is loaded: OpenSSL's Python API only
loads client certificates and keys from files.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.settings import ClientSettings

log = logging.getLogger(__name__)


def ssl_context(settings: ClientSettings) -> ssl.SSLContext:
    """The TLS context for `settings`; verification is on unless `verify` is False."""
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


# Refresh an exec plugin's token this long before it expires, so no request carries a token
# that dies in flight.
_EXPIRY_MARGIN = 30.0
_EXEC_TIMEOUT = 60.0


class ExecTokenSource:
    """A kubeconfig exec credential plugin (client-go's ExecCredential protocol, token only).

    The command runs when there is no token yet, when the token is about to expire, and
    after a 401. Its stderr is passed on for diagnostics; its stdout holds the credential.
    """

    def __init__(self, settings: ClientSettings):
        assert settings.exec_command is not None
        self._command = settings.exec_command
        self._env = dict(settings.exec_env)
        self._api_version = settings.exec_api_version
        self._token: str | None = None
        self._expires_at: float | None = None
        self._lock = threading.Lock()

    def authorization(self) -> str | None:
        with self._lock:
            if self._token is None or (
                self._expires_at is not None and time.time() >= self._expires_at - _EXPIRY_MARGIN
            ):
                self._run()
        return f"Bearer {self._token}"

    def reload(self) -> bool:
        with self._lock:
            before = self._token
            self._run()
            return self._token != before

    def _run(self) -> None:
        import subprocess  # imported here: only exec plugins need it (start-up time)

        name = self._command[0]
        exec_info = {
            "apiVersion": self._api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": False},
        }
        env = {**os.environ, **self._env, "KUBERNETES_EXEC_INFO": json.dumps(exec_info)}
        try:
            done = subprocess.run(
                list(self._command),
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=_EXEC_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise KubeConfigError(f"exec credential plugin {name} could not run: {error}") from None
        if done.returncode != 0:
            detail = done.stderr.strip()[-300:]
            raise KubeConfigError(
                f"exec credential plugin {name} exited with {done.returncode}: {detail}"
            )
        self._token, self._expires_at = parse_exec_credential(done.stdout, name)


def parse_exec_credential(output: str, name: str) -> tuple[str, float | None]:
    """(token, expiry as epoch seconds or None) from a plugin's ExecCredential output."""
    try:
        credential = json.loads(output)
    except ValueError:
        raise KubeConfigError(f"exec credential plugin {name} printed no JSON") from None
    status = credential.get("status") if isinstance(credential, dict) else None
    if not isinstance(status, dict):
        raise KubeConfigError(f"exec credential plugin {name} printed no ExecCredential status")
    token = status.get("token")
    if not token:
        what = "a client certificate" if status.get("clientCertificateData") else "no token"
        raise KubeConfigError(
            f"exec credential plugin {name} returned {what}; only token credentials are supported"
        )
    expiry = status.get("expirationTimestamp")
    if not expiry:
        return str(token), None
    try:
        moment = datetime.datetime.fromisoformat(str(expiry))
    except ValueError:
        raise KubeConfigError(
            f"exec credential plugin {name} returned expirationTimestamp={expiry!r}, "
            "expected RFC 3339"
        ) from None
    return str(token), moment.timestamp()


def token_source(settings: ClientSettings) -> TokenSource | ExecTokenSource:
    """Static token or token file first; an exec plugin only when neither is set."""
    if settings.exec_command and not (settings.token or settings.token_file):
        return ExecTokenSource(settings)
    return TokenSource(settings.token, settings.token_file)
