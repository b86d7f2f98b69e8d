"""SparkK8sApplicationSensor: waits for a Spark application submitted elsewhere.

The application is named by its id (`spark-app-selector`), its driver pod's name, or a label
selector that matches its driver. Poke mode finds the application's pods with the sync client,
then each poke catches up on every change since the previous one (`DriverPods.catch_up`) and
hands them to the same follower as the trigger (`application.following.follower`), which remembers
the executors that came and went and the driver's end; deferrable mode hands the wait to
`SparkK8sApplicationTrigger` (one shared watch for every deferred task in the triggerer).
In reschedule mode each poke is a new task instance: it reads the pods as they are, without
that memory.

A driver Kueue holds is reported as "queued in ClusterQueue X: <Kueue's reason>" (its Workload
read at the gate, then every minute); the sensor has no queue timeout of its own (it did not
submit the application): its `timeout` bounds the wait.

Until the driver exists the sensor keeps waiting (the application may not be submitted yet);
the sensor's own `timeout` bounds that, from the first check: in deferrable mode the
deadline travels through every deferral, so re-deferring never restarts the window, and
each deferral's timeout is the nearer of that deadline and what is left of
`execution_timeout` (which Airflow's own timer stops enforcing once the task defers). Once
found, a failed or vanished driver fails the task. With `delete_on_timeout`, a timeout
(the sensor's, or execution_timeout, poking or deferred) deletes the driver and its uploads
before the task fails.

With `start_from_trigger=True` (Airflow 3.3) no worker runs the task:
`SparkK8sSensorTrigger` looks, follows and ends it in the triggerer, with the XCom and the
failures of the deferred sensor (`application/task/sensor_end.py`); a worker runs only to
fail what Airflow would otherwise retry (`execute_worker_free_end`), or the task Airflow's
own trigger timeout ended (`resume_execution`, as when deferred).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow_provider_sparkk8s.application.following.follower import Following, FollowSpec, Step
from airflow_provider_sparkk8s.application.following.timeouts import deferral_timeout, limit_text
from airflow_provider_sparkk8s.application.task.sensor_end import (
    application_failure,
    trigger_timeout,
)
from airflow_provider_sparkk8s.application.task.task_end import failure_of
from airflow_provider_sparkk8s.application.task.worker_free import (
    POKE_ONLY,
    check_plain,
    refuse_airflow,
    refuse_poke_only,
)
from airflow_provider_sparkk8s.errors import (
    NOT_RETRIED,
    InfrastructureFailure,
    SparkConfError,
)
from airflow_provider_sparkk8s.monitoring.reducer import DRIVER_CONTAINER, EXECUTOR_CONTAINER
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID
from airflow_provider_sparkk8s.services.following.follow_runs import FollowRun
from airflow_provider_sparkk8s.services.following.sensed_application import (
    Named,
    Target,
    has_driver,
    look_up,
    timed_out,
)
from airflow_provider_sparkk8s.services.pods.driver_pods import (
    DriverPods,
    FollowedPods,
    application_selector,
)
from airflow_provider_sparkk8s.triggers.spark_k8s_sensor import TEMPLATED_PARAMETERS
from airflow_provider_sparkk8s.triggers.worker_free_end import (
    check_dag_jinja,
    checked_dag,
    end_in_worker,
    start_args,
)
from airflow_provider_sparkk8s.version_compat import (
    AIRFLOW_VERSION,
    RETRY_POLICIES,
    START_FROM_TRIGGER_RENDERS,
    AirflowSensorTimeout,
    AirflowSkipException,
    AirflowTaskTimeout,
    BaseSensorOperator,
    PokeReturnValue,
    conf,
    is_deferral_timeout,
    not_retried,
    time_delta_trigger,
)

DEADLINE_XCOM_KEY = "sensor_deadline"
SENSOR_TRIGGER = "airflow_provider_sparkk8s.triggers.spark_k8s_sensor.SparkK8sSensorTrigger"


class SparkK8sApplicationSensor(BaseSensorOperator):
    """Waits until a Spark application on Kubernetes succeeds; fails the task if it fails.

    :param application_id: the application id (`spark-...`), or
    :param driver_pod_name: the driver pod's name, or
    :param label_selector: a label selector matching the driver pod (the newest one counts).
    :param namespace: the namespace (default: the connection's).
    :param kubernetes_conn_id: the `spark_k8s` connection.
    :param driver_container: the driver container's name (a pod template's container name).
    :param deferrable: wait in the triggerer instead of poking from a worker (default:
        ``[operators] default_deferrable``, as for Airflow's own sensors).
    :param resync_interval: the shared store's full-list interval (deferrable mode).
    :param stream_logs: copy the driver log into the task log (deferrable mode).
    :param delete_on_timeout: when the sensor times out (its ``timeout``, or
        ``execution_timeout``), delete the driver pod and the files it uploaded. Off by
        default: the sensor did not submit the application.
    :param upload_conn_id: the upload storage's connection, for that removal (None: the
        driver's ``spark.hadoop.fs.s3a.*`` keys and the environment).
    :param start_from_trigger: worker-free (Airflow 3.3+): the triggerer renders the names,
        finds and follows the application and ends the task (``SparkK8sSensorTrigger``),
        with no worker; the settings of a poke are refused when the DAG is parsed
        (docs/operator.md, "Worker-free"), and so is a name templated with the DAG's
        ``user_defined_macros`` or ``user_defined_filters``: the triggerer renders without
        them (use ``params``). ``deferrable`` then plays no part.
    """

    template_fields: Sequence[str] = TEMPLATED_PARAMETERS

    def __init__(
        self,
        *,
        application_id: str | None = None,
        driver_pod_name: str | None = None,
        label_selector: str | None = None,
        namespace: str | None = None,
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        driver_container: str = DRIVER_CONTAINER,
        executor_container: str = EXECUTOR_CONTAINER,
        deferrable: bool | None = None,
        resync_interval: float = 30.0,
        stream_logs: bool = False,
        delete_on_timeout: bool = False,
        upload_conn_id: str | None = None,
        start_from_trigger: bool = False,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        given = {
            name: value
            for name, value in (
                ("application_id", application_id),
                ("driver_pod_name", driver_pod_name),
                ("label_selector", label_selector),
            )
            if value
        }
        if len(given) != 1:
            raise SparkConfError(
                "application_id/driver_pod_name/label_selector",
                given or None,
                "exactly one of application_id, driver_pod_name or label_selector",
            )
        self.application_id = application_id
        self.driver_pod_name = driver_pod_name
        self.label_selector = label_selector
        self.namespace = namespace
        self.kubernetes_conn_id = kubernetes_conn_id
        self.driver_container = driver_container
        self.executor_container = executor_container
        if deferrable is None:
            deferrable = conf.getboolean("operators", "default_deferrable", fallback=False)
        self.deferrable = deferrable
        self.resync_interval = resync_interval
        self.stream_logs = stream_logs
        self.delete_on_timeout = delete_on_timeout
        self.upload_conn_id = upload_conn_id
        self._seen_driver = False  # poke mode: a driver seen once and then gone is a failure
        # Poke mode, once found: where the catch-up left off, and the follower's memory.
        self._following: tuple[FollowedPods, Following] | None = None
        self._run: FollowRun  # the follow loop, a look a poke (set with `_following`)
        self._start_in_triggerer(start_from_trigger)

    def _start_in_triggerer(self, start_from_trigger: bool) -> None:
        """`start_from_trigger=True`: Airflow 3.3 defers the task straight to the triggerer,
        where `SparkK8sSensorTrigger` runs all of it. What needs a worker is refused here,
        when the DAG is parsed (`application/task/worker_free.py`)."""
        self.start_from_trigger = start_from_trigger
        if not start_from_trigger:
            return
        refuse_airflow(str(AIRFLOW_VERSION), START_FROM_TRIGGER_RENDERS)
        refuse_poke_only({name: getattr(self, name) for name in POKE_ONLY})
        policy = getattr(self, "retry_policy", None)
        factor = getattr(policy, "memory_factor", None)
        execution = self.execution_timeout
        kwargs = {
            **{name: getattr(self, name) for name in TEMPLATED_PARAMETERS},
            "kubernetes_conn_id": self.kubernetes_conn_id,
            "driver_container": self.driver_container,
            "executor_container": self.executor_container,
            "resync_interval": self.resync_interval,
            "stream_logs": self.stream_logs,
            "delete_on_timeout": self.delete_on_timeout,
            "upload_conn_id": self.upload_conn_id,
            "poke_interval": float(self.poke_interval),
            "timeout": float(self.timeout),
            "execution_timeout": None if execution is None else execution.total_seconds(),
            "soft_fail": self.soft_fail,
            "retry_policy": policy is not None,
            "memory_factor": float(factor) if isinstance(factor, (int, float)) else None,
        }
        check_plain(kwargs)
        check_dag_jinja(self)
        self.start_trigger_args = start_args(
            SENSOR_TRIGGER, kwargs, trigger_timeout(float(self.timeout))
        )

    # A DAG given after __init__ is checked as one given to it (`check_dag_jinja`).
    dag = checked_dag(BaseSensorOperator.dag)

    @property
    def named(self) -> Named:
        """How the DAG names the application (rendered, once the task runs)."""
        return Named(self.application_id, self.driver_pod_name, self.label_selector)

    # ------------------------------------------------------------------ finding the application

    def _hook(self) -> Any:
        from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook

        return SparkK8sHook(self.kubernetes_conn_id, self.namespace)

    def _find(self) -> tuple[Target, str]:
        """The application, through a hook whose client is closed before returning."""
        return look_up(self._hook(), self.named)

    # ------------------------------------------------------------------ poke mode

    def _look(self) -> Step | None:
        """Poke mode: find the application until its driver exists (None before), then
        follow its pods: each look catches up on every version since the previous one."""
        hook = self._hook()
        try:
            service = DriverPods(hook.get_client())
            if self._following is None:
                namespace = hook.get_namespace()
                target = self.named.find(service, namespace)
                app = target.found
                if app is None:
                    return None
                spec = FollowSpec(
                    app,
                    namespace,
                    driver_pod_name=target.driver_pod,
                    driver_container=self.driver_container,
                    executor_container=self.executor_container,
                )
                selector = application_selector(app)
                self._run = FollowRun(Following(spec), read_queue=service.queue_view)
                self._following = (FollowedPods(namespace, selector), self._run.following)
            followed, _ = self._following
            # Queued in Kueue: the ClusterQueue and Kueue's reason, through this poke's client.
            self._run.read_queue = service.queue_view
            versions = service.catch_up(followed)  # first: it brings `followed.pods` up to date
            step = self._run.look((followed.pods.values(), versions))
        finally:
            hook.close()
        self._following = (followed, step.following)
        return step

    def poke(self, context: Any) -> bool | PokeReturnValue:
        step = self._look()
        state = None if step is None else step.following.state
        # A driver gone with its end known (evicted, preempted...: the follower read the
        # DisruptionTarget condition in this poke's catch-up or the poke before) ends as such.
        ended = state is not None and state.state in ("succeeded", "failed")
        if step is None or state is None or not (has_driver(step.pods) or ended):
            if self._seen_driver:
                raise InfrastructureFailure(
                    f"[infrastructure] the driver of {self._what()} disappeared before the "
                    "application finished",
                    reason="DriverPodNotFound",
                )
            self.log.info("No Spark driver found yet for %s", self._what())
            return False
        self._seen_driver = True
        app = step.following.spec.application_id
        self.log.info("Spark application %s: %s", app, state.describe())
        if state.state == "succeeded":
            value = {"application_id": app, **state.to_dict()}
            if step.final is not None and "cost" in step.final:  # the step that ended it
                value["cost"] = step.final["cost"]
            return PokeReturnValue(True, value)
        if state.state == "failed":
            message = f"Spark application {app} failed: {state.describe()}"
            raise _typed(application_failure(state.to_dict(), message))
        return False  # submitted, pending, running; unknown = executors without a driver yet

    def _what(self) -> str:
        return self.named.what()

    # ------------------------------------------------------------------ deferrable mode

    def remaining_seconds(self, deadline: str | None, now: datetime) -> tuple[float, str]:
        """(seconds left, the deadline as ISO text); the first call starts the window.

        Raises the sensor's timeout (or skips, with `soft_fail`) once it has passed.
        """
        if deadline:
            end = datetime.fromisoformat(deadline)
        else:
            end = now + timedelta(seconds=float(self.timeout))
        remaining = (end - now).total_seconds()
        if remaining <= 0:
            message = (
                f"Sensor timed out after {float(self.timeout):g}s: no finished Spark "
                f"application for {self._what()}"
            )
            if self.soft_fail:
                raise AirflowSkipException(message)
            raise AirflowSensorTimeout(message)
        return remaining, end.isoformat()

    def _deadline(self, context: Any, deadline: str | None, resumed: bool) -> str | None:
        """The deadline from the deferral's kwargs, else, on a resume, from this try's XCom
        (`dag.test()` resumes with the trigger's event only, dropping the kwargs); None on a
        first call (nothing to read: reading a missing XCom logs an error)."""
        ti = context.get("ti") if isinstance(context, Mapping) else None
        if deadline or ti is None or not resumed:
            return deadline
        stored = ti.xcom_pull(task_ids=ti.task_id, key=DEADLINE_XCOM_KEY, map_indexes=ti.map_index)
        if isinstance(stored, Mapping) and stored.get("try_number") == ti.try_number:
            return stored.get("deadline")
        return None

    def execute(self, context: Any, event: Any = None, deadline: str | None = None) -> Any:
        if not self.deferrable:
            try:
                return super().execute(context)
            except (AirflowSensorTimeout, AirflowTaskTimeout) as error:
                # The sensor's timeout, or execution_timeout's signal, while poking.
                raise type(error)(f"{error}; {self._timed_out()}") from error
        # A first call has neither; a resume after a poke interval has the trigger's event.
        return self._defer_wait(context, deadline, resumed=event is not None)

    def _defer_wait(self, context: Any, deadline: str | None, resumed: bool) -> None:
        """Look for the application, then defer: to the application's trigger once its driver
        exists, else for a poke interval; never past the deadline."""
        known = self._deadline(context, deadline, resumed)
        now = datetime.now(UTC)
        remaining, deadline = self.remaining_seconds(known, now)
        ti = context.get("ti") if isinstance(context, Mapping) else None
        left = deferral_timeout(self.execution_timeout, getattr(ti, "start_date", None), now)
        if left is not None:
            if left <= timedelta(0):
                self._fail_by_timeout(f"execution_timeout={limit_text(self.execution_timeout)}")
            remaining = min(remaining, left.total_seconds())
        if known is None and isinstance(context, Mapping) and context.get("ti") is not None:
            ti = context["ti"]
            value = {"deadline": deadline, "try_number": ti.try_number}
            ti.xcom_push(key=DEADLINE_XCOM_KEY, value=value)
        target, namespace = self._find()
        app = target.found
        if app is None:
            # Not submitted yet: come back after a poke interval, without holding a worker.
            wait = min(float(self.poke_interval), remaining)
            self.log.info(
                "No Spark driver found yet for %s; checking again in %ss (%.0fs left)",
                self._what(),
                wait,
                remaining,
            )
            self.defer(
                trigger=time_delta_trigger(timedelta(seconds=wait)),
                method_name="execute",
                kwargs={"deadline": deadline},
                timeout=timedelta(seconds=remaining),
            )
        from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger

        self.defer(
            trigger=SparkK8sApplicationTrigger(
                application_id=app,
                namespace=namespace,
                kubernetes_conn_id=self.kubernetes_conn_id,
                driver_pod_name=target.driver_pod,
                driver_container=self.driver_container,
                executor_container=self.executor_container,
                resync_interval=self.resync_interval,
                stream_logs=self.stream_logs,
                delete_on_kill=False,  # the sensor did not submit it: not ours to delete
            ),
            method_name="execute_complete",
            kwargs={"deadline": deadline},
            timeout=timedelta(seconds=remaining),
        )

    # ------------------------------------------------------------------ timeouts

    def resume_execution(
        self, next_method: str, next_kwargs: dict[str, Any] | None, context: Any
    ) -> Any:
        """A deferral's timeout (the sensor's timeout or execution_timeout, whichever was
        nearer) resumes the task to fail it: say which application, and, with
        `delete_on_timeout`, delete its driver first."""
        if is_deferral_timeout(next_method, next_kwargs):
            self._fail_by_timeout("the sensor's timeout or execution_timeout")
        return super().resume_execution(next_method, next_kwargs, context)

    def _fail_by_timeout(self, which: str) -> None:
        message = f"Sensor timed out ({which}) while deferred; {self._timed_out()}"
        if self.soft_fail:
            raise AirflowSkipException(message)
        raise AirflowSensorTimeout(message)

    def _timed_out(self) -> str:
        """What the timeout met, for its message: the driver and how long it ran, and, with
        `delete_on_timeout`, its deletion (with its uploads)."""
        from airflow_provider_sparkk8s.hooks.upload_storage import SparkK8sUploadStorageHook

        return timed_out(
            self._hook(),
            self.named,
            delete=self.delete_on_timeout,
            remove_uploads=SparkK8sUploadStorageHook(self.upload_conn_id).remove,
            log=self.log,
        )

    def execute_complete(
        self, context: Any, event: Mapping[str, Any] | None = None, deadline: str | None = None
    ) -> Any:
        if not isinstance(event, Mapping) or "status" not in event:
            # Resumed without the trigger's event (its process was killed): look again.
            self.log.info("Resumed without the trigger's event; looking for %s again", self._what())
            return self._defer_wait(context, deadline, resumed=True)
        if event.get("status") == "success":
            return dict(event)
        raise _typed(application_failure(event))

    def execute_worker_free_end(self, context: Any, event: Any = None) -> None:
        """A worker-free task's failure that must not retry (triggers/worker_free_end.py)."""
        end_in_worker(event, context["ti"].xcom_push)


def _typed(failure: Mapping[str, Any]) -> Exception:
    """The typed outcome of a failed application (the operator's classes); before Airflow
    3.3, which has no retry policies, an application or configuration error is
    AirflowFailException."""
    error = failure_of(failure)
    if isinstance(error, NOT_RETRIED) and not RETRY_POLICIES:
        return not_retried(error, error.kind.replace("_", " "))
    return error
