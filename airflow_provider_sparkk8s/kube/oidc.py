"""The kubeconfig `oidc` auth-provider, as client-go's oidc plugin runs it.

The `id-token` is the bearer token while its JWT `exp` lies ahead. When it has expired (or
is missing) and a `refresh-token` is set, the provider asks the issuer: discovery at
`<idp-issuer-url>/.well-known/openid-configuration` names the token endpoint, and a
`grant_type=refresh_token` request (client id and secret as HTTP Basic) returns a new
id-token and, possibly, a new refresh token. client-go writes them back to the kubeconfig;
here they are kept in memory for the process (kubeconfigs on workers are often read-only).
The refresh is a short blocking HTTP exchange: the async client runs it in a worker thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import KubeConfigError

# base64 and ssl are imported where used: every client imports this module, few use oidc,
# and a plain-http client never loads ssl (start-up time).
TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    import ssl
    from typing import Any

SECRET_KEYS = frozenset({"id-token", "refresh-token", "client-secret"})


def jwt_expiry(token: str) -> float | None:
    """The `exp` claim of a JWT (epoch seconds), or None when it has none or is no JWT."""
    import base64

    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, TypeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, (int, float)) else None


class OidcTokenSource:
    """Bearer id-tokens from an `oidc` auth-provider config, refreshed when expired."""

    def __init__(self, config: Mapping[str, str], where: str = ""):
        self._config = dict(config)
        self._where = f" ({where})" if where else ""
        self._lock = threading.Lock()
        if not self._config.get("id-token") and not self._refreshable():
            raise KubeConfigError(
                f"the oidc auth-provider{self._where} has neither an id-token nor a "
                "refresh-token with idp-issuer-url and client-id"
            )

    def authorization(self) -> str | None:
        with self._lock:
            if self._expired():
                self._refresh()
            return f"Bearer {self._config['id-token']}"

    async def aprepare(self) -> None:
        if self._expired():
            import asyncio

            await asyncio.to_thread(self.authorization)

    def reload(self) -> bool:
        """After a 401: refresh once if we can."""
        if not self._refreshable():
            return False
        with self._lock:
            self._config.pop("id-token", None)
        return True

    def _refreshable(self) -> bool:
        config = self._config
        return bool(
            config.get("refresh-token") and config.get("idp-issuer-url") and config.get("client-id")
        )

    def _expired(self) -> bool:
        token = self._config.get("id-token")
        if not token:
            return True
        expiry = jwt_expiry(token)
        return expiry is not None and time.time() >= expiry

    def _refresh(self) -> None:
        if not self._refreshable():
            raise KubeConfigError(
                f"the oidc id-token{self._where} has expired and there is no refresh-token "
                "(with idp-issuer-url and client-id) to renew it"
            )
        endpoint = self._token_endpoint()
        form = {"grant_type": "refresh_token", "refresh_token": self._config["refresh-token"]}
        answer = self._post(endpoint, form)
        id_token = answer.get("id_token")
        if not isinstance(id_token, str) or not id_token:
            raise KubeConfigError(
                f"the oidc issuer's token endpoint{self._where} returned no id_token"
            )
        self._config["id-token"] = id_token
        if answer.get("refresh_token"):
            self._config["refresh-token"] = str(answer["refresh_token"])

    def _token_endpoint(self) -> str:
        issuer = self._config["idp-issuer-url"].rstrip("/")
        discovery = self._get(f"{issuer}/.well-known/openid-configuration")
        endpoint = discovery.get("token_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            raise KubeConfigError(f"the oidc issuer {issuer}{self._where} names no token_endpoint")
        return endpoint

    def _tls(self) -> ssl.SSLContext:
        import base64
        import ssl

        context = ssl.create_default_context()
        if self._config.get("idp-certificate-authority"):
            context.load_verify_locations(cafile=self._config["idp-certificate-authority"])
        if self._config.get("idp-certificate-authority-data"):
            text = self._config["idp-certificate-authority-data"].replace("\n", "")
            context.load_verify_locations(cadata=base64.b64decode(text).decode())
        return context

    def _get(self, url: str) -> dict[str, Any]:
        import urllib.request

        return self._exchange(urllib.request.Request(url), url)

    def _post(self, url: str, form: Mapping[str, str]) -> dict[str, Any]:
        import base64
        import urllib.parse
        import urllib.request

        login = f"{urllib.parse.quote(self._config['client-id'], safe='')}:" + urllib.parse.quote(
            self._config.get("client-secret", ""), safe=""
        )
        request = urllib.request.Request(
            url,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Authorization": "Basic " + base64.b64encode(login.encode()).decode(),
            },
        )
        return self._exchange(request, url)

    def _exchange(self, request: Any, url: str) -> dict[str, Any]:
        import urllib.error
        import urllib.request

        try:
            context = self._tls() if url.startswith("https://") else None
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                document = json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise KubeConfigError(
                f"the oidc issuer answered {url} with {error.code} {error.reason}{self._where}"
            ) from None
        except (OSError, ValueError) as error:
            reason = getattr(error, "reason", None) or type(error).__name__
            raise KubeConfigError(f"cannot reach the oidc issuer at {url}: {reason}") from None
        if not isinstance(document, dict):
            raise KubeConfigError(f"the oidc issuer's {url} answered with no JSON object")
        return document
