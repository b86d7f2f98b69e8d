"""The real node's pure parts: its configuration files, the forward's CONNECT handling, the
DNS records and the image layer writer (no namespaces, no processes)."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from testenv.realnode.config import (
    INSIDE_NETWORKS,
    NODE_IP,
    NodePaths,
    cni_network,
    containerd_config,
    dns_records,
    egress_selector,
    kubelet_config,
)
from testenv.realnode.forward import ForwardConfig, connect_target, where
from testenv.realnode.image import Layout, _with_libraries, jar_native_libraries, write_layer
from testenv.realnode.services import ServiceAddress
from tests.realnode.conftest import spark_lines_of


def test_containerd_config_is_toml_with_everything_under_the_instance_folder(tmp_path: Path):
    paths = NodePaths(tmp_path)
    config = tomllib.loads(containerd_config(paths, Path("/pkg"), "sparkk8s.local/pause:1"))
    assert config["version"] == 2
    assert config["root"].startswith(str(tmp_path)) and config["state"].startswith(str(tmp_path))
    assert config["grpc"]["address"] == str(paths.containerd_socket)
    assert config["plugins"]["io.containerd.internal.v1.opt"]["path"].startswith(str(tmp_path))
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "sparkk8s.local/pause:1"
    assert cri["restrict_oom_score_adj"] is True
    runc = cri["containerd"]["runtimes"]["runc"]["options"]
    assert runc == {
        "SystemdCgroup": False,
        "BinaryName": "/pkg/usr/sbin/runc",
        "Root": str(tmp_path / "containerd" / "runc-root"),
    }
    assert cri["cni"] == {"bin_dir": "/pkg/usr/lib/cni", "conf_dir": str(paths.cni_conf)}


def test_the_cni_network_is_a_bridge_that_never_masquerades(tmp_path: Path):
    plugins = cni_network(NodePaths(tmp_path))["plugins"]
    assert isinstance(plugins, list) and len(plugins) == 1
    bridge = plugins[0]
    assert bridge["type"] == "bridge" and bridge["isGateway"] is True
    assert bridge["ipMasq"] is False
    assert bridge["ipam"]["dataDir"].startswith(str(tmp_path))


def test_the_kubelet_config_keeps_images_and_accepts_this_machine(tmp_path: Path):
    config = kubelet_config(
        NodePaths(tmp_path), Path("/ca"), Path("/crt"), Path("/key"), "/sparkk8s-realnode-x"
    )
    assert config["failCgroupV1"] is False and config["failSwapOn"] is False
    assert config["cgroupDriver"] == "cgroupfs" and config["cgroupRoot"] == "/sparkk8s-realnode-x"
    assert config["imageGCHighThresholdPercent"] == 100  # no registry: never collect
    assert config["clusterDNS"] == [NODE_IP] and config["address"] == NODE_IP
    assert config["healthzBindAddress"] == "127.0.0.1"
    assert str(config["containerRuntimeEndpoint"]).startswith(f"unix://{tmp_path}")


def test_the_egress_selector_sends_cluster_traffic_to_the_socket(tmp_path: Path):
    selection = egress_selector(tmp_path / "egress.sock")["egressSelections"]
    assert selection == [
        {
            "name": "cluster",
            "connection": {
                "proxyProtocol": "HTTPConnect",
                "transport": {"uds": {"udsName": str(tmp_path / "egress.sock")}},
            },
        }
    ]


def test_connect_request_lines_are_parsed_or_refused():
    assert connect_target(b"CONNECT 10.250.0.1:10250 HTTP/1.1\r\n") == ("10.250.0.1", 10250)
    assert connect_target(b"CONNECT [::1]:8443 HTTP/1.1\r\n") == ("::1", 8443)
    for line in (b"GET / HTTP/1.1\r\n", b"CONNECT 10.0.0.1:80\r\n", b""):
        with pytest.raises(ValueError, match="not a CONNECT request line"):
            connect_target(line)


def test_connect_targets_go_inside_to_the_node_and_pods_and_nowhere_else():
    assert where(NODE_IP, INSIDE_NETWORKS) == "inside"
    assert where("10.244.0.7", INSIDE_NETWORKS) == "inside"
    assert where("127.0.0.1", INSIDE_NETWORKS) == "host"
    assert where("192.0.2.10", INSIDE_NETWORKS) == "refused"  # never off the machine


def test_the_forward_config_round_trips_through_json():
    config = ForwardConfig("/proc/1/ns/net", [("127.0.0.1", 6443)], ("127.0.0.1", 1), "/s", [])
    assert ForwardConfig.from_json(config.to_json()) == config
    assert json.loads(config.to_json())["listen"] == [["127.0.0.1", 6443]]
    # A port exposed to the pods: inward only, no egress proxy.
    exposed = ForwardConfig("/proc/1/ns/net", [(NODE_IP, 9000)], ("127.0.0.1", 9000), None, [])
    assert ForwardConfig.from_json(exposed.to_json()) == exposed


def test_dns_records_name_each_service_in_full():
    text = dns_records(
        [
            ServiceAddress("default", "kubernetes", "10.96.0.1"),
            ServiceAddress("ns", "pi", "10.244.0.5"),
        ]
    )
    assert text == (
        "10.96.0.1\tkubernetes.default.svc.cluster.local\n10.244.0.5\tpi.ns.svc.cluster.local\n"
    )


def test_a_layer_holds_files_dirs_and_links_owned_as_said(tmp_path: Path):
    source = tmp_path / "tool"
    source.write_bytes(b"#!/bin/sh\necho hi\n")
    source.chmod(0o755)
    layout = Layout()
    layout.files["usr/bin/tool"] = source
    layout.texts["etc/passwd"] = "spark:x:185:185::/home/spark:/bin/sh\n"
    layout.text_modes["etc/passwd"] = 0o664
    layout.texts["etc/group"] = "spark:x:185:\n"
    layout.dirs["opt/spark/work-dir"] = (185, 0o775)
    layout.links["bin"] = "usr/bin"
    module = tmp_path / "os.py"
    module.write_text("")
    os.utime(module, (1_700_000_000, 1_700_000_000))
    layout.files["usr/lib/python3.11/os.py"] = module
    layout.dated = ("usr/lib/python3.11/",)
    out = tmp_path / "layer.tar"
    digest = write_layer(layout, out)
    assert digest == hashlib.sha256(out.read_bytes()).hexdigest()  # the diff_id
    with tarfile.open(out) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert members["usr/bin/tool"].mode == 0o755
        assert tar.extractfile("usr/bin/tool").read() == source.read_bytes()  # type: ignore[union-attr]
        work = members["opt/spark/work-dir"]
        assert work.isdir() and work.uid == 185 and work.mode == 0o775
        assert members["opt"].isdir() and members["opt"].uid == 0  # parents made, root's
        assert members["bin"].issym() and members["bin"].linkname == "usr/bin"
        # Group root may add a passwd entry (an unknown runAsUser); other texts are 0644.
        assert (members["etc/passwd"].mode, members["etc/group"].mode) == (0o664, 0o644)
        assert members["etc/passwd"].gid == 0
        # Dated 0, but for the files whose time a cached bytecode checks.
        assert members.pop("usr/lib/python3.11/os.py").mtime == 1_700_000_000
        assert [m.mtime for m in members.values()] == [0] * len(members)


def test_libraries_go_where_the_loader_looks_in_a_merged_usr_image():
    layout = _with_libraries(Layout(files={"usr/bin/ls": Path("/usr/bin/ls")}))
    libc = [arc for arc in layout.files if arc.endswith("/libc.so.6")]
    assert libc == ["usr/lib/x86_64-linux-gnu/libc.so.6"]  # the soname, under /usr
    assert "usr/lib64/ld-linux-x86-64.so.2" in layout.files


def test_the_linux_native_code_in_jars_brings_the_libraries_it_needs(tmp_path: Path):
    # As zstd-jni's jar: the JVM unpacks the library at run time (4.3.0's event log needs
    # libpthread.so.0 that way). Other systems' and architectures' builds are not read.
    host = Path("/usr/lib/x86_64-linux-gnu")
    jar = tmp_path / "native.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("linux/amd64/libstdcxx-copy.so", (host / "libstdc++.so.6").read_bytes())
        archive.writestr("freebsd/amd64/libssl-copy.so", (host / "libssl.so.3").read_bytes())
        archive.writestr("linux/aarch64/libssl-copy.so", (host / "libssl.so.3").read_bytes())
    needed = {Path(library).name for library in jar_native_libraries([jar])}
    assert {"libm.so.6", "libgcc_s.so.1", "libc.so.6"} <= needed
    assert "libcrypto.so.3" not in needed
    layout = _with_libraries(Layout(libraries={str(host / "libgcc_s.so.1")}))
    assert "usr/lib/x86_64-linux-gnu/libgcc_s.so.1" in layout.files


def test_the_prefetched_lines_are_those_the_node_tests_ask_for_in_their_order():
    def item(fixtures: tuple[str, ...], version: str | None = None) -> SimpleNamespace:
        callspec = SimpleNamespace(params={"version": version}) if version else None
        return SimpleNamespace(fixturenames=fixtures, callspec=callspec)

    items = [
        item(("real_plane",)),
        item(("real_node", "real_plane"), "4.1.4"),
        item(("control_plane",), "3.5.9"),  # not a real-node test (the KWOK plane)
        item(("real_node",), "3.5.9"),
        item(("real_node",), "4.1.4"),
    ]
    assert spark_lines_of(items) == ["4.1.4", "3.5.9"]  # type: ignore[arg-type]
