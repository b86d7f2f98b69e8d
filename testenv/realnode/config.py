"""The real node's configuration files, as data (pure): containerd's, the CNI network's,
the kubelet's, the API server's egress selector, and dnsmasq's records of the Services.

Every instance has a namespace of its own, so the addresses are the same in each; what
must differ between parallel runs (folders, the cgroup root) comes in as arguments.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from testenv.realnode.services import CLUSTER_DOMAIN, ServiceAddress

NODE_IP = "10.250.0.1"
NODE_PREFIX = 24
DEAD_END = "10.250.0.2"  # the default route's gateway: nobody answers there
POD_SUBNET = "10.244.0.0/24"
API_SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service's ClusterIP (first of the range)
API_FORWARD_PORT = 6443  # the forward's port inside the namespace
KUBELET_PORT = 10250
BRIDGE = "cni0"
INSIDE_NETWORKS = [f"{NODE_IP}/{NODE_PREFIX}", "10.244.0.0/16"]


@dataclass(frozen=True)
class NodePaths:
    """One instance's folders (all under its scratch folder)."""

    scratch: Path

    @property
    def containerd(self) -> Path:
        return self.scratch / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd / "containerd.sock"

    @property
    def kubelet(self) -> Path:
        return self.scratch / "kubelet"

    @property
    def cni_conf(self) -> Path:
        return self.scratch / "cni" / "conf"

    @property
    def dns_hosts(self) -> Path:
        return self.scratch / "dns-hosts"

    @property
    def egress_socket(self) -> Path:
        return self.scratch / "egress.sock"


def _toml_string(value: str) -> str:
    return json.dumps(value)  # TOML basic strings escape as JSON's do


def containerd_config(paths: NodePaths, packages: Path, sandbox_image: str) -> str:
    d = paths.containerd
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return "\n".join(
        [
            "version = 2",
            f"root = {_toml_string(str(d / 'root'))}",
            f"state = {_toml_string(str(d / 'state'))}",
            # Snapshotters and tracing that cannot work here (or would write elsewhere).
            "disabled_plugins = ["
            + ", ".join(
                _toml_string(f"io.containerd.{name}")
                for name in (
                    "snapshotter.v1.aufs",
                    "snapshotter.v1.btrfs",
                    "snapshotter.v1.devmapper",
                    "snapshotter.v1.zfs",
                    "tracing.processor.v1.otlp",
                    "internal.v1.tracing",
                )
            )
            + "]",
            "[grpc]",
            f"  address = {_toml_string(str(paths.containerd_socket))}",
            "[ttrpc]",
            f"  address = {_toml_string(str(d / 'containerd.sock.ttrpc'))}",
            '[plugins."io.containerd.internal.v1.opt"]',
            f"  path = {_toml_string(str(d / 'opt'))}",
            f"[{cri}]",
            f"  sandbox_image = {_toml_string(sandbox_image)}",
            '  stream_server_address = "127.0.0.1"',
            "  disable_apparmor = true",
            # No CAP_SYS_RESOURCE here: the kubelet's OOM score adjustments would fail.
            "  restrict_oom_score_adj = true",
            "  tolerate_missing_hugetlb_controller = true",
            f"[{cri}.containerd]",
            '  snapshotter = "overlayfs"',
            '  default_runtime_name = "runc"',
            f"[{cri}.containerd.runtimes.runc]",
            '  runtime_type = "io.containerd.runc.v2"',
            f"[{cri}.containerd.runtimes.runc.options]",
            "  SystemdCgroup = false",
            f"  BinaryName = {_toml_string(str(packages / 'usr/sbin/runc'))}",
            f"  Root = {_toml_string(str(d / 'runc-root'))}",
            f"[{cri}.cni]",
            f"  bin_dir = {_toml_string(str(packages / 'usr/lib/cni'))}",
            f"  conf_dir = {_toml_string(str(paths.cni_conf))}",
            "",
        ]
    )


def cni_network(paths: NodePaths) -> dict[str, object]:
    """The pods' network: a bridge with the gateway on it, addresses from host-local. No
    masquerading and no port maps: nothing leaves the namespace, no pod uses a hostPort."""
    return {
        "cniVersion": "0.4.0",
        "name": "sparkk8s-realnode",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(paths.scratch / "cni" / "ipam"),
                },
            }
        ],
    }


def kubelet_config(
    paths: NodePaths, ca_file: Path, cert_file: Path, key_file: Path, cgroup_root: str
) -> dict[str, object]:
    socket = f"unix://{paths.containerd_socket}"
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": NODE_IP,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        # The API server reaches the kubelet with no client certificate (controlplane.py
        # gives it none); the port is inside the namespace only.
        "authentication": {
            "anonymous": {"enabled": True},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(ca_file)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "tlsCertFile": str(cert_file),
        "tlsPrivateKeyFile": str(key_file),
        # This machine: cgroup v1 (deprecated in 1.35, refused unless said), swap, cgroupfs.
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        "cgroupRoot": cgroup_root,
        "containerRuntimeEndpoint": socket,
        "imageServiceEndpoint": socket,
        "podLogsDir": str(paths.scratch / "pod-logs"),
        "resolvConf": str(paths.scratch / "resolv.conf"),
        "clusterDNS": [NODE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "oomScoreAdj": 0,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
        },
        # There is no registry: an image collected could never come back.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "registerNode": True,
    }


def egress_selector(socket_path: Path) -> dict[str, object]:
    """The API server's egress: its `cluster` traffic (to kubelets, pods, Services)
    through the forward's HTTP CONNECT proxy on a unix socket."""
    return {
        "apiVersion": "apiserver.k8s.io/v1beta1",
        "kind": "EgressSelectorConfiguration",
        "egressSelections": [
            {
                "name": "cluster",
                "connection": {
                    "proxyProtocol": "HTTPConnect",
                    "transport": {"uds": {"udsName": str(socket_path)}},
                },
            }
        ],
    }


def dns_records(services: Iterable[ServiceAddress]) -> str:
    """dnsmasq's hosts file: each Service's full name (pods find the short ones through
    their search path)."""
    lines = [
        f"{service.ip}\t{service.name}.{service.namespace}.svc.{CLUSTER_DOMAIN}"
        for service in services
    ]
    return "".join(f"{line}\n" for line in lines)
