"""Fixtures of the submission tests against the real API server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient


@pytest.fixture
def admin(control_plane) -> Iterator[KubeClient]:  # type: ignore[no-untyped-def]
    """Our client with the admin certificate, for set-up and assertions (plain dicts, as the
    API server stores them)."""
    settings = ClientSettings(
        server=control_plane.server,
        ca_file=str(control_plane.ca_file),
        client_cert_file=str(control_plane.admin_cert_file),
        client_key_file=str(control_plane.admin_key_file),
    )
    with KubeClient(settings) as client:
        yield client
