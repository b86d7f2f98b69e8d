"""The real-Spark plane `make demo` runs on, as a command: the control plane whose only node
is the real node (testenv/realnode: the kubelet, containerd and runc in namespaces of its
own), the Spark images from pyspark, and one
namespace with docs/rbac.yaml applied as the cluster's administrator would. It prints a
kubeconfig for the documented submitter (the `airflow` service account), and runs until
interrupted.

    SPARKK8S_TESTENV_BIN=$(./testenv/build.sh) .venv/bin/python -m testenv.spark_plane
    make spark-plane

The KWOK plane (`python -m testenv.controlplane`) starts faster, but its pods never run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from testenv.admin_client import AdminHttp, AdminHttpError
from testenv.controlplane import ControlPlane, StopSignals
from testenv.processes import wait_until
from testenv.rbac import DRIVER_SERVICE_ACCOUNT, apply_documented_rbac
from testenv.realnode.node import RealNode
from testenv.runtime_image import RUNTIME_VERSIONS, SPARK_VERSION

NAMESPACE = "spark"
SUBMITTER = "airflow"  # the service account the documented submitter Role is bound to
TOKEN_SECONDS = 24 * 3600


def _default_account_exists(admin: AdminHttp, namespace: str) -> bool:
    try:
        admin.request("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
    except AdminHttpError as error:
        if error.status == 404:
            return False
        raise
    return True


def open_namespace(
    plane: ControlPlane,
    namespace: str,
    kubeconfig: Path,
    submitter: str = SUBMITTER,
    token_seconds: int = TOKEN_SECONDS,
) -> Path:
    """The administrator's part: creates `namespace`, waits for its default service account
    (pods are refused until it exists), applies docs/rbac.yaml with `submitter` bound to the
    submitter Role, and writes `kubeconfig` with the submitter's token."""
    admin = AdminHttp.from_kubeconfig(plane.admin_kubeconfig)
    try:
        admin.request("POST", "/api/v1/namespaces", json={"metadata": {"name": namespace}})
        wait_until(
            lambda: _default_account_exists(admin, namespace),
            60,
            f"the default service account of {namespace}",
        )
        apply_documented_rbac(admin, namespace, submitter)
    finally:
        admin.close()
    token = plane.request_token(namespace, submitter, expiration_seconds=token_seconds)
    return plane.write_kubeconfig(kubeconfig, namespace, token=token)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m testenv.spark_plane",
        description=(
            "Start the real-Spark plane `make demo` uses (kube-apiserver, etcd, controllers, "
            "scheduler and the real node: the kubelet, containerd and runc in namespaces of "
            "its own), apply "
            "docs/rbac.yaml to one namespace, print a kubeconfig for the submitter, and run "
            "until interrupted (Ctrl-C or SIGTERM stops every process and removes the temp "
            "dir). Needs SPARKK8S_TESTENV_BIN (or builds the binaries with testenv/build.sh)."
        ),
    )
    parser.add_argument(
        "--namespace", default=NAMESPACE, help=f"the namespace to open (default {NAMESPACE})"
    )
    parser.add_argument(
        "--all-lines",
        action="store_true",
        help=f"lay out the images of every Spark line the tests run ({', '.join(RUNTIME_VERSIONS)})"
        f", not only {SPARK_VERSION}'s",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    started = time.monotonic()
    stop = StopSignals()
    lines_wanted = RUNTIME_VERSIONS if options.all_lines else (SPARK_VERSION,)
    node = RealNode()
    plane = ControlPlane(node_count=0, cluster_egress_socket=node.paths.egress_socket)
    try:
        plane.start()
        node.start(plane)
        names = ", ".join(node.ensure_spark_image(version) for version in lines_wanted)
        return _serve(plane, node, options.namespace, names, stop, started)
    finally:
        node.stop()
        plane.stop()


def _serve(
    plane: ControlPlane,
    node: RealNode,
    namespace: str,
    images: str,
    stop: StopSignals,
    started: float,
) -> int:
    kubeconfig = plane.workdir / "submitter.kubeconfig"
    open_namespace(plane, namespace, kubeconfig)
    lines = (
        f"real-Spark plane ready in {time.monotonic() - started:.1f}s",
        f"server:     {plane.server}",
        f"kubeconfig: {kubeconfig}  (namespace {namespace}, as {SUBMITTER})",
        f"admin:      {plane.admin_kubeconfig}",
        f"image:      {images}; the driver's service account: {DRIVER_SERVICE_ACCOUNT}",
        f"pods on:    node {node.node_name} (real kubelet)",
        f"logs:       {plane.logs_dir}",
        "Ctrl-C stops it and removes the temp dir.",
    )
    # Flushed: a reader on a pipe (a script waiting for the kubeconfig) sees it now.
    print("\n".join(lines), flush=True)
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
