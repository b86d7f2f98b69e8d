"""SparkK8sConnectServerOperator: a Spark Connect server as a DAG's resource, for Airflow's
setup and teardown tasks (docs/connect.md).

`mode="setup"` renders the server's driver through the feature steps
(`services.connect.server_lifecycle`), sends it, waits (deferred, or in the worker) until its gRPC
port answers, and returns the XCom: the `sc://` URL (no token) and the server's names.
`mode="teardown"` reads that XCom from `server_task_id` and deletes the server; nothing stays.
A server whose teardown never runs ends by its idle timeout or its maximum lifetime.

The token, when `token_conn_id` names a connection (its password), reaches the driver only
from a Secret owned by the driver pod; clients read the same connection
(`hooks.spark_connect_client`). Without a token the operator refuses to start the server
unless `allow_unauthenticated=True` says access is limited some other way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.application.connect import server_rules as rules
from airflow_provider_sparkk8s.errors import ConnectServerUnavailable, SparkConfError
from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID
from airflow_provider_sparkk8s.services.connect import server_lifecycle as connect_server
from airflow_provider_sparkk8s.services.connect import status_read as connect_status
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.submission.spark_line import (
    DEFAULT_SPARK_VERSION,
    version_from_image,
)
from airflow_provider_sparkk8s.triggers.connect_server import SparkK8sConnectServerTrigger
from airflow_provider_sparkk8s.version_compat import BaseHook, BaseOperator, mask_secret


class SparkK8sConnectServerOperator(BaseOperator):  # type: ignore[misc]
    """Start (setup) or delete (teardown) a Spark Connect server on Kubernetes.

    :param mode: "setup" starts the server; "teardown" deletes the one `server_task_id` started.
    :param image: the Spark image (4.0 or later); its tag gives the Spark line unless
        `spark_version` is set.
    :param conf: Spark conf for the server (executors, memory, ...); never the token.
    :param token_conn_id: a connection whose password is the bearer token clients send.
    :param allow_unauthenticated: start without a token (only where a NetworkPolicy or the
        network itself limits who reaches the port).
    :param idle_timeout: seconds without a running job after which the server deletes itself.
    :param max_lifetime: seconds after which it deletes itself, busy or not.
    :param address: "service" (clients dial the driver Service's DNS name) or "pod_ip".
    :param startup_timeout: seconds for the gRPC port to answer before setup fails.
    """

    template_fields = ("namespace", "conf", "name", "image", "server_task_id")
    ui_color = "#e8f4ff"

    def __init__(
        self,
        *,
        mode: str = "setup",
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        namespace: str | None = None,
        name: str = "spark-connect",
        image: str | None = None,
        spark_version: str | None = None,
        conf: Mapping[str, str] | None = None,
        token_conn_id: str | None = None,
        allow_unauthenticated: bool = False,
        idle_timeout: int = 1800,
        max_lifetime: int = 6 * 3600,
        address: str = "service",
        startup_timeout: int = 600,
        deferrable: bool = True,
        server_task_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        rules.check_mode(mode)
        rules.check_address(address)
        rules.Lifetime(idle_timeout, max_lifetime).check()
        if mode == "teardown" and not server_task_id:
            raise SparkConfError("server_task_id", server_task_id, "the setup task's task_id")
        if mode == "setup" and token_conn_id is None and not allow_unauthenticated:
            raise SparkConfError(
                "token_conn_id",
                None,
                "a connection whose password is the server's token, or "
                "allow_unauthenticated=True where a NetworkPolicy limits access",
            )
        self.mode = mode
        self.kubernetes_conn_id = kubernetes_conn_id
        self.namespace = namespace
        self.name = name
        self.image = image
        self.spark_version = spark_version
        self.conf = dict(conf or {})
        self.token_conn_id = token_conn_id
        self.allow_unauthenticated = allow_unauthenticated
        self.idle_timeout = idle_timeout
        self.max_lifetime = max_lifetime
        self.address = address
        self.startup_timeout = startup_timeout
        self.deferrable = deferrable
        self.server_task_id = server_task_id

    # ------------------------------------------------------------------ setup

    def _token(self) -> str | None:
        if self.token_conn_id is None:
            return None
        token = BaseHook.get_connection(self.token_conn_id).password
        if not token:
            raise SparkConfError(
                "token_conn_id", self.token_conn_id, "a connection with a password (the token)"
            )
        mask_secret(token)
        return str(token)

    def execute(self, context: Any) -> Any:
        hook = SparkK8sHook(self.kubernetes_conn_id, self.namespace)
        if self.mode == "teardown":
            return self._teardown(context, hook)
        image = self.image or self.conf.get("spark.kubernetes.container.image")
        if not image:
            raise SparkConfError("image", image, "a Spark 4.0+ image")
        version = self.spark_version or version_from_image(image) or DEFAULT_SPARK_VERSION
        namespace = hook.get_namespace()
        rules.check_namespace(namespace)
        conf = {"spark.app.name": self.name, **self.conf, "spark.kubernetes.namespace": namespace}
        client = hook.get_client()
        planned = connect_server.plan_server(
            conf,
            master="k8s://" + client.settings.server,
            spark_version=version,
            image=image,
            lifetime=rules.Lifetime(self.idle_timeout, self.max_lifetime),
            token=self._token(),
        )
        server = connect_server.start(client, planned, self.log)
        self.log.info(
            "Spark Connect server %s (%s) sent: driver pod %s, Service %s, port %d; "
            "idle timeout %ds, maximum lifetime %ds",
            server.application_id, version, server.driver_pod, server.service, server.port,
            self.idle_timeout, self.max_lifetime,
        )  # fmt: skip
        if self.deferrable:
            self.defer(
                trigger=SparkK8sConnectServerTrigger(
                    self.kubernetes_conn_id,
                    namespace,
                    server.driver_pod,
                    server.port,
                    self.startup_timeout,
                ),
                method_name="execute_complete",
                kwargs={"server": server.__dict__},
            )
        state = connect_server.wait_ready(
            DriverPods(hook.get_client()), server, self.startup_timeout
        )
        event = (
            {"status": "ready", "pod_ip": state.pod_ip}
            if isinstance(state, rules.Ready)
            else {"status": "ended", "reason": state.reason}
        )
        return self._ready(hook, server, event)

    def execute_complete(
        self, context: Any, event: Mapping[str, Any], server: Mapping[str, Any]
    ) -> Any:
        hook = SparkK8sHook(self.kubernetes_conn_id, self.namespace)
        return self._ready(hook, connect_server.StartedServer(**server), event)

    def _ready(
        self, hook: SparkK8sHook, server: connect_server.StartedServer, event: Mapping[str, Any]
    ) -> dict[str, Any]:
        if event.get("status") != "ready":
            # Nothing half-made stays: the server goes with the failure.
            connect_server.teardown(
                DriverPods(hook.get_client()), server.namespace, server.driver_pod
            )
            where = f"{server.namespace}:{server.driver_pod}"
            raise ConnectServerUnavailable(f"Spark Connect server {where}: {event.get('reason')}")
        host = rules.host_for(
            self.address, rules.Ready(str(event["pod_ip"])), server.service, server.namespace
        )
        url = rules.connect_url(host, server.port)
        self.log.info("Spark Connect server ready at %s", url)
        executors = connect_status.executors_of(
            DriverPods(hook.get_client()), server.namespace, server.application_id
        )
        self.log.info("Spark Connect server %s: %s", server.driver_pod, executors)
        return {
            "url": url,
            "application_id": server.application_id,
            "namespace": server.namespace,
            "driver_pod": server.driver_pod,
            "service": server.service,
            "port": server.port,
            "token_conn_id": self.token_conn_id,
        }

    # ------------------------------------------------------------------ teardown

    def _teardown(self, context: Any, hook: SparkK8sHook) -> None:
        published = context["ti"].xcom_pull(task_ids=self.server_task_id)
        if not published:
            self.log.info("No server was published by %s: nothing to delete", self.server_task_id)
            return
        pods = DriverPods(hook.get_client())
        pod = pods.get(published["namespace"], published["driver_pod"])
        if pod is not None:
            status = connect_status.server_status(pods, published, pod)
            self.log.info(
                "Spark Connect server %s before its deletion: %s; %s",
                published["driver_pod"], status.executors, status.sessions,
            )  # fmt: skip
        left = connect_server.teardown(pods, published["namespace"], published["driver_pod"])
        if left:
            raise ConnectServerUnavailable(
                f"Spark Connect server's pods still present after its deletion: {', '.join(left)}"
            )
        self.log.info("Spark Connect server %s deleted", published["driver_pod"])
