from airflow_provider_sparkk8s.submission.features import network_policy
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import APP_ID, PREFIX, make_conf


def test_policy_object():
    result = network_policy.step(
        make_conf({"spark.kubernetes.namespace": "jobs"}), SparkPod.initial()
    )
    assert result.pod == SparkPod.initial() and result.system_properties == {}
    assert result.resources == (
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {
                "name": f"{PREFIX}-policy",
                "namespace": "jobs",
                "labels": {"spark-app-selector": APP_ID},
            },
            "spec": {
                "podSelector": {
                    "matchLabels": {"spark-role": "executor", "spark-app-selector": APP_ID}
                },
                "ingress": [
                    {"from": [{"podSelector": {"matchLabels": {"spark-app-selector": APP_ID}}}]}
                ],
            },
        },
    )
    assert network_policy.SINCE == (4, 2, 0)
