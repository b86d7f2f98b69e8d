"""Parity under a policy: every parity scenario the policy allows sends, through
`sparkk8s-submit` with the policy in force, exactly the requests real spark-submit sent
(tests/parity's own comparison, goldens and kube-apiserver), on each scenario's newest line.
The policy has a rule of each kind, none of which these scenarios break; a scenario it
refuses (dynamic allocation without maxExecutors is unbounded) is skipped, and counted."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from airflow_provider_sparkk8s.application.policy import guardrails
from airflow_provider_sparkk8s.application.policy.guardrails import violations
from airflow_provider_sparkk8s.application.policy.platform_policy import Policy, parse_policy
from airflow_provider_sparkk8s.cli import submit as cli
from airflow_provider_sparkk8s.errors import PolicyViolation
from tests.parity.scenarios import Scenario, all_scenarios, golden_path
from tests.parity.test_parity import (
    apiserver,  # noqa: F401 - the module's fixture
    assert_as_captured,
)

pytestmark = [pytest.mark.controlplane]

POLICY = parse_policy(
    {
        "denied_keys": ["spark.sparkk8s.test.never.*"],
        "allowed_namespaces": ["*"],
        "allowed_service_accounts": ["*"],
        "allowed_image_registries": ["docker.io", "localhost", "registry.example.com"],
        "max_cores": 10_000,
        "max_memory": "100t",
        "max_executors": 10_000,
        "max_gpus": 1_000,
    },
    "parity policy",
)
NEWEST = [
    pytest.param(scenario, line, id=f"{scenario.name}[{line}]")
    for scenario in all_scenarios()
    for line in sorted(
        (line for line in scenario.spark_lines if golden_path(scenario, line).exists()),
        key=lambda version: tuple(int(part) for part in version.split(".")),
    )[-1:]
]


@pytest.mark.parametrize(("scenario", "line"), NEWEST)
def test_an_allowed_scenario_sends_what_spark_submit_sent_under_the_policy(
    scenario: Scenario,
    line: str,
    apiserver,  # noqa: F811 - the fixture imported above
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked: list[list[tuple[str, str, str]]] = []

    def enforce_and_keep(
        policy: Policy | None, conf, rendered, provided: Mapping[str, str] | None = None
    ) -> None:
        assert policy is POLICY
        found = violations(policy, conf, rendered, provided)
        checked.append(found)
        if found:
            raise PolicyViolation(policy.source, found)

    monkeypatch.setattr(cli, "read_policy", lambda arguments, environ: POLICY)
    monkeypatch.setattr(guardrails, "enforce", enforce_and_keep)  # the service imports it late
    try:
        assert_as_captured(scenario, line, apiserver)
    except AssertionError:
        if checked and checked[-1]:
            pytest.skip(f"the parity policy refuses this scenario: {checked[-1]}")
        raise
    if not scenario.expect_failure:
        assert checked == [[]]  # checked once, and allowed
