"""The exception line of a failed driver's log (monitoring/driver_failure.py)."""

from __future__ import annotations

from airflow_provider_sparkk8s.monitoring.driver_failure import exception_line

SHUTDOWN = [
    "26/11/30 11:08:55 INFO SparkContext: Successfully stopped SparkContext",
    "26/11/30 11:08:55 INFO ShutdownHookManager: Shutdown hook called",
    "26/11/30 11:08:55 INFO ShutdownHookManager: Deleting directory /var/data/spark-1/spark-2",
]


def test_a_python_traceback_gives_its_last_line_despite_the_shutdown_lines_after_it():
    log = [
        "26/11/30 11:08:50 INFO SparkContext: Running Spark version 4.3.0",
        "Traceback (most recent call last):",
        '  File "/opt/sparkk8s/examples/fail.py", line 27, in <module>',
        "    raise RuntimeError(message)",
        "RuntimeError: no input today",
        *SHUTDOWN,
    ]
    assert exception_line(log) == "RuntimeError: no input today"


def test_a_spark_threads_logged_error_after_the_traceback_is_not_what_the_driver_died_of():
    """The real kubelet's run of fail.py: the executor-pod poller logged its closed
    client's error after the application's traceback."""
    log = [
        "Traceback (most recent call last):",
        "    raise RuntimeError(message)",
        "RuntimeError: e2e outcome: failing on purpose",
        "26/12/02 13:47:24 ERROR Utils: Uncaught exception in thread kubernetes-executor-pod-polling-sync",
        "io.fabric8.kubernetes.client.KubernetesClientException: Operation: [list]  for kind: [Pod]  failed.",
        "\tat io.fabric8.kubernetes.client.KubernetesClientException.launderThrowable(X.java:139)",
        *SHUTDOWN,
    ]
    assert exception_line(log) == "RuntimeError: e2e outcome: failing on purpose"
    # With nothing else in the tail, the logged one is still the best answer there is.
    assert exception_line(log[3:]) == (
        "io.fabric8.kubernetes.client.KubernetesClientException: Operation: [list]  for kind: [Pod]  failed."
    )


def test_a_jvm_main_exception_and_a_qualified_one():
    main = [
        'Exception in thread "main" java.lang.IllegalStateException: boom',
        "\tat X.main(X.java:3)",
    ]
    assert exception_line([*main, *SHUTDOWN]) == "java.lang.IllegalStateException: boom"
    py4j = [
        "py4j.protocol.Py4JJavaError: An error occurred while calling o42.collect.",
        ": org.apache.spark.SparkException: Job aborted",
    ]
    assert (
        exception_line(py4j)
        == "py4j.protocol.Py4JJavaError: An error occurred while calling o42.collect."
    )


def test_log_lines_and_stack_frames_are_not_exceptions():
    assert (
        exception_line([*SHUTDOWN, "\tat org.apache.spark.Foo(Foo.scala:1)", "Caused by: x"])
        is None
    )
    assert exception_line(["26/11/30 11:08:55 ERROR Executor: Exception in task 0.0"]) is None
    assert exception_line([]) is None
