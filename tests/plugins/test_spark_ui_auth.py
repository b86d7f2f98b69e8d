"""The Spark UI plugin behind Airflow's own auth, on a real api-server (3.3: SimpleAuthManager
in multi-team mode, so a DAG belongs to a team and a user reads only their team's DAGs):
an anonymous request gets 401, a bad token 403, another team's user 403, all before the
XCom is read or Kubernetes is asked; the DAG's user gets through to the XCom (none here:
404 naming the task instance), by bearer header and by the UI's `_token` cookie."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from airflow_provider_sparkk8s.version_compat import AIRFLOW_V_3_3_PLUS
from tests.plugins.airflow_api import ApiServer, api_server

pytestmark = [
    pytest.mark.airflow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not AIRFLOW_V_3_3_PLUS, reason="teams of SimpleAuthManager: 3.3+"),
]

# Two DAGs, each in a bundle of its own team.
ROWS = """
from airflow.models.dag import DagModel
from airflow.models.dagbundle import DagBundleModel
from airflow.models.team import Team
from airflow.utils.session import create_session

with create_session() as session:
    for dag_id, team in (("etl", "team_a"), ("other", "team_b")):
        bundle = DagBundleModel(name=f"bundle_{team}")
        bundle.teams.append(Team(name=team))
        session.add(bundle)
        session.flush()
        session.add(DagModel(dag_id=dag_id, bundle_name=bundle.name, fileloc=f"/{dag_id}.py"))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    users = {"alice": "viewer:team_a", "bob": "viewer:team_b"}
    with api_server(
        tmp_path_factory.mktemp("spark-ui-auth"),
        users,
        {"AIRFLOW__CORE__MULTI_TEAM": "True"},
        rows=ROWS,
    ) as running:
        yield running


def _get(server: ApiServer, path: str, **kwargs) -> httpx.Response:
    return httpx.get(f"{server.base_url}{path}", timeout=60, **kwargs)


PAGE = "/sparkk8s/ui/etl/manual__1/pi/-1/jobs/"


def test_an_anonymous_request_is_refused_with_401(server):
    response = _get(server, PAGE)
    assert response.status_code == 401, response.text
    assert _get(server, "/sparkk8s/ui/etl/manual__1/pi/-1").status_code == 401


def test_a_bad_token_is_refused_with_403(server):
    response = _get(server, PAGE, headers={"Authorization": "Bearer not-a-jwt"})
    assert response.status_code == 403, response.text


def test_another_teams_user_is_refused_with_403_before_the_xcom_is_read(server):
    bob = server.token("bob")
    response = _get(server, PAGE, headers={"Authorization": f"Bearer {bob}"})
    assert response.status_code == 403, response.text
    assert "No Spark UI" not in response.text


def test_the_dags_user_gets_through_by_bearer_and_by_cookie(server):
    alice = server.token("alice")
    for kwargs in (
        {"headers": {"Authorization": f"Bearer {alice}"}},
        {"cookies": {"_token": alice}},
    ):
        response = _get(server, PAGE, **kwargs)
        # Past the check: the task instance has published no Spark UI.
        assert response.status_code == 404, response.text
        assert "No Spark UI for task 'pi'" in response.json()["detail"], response.text
    # ... but not into the other team's DAG.
    other = _get(
        server, "/sparkk8s/ui/other/r/pi/-1/", headers={"Authorization": f"Bearer {alice}"}
    )
    assert other.status_code == 403, other.text


def test_the_task_instance_root_redirects_to_its_ui_for_the_dags_user(server):
    alice = server.token("alice")
    response = _get(
        server, "/sparkk8s/ui/etl/manual__1/pi/-1", headers={"Authorization": f"Bearer {alice}"}
    )
    assert response.status_code == 302
    assert response.headers["location"] == "/sparkk8s/ui/etl/manual__1/pi/-1/"
