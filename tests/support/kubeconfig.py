"""A kubeconfig with several contexts and auth modes, for the settings tests."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

SECRET = "planted-secret-4c1d"
KEY_PEM = f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def two_context_config(tmp_path: Path) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "admin",
        "clusters": [
            {
                "name": "main",
                "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority": "ca.crt"},
            },
            {
                "name": "edge",
                "cluster": {
                    "server": "https://edge:443/",
                    "certificate-authority-data": b64("CA PEM"),
                    "tls-server-name": "kubernetes",
                    "insecure-skip-tls-verify": False,
                },
            },
        ],
        "users": [
            {
                "name": "admin",
                "user": {"client-certificate": "admin.crt", "client-key": "/abs/admin.key"},
            },
            {"name": "robot", "user": {"token": SECRET}},
            {
                "name": "inline",
                "user": {
                    "client-certificate-data": b64("CERT PEM"),
                    "client-key-data": b64(KEY_PEM),
                },
            },
            {
                "name": "plugin",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "bin/get-token",
                        "args": ["--cluster", "main"],
                        "env": [{"name": "PROFILE", "value": SECRET}],
                    }
                },
            },
            {"name": "legacy", "user": {"auth-provider": {"name": "gcp"}}},
        ],
        "contexts": [
            {"name": "admin", "context": {"cluster": "main", "user": "admin"}},
            {
                "name": "robot",
                "context": {"cluster": "edge", "user": "robot", "namespace": "spark"},
            },
            {"name": "inline", "context": {"cluster": "edge", "user": "inline"}},
            {"name": "plugin", "context": {"cluster": "main", "user": "plugin"}},
            {"name": "legacy", "context": {"cluster": "main", "user": "legacy"}},
        ],
    }


def write_config(tmp_path: Path, config: dict[str, Any], name: str = "config") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return path
