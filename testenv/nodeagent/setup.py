"""What the control plane prepares for its node agent: a loopback /24 of its own, a node
identity (`system:node:<name>`, so the API server's Node authorizer limits it to what a
kubelet may do), a kubelet serving certificate, and the agent's config file."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from testenv.nodeagent.kubelet import AgentConfig
from testenv.pki import PkiFiles, issue_from_ca

NODE_NAME = "process-node-0"
KUBELET_PORT = 10250
REPO = Path(__file__).resolve().parents[2]
# Requests are bookkeeping here: two real cores run a driver and executors that each ask
# for one, so the node declares more CPUs than it has (memory is the machine's own).
MIN_CPU_CAPACITY = 16


def pick_address_block(rng: random.Random | None = None) -> str:
    """A random 127.a.b.0/24 (a >= 100), so agents of parallel test sessions on one machine
    do not share pod addresses; .1 is the node, .2 the API forward, .10+ the pods."""
    rng = rng or random.Random()
    return f"127.{rng.randint(100, 254)}.{rng.randint(0, 255)}."


def machine_memory_bytes() -> int:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 8 * 2**30


def capacity() -> dict[str, str]:
    cpus = max(MIN_CPU_CAPACITY, os.cpu_count() or 1)
    memory_mib = machine_memory_bytes() // 2**20
    return {
        "cpu": str(cpus),
        "memory": f"{memory_mib}Mi",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }


def node_agent_config(
    pki: PkiFiles, directory: Path, apiserver_port: int, images_file: Path | None
) -> AgentConfig:
    directory.mkdir(parents=True, exist_ok=True)
    prefix = pick_address_block()
    node_ip = f"{prefix}1"
    issue_from_ca(
        pki, directory / "node.crt", directory / "node.key", f"system:node:{NODE_NAME}",
        "system:nodes",
    )  # fmt: skip
    issue_from_ca(
        pki, directory / "kubelet.crt", directory / "kubelet.key", NODE_NAME,
        server_names=[node_ip, NODE_NAME],
    )  # fmt: skip
    kubeconfig = directory / "node.kubeconfig"
    server = f"https://127.0.0.1:{apiserver_port}"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "plane",
                        "cluster": {"server": server, "certificate-authority": str(pki.ca_cert)},
                    }
                ],
                "users": [
                    {"name": "node", "user": {"client-certificate": str(directory / "node.crt"),
                                              "client-key": str(directory / "node.key")}}
                ],
                "contexts": [{"name": "node", "context": {"cluster": "plane", "user": "node"}}],
                "current-context": "node",
            }
        )
    )  # fmt: skip
    kubeconfig.chmod(0o600)
    return AgentConfig(
        node_name=NODE_NAME,
        node_ip=node_ip,
        kubelet_port=KUBELET_PORT,
        api_service_ip=f"{prefix}2",
        api_server=("127.0.0.1", apiserver_port),
        kubeconfig=kubeconfig,
        state_dir=directory / "state",
        serving_cert=directory / "kubelet.crt",
        serving_key=directory / "kubelet.key",
        pod_ip_prefix=prefix,
        capacity=capacity(),
        images_file=images_file,
    )


def agent_command(config_file: Path) -> list[str]:
    """The agent runs from this checkout, whatever the working directory."""
    bootstrap = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); "
        "from testenv.nodeagent.__main__ import main; sys.exit(main(sys.argv[1:]))"
    )
    return [sys.executable, "-c", bootstrap, str(config_file)]
