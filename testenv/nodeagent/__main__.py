"""`python -m testenv.nodeagent <config.json>`: runs the node agent until SIGTERM or SIGINT,
then kills every container it started and exits. `ControlPlane(process_nodes=1)` starts it."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path

from testenv.admin_client import AdminHttp
from testenv.nodeagent.images import load_images
from testenv.nodeagent.kubelet import AgentConfig, Kubelet
from testenv.nodeagent.runtime import ProcessRuntime


def main(argv: list[str]) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if len(argv) != 1:
        print("usage: python -m testenv.nodeagent <config.json>", file=sys.stderr)
        return 2
    config = AgentConfig.from_json(Path(argv[0]).read_text())
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    client = AdminHttp.from_kubeconfig(config.kubeconfig)
    runtime = ProcessRuntime(config.state_dir, config.node_name)
    kubelet = Kubelet(config, client, runtime, load_images(config.images_file))
    try:
        kubelet.start()
        logging.getLogger("testenv.nodeagent").info(
            "node %s ready at %s", config.node_name, config.node_ip
        )
        stop.wait()
    finally:
        kubelet.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
