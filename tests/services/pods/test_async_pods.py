"""The trigger's pod service on a scripted async client: each operation's requests sent one by
one, a 404 read as "none", the log read as text, and a kill's delete preconditioned on the pod
it read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.application.task.ownership import Spare
from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.services.pods.async_pods import AsyncPods, delete_if_owned

POD_PATH = "/api/v1/namespaces/jobs/pods/pi-driver"
POD = {"metadata": {"name": "pi-driver", "namespace": "jobs", "uid": "u-1", "resourceVersion": "7"}}


class ScriptedClient:
    """Answers by (method, path); a missing answer is the API server's 404."""

    def __init__(self, answers: Mapping[tuple[str, str], Any]) -> None:
        self.answers = dict(answers)
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    async def request(self, method: str, path: str, **keywords: Any) -> dict[str, Any]:
        self.sent.append((method, path, keywords))
        if (method, path) not in self.answers:
            raise KubeApiError(404, "NotFound", f"{path} not found", method=method, path=path)
        answer: dict[str, Any] = self.answers[(method, path)]
        return answer

    async def text(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        self.sent.append(("GET", path, {"params": dict(params or {})}))
        text: str = self.answers[("GET", path)]
        return text


async def test_get_gives_the_pod_or_none() -> None:
    client = ScriptedClient({("GET", POD_PATH): POD})
    pods = AsyncPods(client)
    assert await pods.get("jobs", "pi-driver") == POD
    assert await pods.get("jobs", "other") is None


async def test_delete_says_whether_there_was_a_pod() -> None:
    client = ScriptedClient({("DELETE", POD_PATH): POD})
    assert await AsyncPods(client).delete("jobs", "pi-driver") is True
    assert await AsyncPods(client).delete("jobs", "gone") is False
    assert [(method, path) for method, path, _ in client.sent] == [
        ("DELETE", POD_PATH),
        ("DELETE", "/api/v1/namespaces/jobs/pods/gone"),
    ]


async def test_the_log_is_read_as_text_with_its_params() -> None:
    client = ScriptedClient({("GET", POD_PATH + "/log"): "line\n"})
    text = await AsyncPods(client).log_text("jobs", "pi-driver", {"container": "driver"})
    assert text == "line\n"
    assert client.sent == [("GET", POD_PATH + "/log", {"params": {"container": "driver"}})]


async def test_a_kill_deletes_with_the_uid_and_version_it_read() -> None:
    client = ScriptedClient({("GET", POD_PATH): POD, ("DELETE", POD_PATH): POD})
    assert await delete_if_owned(client, "jobs", "pi-driver", 1) is None
    assert client.sent[-1] == (
        "DELETE",
        POD_PATH,
        {"json": {"preconditions": {"uid": "u-1", "resourceVersion": "7"}}},
    )


async def test_a_kill_of_a_pod_that_is_gone_spares_it_and_sends_no_delete() -> None:
    client = ScriptedClient({})
    assert await delete_if_owned(client, "jobs", "pi-driver", 1) == Spare("it is already gone")
    assert [method for method, _, _ in client.sent] == ["GET"]
