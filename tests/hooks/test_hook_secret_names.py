"""Secret extras are hidden by Airflow itself. Airflow's REST API and connection edit form
redact an extra by its key NAME (should_hide_value_for_key), not by the form's
`format: password`, so every secret extra's name must be one Airflow already hides."""

from __future__ import annotations

from typing import Any

import pytest

try:
    from airflow._shared.secrets_masker import redact, should_hide_value_for_key
except ImportError:  # Airflow 3.0
    from airflow.sdk.execution_time.secrets_masker import (  # type: ignore[no-redef]
        redact,
        should_hide_value_for_key,
    )

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.hooks.spark_k8s import (
    RENAMED_EXTRAS,
    SECRET_EXTRAS,
    settings_from_connection,
)
from airflow_provider_sparkk8s.provider_info import provider_info

SECRET = "planted-renamed-secret-4c1d9"


def conn_fields() -> dict:
    (entry,) = provider_info()["connection-types"]
    return entry["conn-fields"]


def password_extras() -> list[str]:
    fields = conn_fields()
    return [name for name, f in fields.items() if f["schema"].get("format") == "password"]


def test_there_are_secret_extras_to_check() -> None:
    assert set(password_extras()) == set(SECRET_EXTRAS) and len(SECRET_EXTRAS) == 3


@pytest.mark.parametrize("name", password_extras())
def test_airflow_hides_every_password_extra_by_its_name(name: str) -> None:
    assert should_hide_value_for_key(name), name
    # The prefixed form older UIs wrote is stored too; it must be hidden as well.
    assert should_hide_value_for_key(f"extra__spark_k8s__{name}"), name


def test_rest_api_redaction_of_a_whole_extra_hides_exactly_the_secrets() -> None:
    # The REST API runs this same redact() over the connection's extra dict.
    extra = {name: f"{SECRET}-{name}" for name in conn_fields()}
    redacted: Any = redact(extra)
    for name in password_extras():
        assert redacted[name] != extra[name], name
        assert SECRET not in str(redacted[name]), name
    # Non-secret extras (a namespace, a certificate) stay readable for the edit form.
    for name in ("namespace", "client_cert_data", "ca_cert_file", "kube_config_path"):
        assert redacted[name] == extra[name], name


def test_renamed_secrets_are_in_the_form_under_their_new_names_only() -> None:
    fields = conn_fields()
    for old, new in RENAMED_EXTRAS.items():
        assert old not in fields and new in fields and new in SECRET_EXTRAS


@pytest.mark.parametrize("old", sorted(RENAMED_EXTRAS))
def test_a_connection_still_using_a_former_name_is_rejected_without_its_value(old: str) -> None:
    for key in (old, f"extra__spark_k8s__{old}"):
        with pytest.raises(KubeConfigError) as caught:
            settings_from_connection("legacy", "https://k:1", None, {key: SECRET})
        message = str(caught.value)
        assert old in message and RENAMED_EXTRAS[old] in message
        assert SECRET not in message
