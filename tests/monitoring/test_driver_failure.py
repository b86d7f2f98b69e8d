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
