"""The Service records of the real node's cluster DNS (testenv/realnode/services.py)."""

from __future__ import annotations

from testenv.realnode.services import PodAddress, ServiceAddress, service_addresses

API_IP = "10.96.0.1"


def service(namespace, name, selector=None, cluster_ip="None"):
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"selector": selector or {}, "clusterIP": cluster_ip},
    }


def test_a_service_maps_to_the_first_live_pod_it_selects():
    pods = [
        PodAddress("jobs", {"spark-app-selector": "a", "spark-role": "driver"}, "10.244.0.12"),
        PodAddress("jobs", {"spark-app-selector": "a", "spark-role": "driver"}, "10.244.0.11"),
        PodAddress("jobs", {"spark-app-selector": "a", "spark-role": "executor"}, "10.244.0.13"),
        PodAddress("other", {"spark-app-selector": "a", "spark-role": "driver"}, "10.244.0.14"),
    ]
    services = [
        service("jobs", "pi-driver-svc", {"spark-app-selector": "a", "spark-role": "driver"})
    ]
    assert service_addresses(services, pods, API_IP) == [
        ServiceAddress("default", "kubernetes", API_IP),
        ServiceAddress("jobs", "pi-driver-svc", "10.244.0.11"),
    ]


def test_ended_pods_and_selectorless_services_get_no_address():
    pods = [PodAddress("jobs", {"app": "x"}, "10.244.0.11", ready=False)]
    services = [service("jobs", "gone", {"app": "x"}), service("jobs", "external")]
    assert service_addresses(services, pods, API_IP) == [
        ServiceAddress("default", "kubernetes", API_IP)
    ]


def test_the_api_service_always_points_at_the_forward():
    services = [service("default", "kubernetes", cluster_ip="10.96.0.1")]
    assert service_addresses(services, [], API_IP) == [
        ServiceAddress("default", "kubernetes", API_IP)
    ]
