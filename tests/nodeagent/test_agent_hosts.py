"""The per-pod hosts file that stands in for cluster DNS (testenv/nodeagent/hosts.py)."""

from __future__ import annotations

from testenv.nodeagent.hosts import PodAddress, ServiceAddress, hosts_file, service_addresses

API_IP = "127.5.6.2"


def service(namespace, name, selector=None, cluster_ip="None"):
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"selector": selector or {}, "clusterIP": cluster_ip},
    }


def test_a_service_maps_to_the_first_live_pod_it_selects():
    pods = [
        PodAddress("jobs", {"spark-app-selector": "a", "spark-role": "driver"}, "127.5.6.12"),
        PodAddress("jobs", {"spark-app-selector": "a", "spark-role": "driver"}, "127.5.6.11"),
        PodAddress("jobs", {"spark-app-selector": "a", "spark-role": "executor"}, "127.5.6.13"),
        PodAddress("other", {"spark-app-selector": "a", "spark-role": "driver"}, "127.5.6.14"),
    ]
    services = [
        service("jobs", "pi-driver-svc", {"spark-app-selector": "a", "spark-role": "driver"})
    ]
    assert service_addresses(services, pods, API_IP) == [
        ServiceAddress("default", "kubernetes", API_IP),
        ServiceAddress("jobs", "pi-driver-svc", "127.5.6.11"),
    ]


def test_ended_pods_and_selectorless_services_get_no_address():
    pods = [PodAddress("jobs", {"app": "x"}, "127.5.6.11", ready=False)]
    services = [service("jobs", "gone", {"app": "x"}), service("jobs", "external")]
    assert service_addresses(services, pods, API_IP) == [
        ServiceAddress("default", "kubernetes", API_IP)
    ]


def test_the_api_service_always_points_at_the_forward():
    services = [service("default", "kubernetes", cluster_ip="10.96.0.1")]
    assert service_addresses(services, [], API_IP) == [
        ServiceAddress("default", "kubernetes", API_IP)
    ]


def test_the_file_names_loopback_the_pod_and_each_service():
    text = hosts_file(
        "pi-driver",
        "127.5.6.11",
        "jobs",
        [
            ServiceAddress("default", "kubernetes", API_IP),
            ServiceAddress("jobs", "pi-driver-svc", "127.5.6.11"),
        ],
    )
    lines = text.splitlines()
    assert "127.0.0.1\tlocalhost" in lines
    assert "127.5.6.11\tpi-driver" in lines
    assert (
        f"{API_IP}\tkubernetes.default.svc.cluster.local kubernetes.default.svc kubernetes.default"
        in lines
    )
    assert (
        "127.5.6.11\tpi-driver-svc.jobs.svc.cluster.local pi-driver-svc.jobs.svc pi-driver-svc.jobs pi-driver-svc"
        in lines
    )
    assert text.endswith("\n")
