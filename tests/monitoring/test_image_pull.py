"""The registry's "not found" read from a waiting container's message: the messages the real
node's containerd gave, verbatim, and messages shaped as containerd, Docker (cri-dockerd) and
CRI-O hand them to the kubelet, and the kubelet 1.35 wraps them (ErrImagePull, then
`Back-off pulling image "REF": ErrImagePull: ...`)."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.monitoring.image_pull import (
    IMAGE_NOT_FOUND,
    image_not_found,
    missing_image,
    registry_said_missing,
    runtime_answer,
)
from airflow_provider_sparkk8s.monitoring.reducer import reduce_application
from testenv.harness.pod_builders import SCHEDULED, pod, waiting

REF = "docker.io/apache/spark:3.5.99"
CONTAINERD_NOT_FOUND = (
    f'rpc error: code = NotFound desc = failed to pull and unpack image "{REF}": '
    f'failed to resolve reference "{REF}": {REF}: not found'
)
LOCAL_REF = "10.250.0.1:5000/sparkk8s/missing:1"
RESOLVE = (
    f'failed to pull and unpack image "{LOCAL_REF}": failed to resolve reference "{LOCAL_REF}"'
)
HEAD = 'Head "https://registry.example.com/v2/spark/manifests/1"'

# containerd 1.6.20 under the kubelet v1.35.4 on the real node, verbatim (testenv/registry.py
# answering 404, Docker Hub's 401s, 503; a port nobody listens on; a host no DNS answers).
OBSERVED_NOT_FOUND = (
    'rpc error: code = NotFound desc = failed to pull and unpack image "127.0.0.1:45831/'
    'sparkk8s/missing:4.3.0": failed to resolve reference "127.0.0.1:45831/sparkk8s/missing:'
    '4.3.0": 127.0.0.1:45831/sparkk8s/missing:4.3.0: not found'
)
OBSERVED_DENIED = (
    'failed to pull and unpack image "127.0.0.1:45831/sparkk8s/denied:4.3.0": failed to resolve '
    'reference "127.0.0.1:45831/sparkk8s/denied:4.3.0": pull access denied, repository does not '
    "exist or may require authorization: server message: insufficient_scope: authorization failed"
)
OBSERVED_UNAVAILABLE = (
    'failed to pull and unpack image "127.0.0.1:45831/sparkk8s/unavailable:4.3.0": failed to '
    'resolve reference "127.0.0.1:45831/sparkk8s/unavailable:4.3.0": pulling from host '
    "127.0.0.1:45831 failed with status code [manifests 4.3.0]: 503 Service Unavailable"
)
OBSERVED_REFUSED = (
    'failed to pull and unpack image "127.0.0.1:1/sparkk8s/refused:1": failed to resolve '
    'reference "127.0.0.1:1/sparkk8s/refused:1": failed to do request: Head "http://127.0.0.1:1/'
    'v2/sparkk8s/refused/manifests/1": dial tcp 127.0.0.1:1: connect: connection refused'
)
OBSERVED_DNS = (
    'failed to pull and unpack image "sparkk8s.invalid/missing:1": failed to resolve reference '
    '"sparkk8s.invalid/missing:1": failed to do request: Head "https://sparkk8s.invalid/v2/'
    'missing/manifests/1": dial tcp: lookup sparkk8s.invalid on 10.255.255.53:53: read udp '
    "10.250.0.1:38250->10.255.255.53:53: i/o timeout"
)


def backoff(image: str, message: str) -> str:
    """The kubelet 1.35's ImagePullBackOff message: its back-off, then the last pull's error."""
    return f'Back-off pulling image "{image}": ErrImagePull: {message}'


NOT_FOUND = [
    OBSERVED_NOT_FOUND,
    backoff("127.0.0.1:45831/sparkk8s/missing:4.3.0", OBSERVED_NOT_FOUND),
    OBSERVED_DENIED,
    backoff("127.0.0.1:45831/sparkk8s/denied:4.3.0", OBSERVED_DENIED),
    # containerd: every host answered 404 to the manifest (a tag or repository that is not there)
    CONTAINERD_NOT_FOUND,
    f'Back-off pulling image "apache/spark:3.5.99": ErrImagePull: {CONTAINERD_NOT_FOUND}',
    f"rpc error: code = NotFound desc = {RESOLVE}: {LOCAL_REF}: not found",
    # containerd: a registry that hides missing repositories behind 401 (Docker Hub)
    (
        'rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/library/'
        'sparkk8s-typo:1": failed to resolve reference "docker.io/library/sparkk8s-typo:1": pull '
        "access denied, repository does not exist or may require authorization: server message: "
        "insufficient_scope: authorization failed"
    ),
    # Docker (cri-dockerd)
    (
        "Error response from daemon: manifest for apache/spark:3.5.99 not found: manifest unknown: "
        "manifest unknown"
    ),
    (
        "Error response from daemon: pull access denied for sparkk8s-typo, repository does not exist "
        "or may require 'docker login': denied: requested access to the resource is denied"
    ),
    # CRI-O: the distribution spec's error codes
    (
        "rpc error: code = Unknown desc = initializing source docker://quay.io/sparkk8s/spark:9.9.9: "
        "reading manifest 9.9.9 in quay.io/sparkk8s/spark: manifest unknown"
    ),
    (
        "initializing source docker://registry.example.com/nope:1: reading manifest 1 in "
        "registry.example.com/nope: name unknown: repository name not known to registry"
    ),
]

TRANSIENT = [
    OBSERVED_UNAVAILABLE,
    backoff("127.0.0.1:45831/sparkk8s/unavailable:4.3.0", OBSERVED_UNAVAILABLE),
    OBSERVED_REFUSED,
    OBSERVED_DNS,
    backoff("sparkk8s.invalid/missing:1", OBSERVED_DNS),
    # DNS, even NXDOMAIN: a resolver can be wrong for a while
    (
        f"rpc error: code = Unknown desc = {RESOLVE}: failed to do request: {HEAD}: dial tcp: lookup "
        "registry.example.com on 10.96.0.10:53: no such host"
    ),
    (
        f"{RESOLVE}: failed to do request: {HEAD}: dial tcp: lookup registry.example.com on "
        "10.96.0.10:53: read udp 10.244.0.5:40000->10.96.0.10:53: i/o timeout"
    ),
    # the network
    (
        f"rpc error: code = DeadlineExceeded desc = {RESOLVE}: failed to do request: {HEAD}: dial "
        "tcp 203.0.113.7:443: i/o timeout"
    ),
    (
        f"{RESOLVE}: failed to do request: {HEAD}: dial tcp 127.0.0.1:5000: connect: connection "
        "refused"
    ),
    (
        f'Back-off pulling image "{LOCAL_REF}": ErrImagePull: {RESOLVE}: failed to do request: '
        f"{HEAD}: read tcp 10.0.0.4:51234->203.0.113.7:443: read: connection reset by peer"
    ),
    # the registry's own trouble
    (
        f"{RESOLVE}: unexpected status from HEAD request to https://registry.example.com/v2/spark/"
        "manifests/1: 503 Service Unavailable"
    ),
    (
        f'failed to pull and unpack image "{LOCAL_REF}": failed to copy: httpReadSeeker: failed '
        "open: unexpected status code https://registry.example.com/v2/spark/blobs/sha256:0a1b: "
        "429 Too Many Requests - Server message: toomanyrequests: You have reached your pull rate "
        "limit"
    ),
    # its token server's 404: a misconfigured registry, not a missing image
    (
        f"{RESOLVE}: failed to authorize: failed to fetch anonymous token: unexpected status from "
        "GET request to https://auth.example.com/token?scope=repository%3Aspark%3Apull: "
        "404 Not Found"
    ),
    # containerd's own "not found"s on the node, not the registry's
    (
        f'failed to pull and unpack image "{LOCAL_REF}": failed to prepare extraction snapshot '
        '"extract-1 sha256:0a1b": parent snapshot sha256:2c3d does not exist: not found'
    ),
    (
        f'failed to pull and unpack image "{LOCAL_REF}": failed to copy: httpReadSeeker: failed '
        "open: content at https://registry.example.com/v2/spark/blobs/sha256:0a1b not found: "
        "not found"
    ),
    # TLS, cancellation, the bare back-off of a kubelet before 1.31, a stand-in kubelet
    (
        f"{RESOLVE}: failed to do request: {HEAD}: tls: failed to verify certificate: x509: "
        "certificate signed by unknown authority"
    ),
    (
        f'rpc error: code = Canceled desc = failed to pull and unpack image "{LOCAL_REF}": context '
        "canceled"
    ),
    f'Back-off pulling image "{LOCAL_REF}"',
    'image "registry.invalid/does-not-exist:1" is not known here (known: sparkk8s/shell:1)',
    "",
]


@pytest.mark.parametrize("message", NOT_FOUND)
def test_the_registrys_not_found_is_definitive(message: str) -> None:
    assert registry_said_missing(message)


@pytest.mark.parametrize("message", TRANSIENT)
def test_anything_else_may_pass(message: str) -> None:
    assert not registry_said_missing(message)


def test_the_answer_is_the_runtimes_without_the_kubelets_and_grpcs_wrapping() -> None:
    wrapped = f'Back-off pulling image "apache/spark:3.5.99": ErrImagePull: {CONTAINERD_NOT_FOUND}'
    assert runtime_answer(wrapped) == (
        f'failed to pull and unpack image "{REF}": failed to resolve reference "{REF}": '
        f"{REF}: not found"
    )


def pulling(reason: str, message: str, name: str = "spark-kubernetes-driver") -> dict:
    status = waiting(reason, message, name)
    status["image"] = "apache/spark:3.5.99"
    return status


def test_the_missing_image_names_its_container_the_image_and_the_answer() -> None:
    driver = pod(
        "d", conditions=SCHEDULED, containers=[pulling("ErrImagePull", CONTAINERD_NOT_FOUND)]
    )
    missing = missing_image(driver)
    assert missing is not None
    assert (missing.container, missing.image) == ("spark-kubernetes-driver", "apache/spark:3.5.99")
    assert missing.describe() == (
        'image "apache/spark:3.5.99" of container spark-kubernetes-driver does not exist in its '
        "registry (fix the image's name or tag, or its pull credentials): "
        f'failed to pull and unpack image "{REF}": failed to resolve reference "{REF}": '
        f"{REF}: not found"
    )


def test_an_init_container_or_sidecar_missing_its_image_counts_too() -> None:
    driver = pod(
        "d",
        conditions=SCHEDULED,
        init_containers=[pulling("ImagePullBackOff", CONTAINERD_NOT_FOUND, "fetch")],
        containers=[waiting("PodInitializing", name="spark-kubernetes-driver")],
    )
    missing = missing_image(driver)
    assert missing is not None and missing.container == "fetch"


@pytest.mark.parametrize(
    "status",
    [
        pulling("ErrImagePull", OBSERVED_UNAVAILABLE),
        pulling("ImagePullBackOff", 'Back-off pulling image "apache/spark:3.5.99"'),
        # a "not found" in another reason's message is not the registry's
        waiting("CreateContainerConfigError", 'configmap "x" not found: manifest unknown'),
        waiting("ContainerCreating"),
    ],
)
def test_no_missing_image_without_a_pull_reason_and_a_definitive_answer(status: dict) -> None:
    assert missing_image(pod("d", conditions=SCHEDULED, containers=[status])) is None


def test_a_pending_driver_missing_its_image_fails_naming_it() -> None:
    driver = pod(
        "d", conditions=SCHEDULED, containers=[pulling("ErrImagePull", CONTAINERD_NOT_FOUND)]
    )
    pending = reduce_application([driver], driver_pod_name="d")
    assert (pending.state, pending.reason, pending.problem) == ("pending", "ErrImagePull", True)
    failed = image_not_found(pending, [driver])
    assert (failed.state, failed.reason, failed.driver_pod) == ("failed", IMAGE_NOT_FOUND, "d")
    assert failed.message is not None and "apache/spark:3.5.99" in failed.message
    assert failed.terminal


def test_a_transient_pull_error_leaves_the_state_as_it_is() -> None:
    driver = pod("d", conditions=SCHEDULED, containers=[pulling("ErrImagePull", OBSERVED_REFUSED)])
    pending = reduce_application([driver], driver_pod_name="d")
    assert image_not_found(pending, [driver]) is pending
