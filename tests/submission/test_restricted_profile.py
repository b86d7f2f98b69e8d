"""Pod Security Admission's restricted profile as data (submission/restricted_profile.py):
filling keeps what a pod says, and every control the profile checks is named."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import restricted_profile as rp


def test_only_restricted_is_accepted_naming_the_key() -> None:
    assert rp.enabled({rp.KEY: "restricted"}) and not rp.enabled({})
    with pytest.raises(SparkConfError) as caught:
        rp.enabled({rp.KEY: "baseline"})
    assert caught.value.key == rp.KEY and caught.value.value == "baseline"


def test_a_filled_pod_passes_and_the_input_is_left_alone() -> None:
    pod = {"spec": {"containers": [{"name": "a"}], "initContainers": [{"name": "i"}]}}
    filled = rp.harden_pod(pod)
    assert rp.problems(filled) == []
    assert pod == {"spec": {"containers": [{"name": "a"}], "initContainers": [{"name": "i"}]}}
    assert rp.problems(pod) == [
        "container 'i' allowPrivilegeEscalation: not false",
        "container 'i' capabilities.drop: without ALL",
        "container 'i' runAsNonRoot: unset (and unset on the pod)",
        "container 'i' seccompProfile: unset (and unset on the pod)",
        "container 'a' allowPrivilegeEscalation: not false",
        "container 'a' capabilities.drop: without ALL",
        "container 'a' runAsNonRoot: unset (and unset on the pod)",
        "container 'a' seccompProfile: unset (and unset on the pod)",
    ]


def test_explicit_values_against_the_profile_stay_and_are_named() -> None:
    pod = rp.harden_pod({
        "spec": {
            "hostPID": True,
            "securityContext": {"runAsUser": 0, "seccompProfile": {"type": "Unconfined"}},
            "volumes": [{"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}},
                        {"name": "scratch", "emptyDir": {}}],
            "containers": [{"name": "s", "ports": [{"containerPort": 80, "hostPort": 80}],
                            "securityContext": {"allowPrivilegeEscalation": True,
                                                "capabilities": {"add": ["NET_ADMIN",
                                                                         "NET_BIND_SERVICE"]}}}],
        }
    })  # fmt: skip
    assert rp.problems(pod) == [
        "spec.hostPID: true",
        "volume 'docker': hostPath",
        "spec.securityContext runAsUser: 0",
        "spec.securityContext seccompProfile Unconfined",
        "container 's' allowPrivilegeEscalation: not false",
        "container 's' capabilities.add: ['NET_ADMIN']",
        "container 's' seccompProfile: unset (and unset on the pod)",
        "container 's' hostPort",
    ]
