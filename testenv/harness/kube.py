"""Plain-JSON requests and watches with the server, TLS files and token of a
`kubernetes` ApiClient's configuration, so set-up and assertions work on dicts
shaped like the API's JSON. Sent with httpx rather than through the client's
generated internals, which change between client releases."""

from __future__ import annotations

import json
import ssl
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from testenv.harness.waiting import wait_for


@contextmanager
def session(api: ApiClient, timeout: float = 30.0) -> Iterator[httpx.Client]:
    """One keep-alive httpx client with the ApiClient's credentials, for many requests."""
    config = api.configuration
    context = ssl.create_default_context(cafile=config.ssl_ca_cert)
    if config.cert_file and config.key_file:
        context.load_cert_chain(config.cert_file, config.key_file)
    headers = {"Accept": "application/json"}
    # The token's key name differs between client releases.
    authorization = config.get_api_key_with_prefix("BearerToken") or config.get_api_key_with_prefix(
        "authorization"
    )
    if authorization:
        headers["Authorization"] = authorization
    with httpx.Client(
        base_url=config.host, verify=context, headers=headers, timeout=timeout
    ) as client:
        yield client


def _raise_for_status(response: httpx.Response) -> None:
    if not response.is_success:
        # The body is set after construction: the official client takes it as an argument
        # only from 37 on, and the Airflow 3.0 venv's pydantic pins it below that.
        error = ApiException(status=response.status_code, reason=response.reason_phrase)
        error.body = response.text
        raise error


def request(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    params: dict[str, str] | None = None,
) -> Any:
    """One request; returns the decoded JSON body, raises ApiException on non-2xx."""
    content = None if body is None else json.dumps(body)
    with session(api) as client:
        response = client.request(
            method, path, content=content, params=params, headers={"Content-Type": content_type}
        )
    _raise_for_status(response)
    return response.json() if response.content else None


def exists(api: ApiClient, path: str) -> bool:
    """GET `path`: False on 404 ("not yet", for a wait), any other failure raised."""
    try:
        request(api, "GET", path)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def watch(
    api: ApiClient, path: str, resource_version: str, timeout_seconds: int = 30
) -> Generator[dict[str, Any]]:
    """Watch events ({"type": ..., "object": {...}}) from `resource_version` until
    the server ends the watch after `timeout_seconds` or the caller stops iterating."""
    params = {
        "watch": "true",
        "resourceVersion": resource_version,
        "timeoutSeconds": str(timeout_seconds),
    }
    with (
        session(api, timeout=timeout_seconds + 10) as client,
        client.stream("GET", path, params=params) as response,
    ):
        if not response.is_success:
            response.read()
            _raise_for_status(response)
        for line in response.iter_lines():
            if line.strip():
                yield dict(json.loads(line))


def create_namespace(plane: Any, name: str) -> None:
    """Creates `name` on `plane` and waits for its default service account."""
    api = k8s_config.new_client_from_config(config_file=str(plane.admin_kubeconfig))
    try:
        core = k8s_client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": name}})  # type: ignore[arg-type]
        # Pods are refused until the namespace's default service account exists.
        wait_for(
            lambda: (
                core.list_namespaced_service_account(
                    name, field_selector="metadata.name=default"
                ).items
            ),
            60,
            f"service account {name}/default",
        )
    finally:
        api.close()
