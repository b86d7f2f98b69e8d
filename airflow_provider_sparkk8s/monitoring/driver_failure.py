"""The exception a failed driver died of, read from the end of its log.

Pure, as the rest of monitoring/: the caller (the operator) fetches the log's last
`TAIL_LINES` lines and hands them in as text; nothing here reads a log or a pod.

Spark's pods keep Kubernetes' default `terminationMessagePolicy: File` and Spark writes no
termination message, so a failed driver's pod says only "Error, exit code 1". The reason is
in its log: a Python traceback's last line, or the JVM's `Exception in thread "main" ...`.
Spark's own shutdown lines follow it, so the search goes backwards over the tail. Those
shutdown lines may log another exception: a Spark thread's error record (`yy/MM/dd HH:mm:ss
ERROR ...`) with its throwable on the next line, as the executor-pod poller's
`KubernetesClientException` when its client is closed under it (seen on the real kubelet).
An exception line right after such a record is a thread's logged error, not what the driver
died of; it is the answer only when the tail holds no other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

TAIL_LINES = 300  # how much of the log's end the caller reads
MAX_LENGTH = 1000
_JAVA_MAIN = re.compile(r'^Exception in thread "[^"]*" (\S.*)$')
# `RuntimeError: msg`, `py4j.protocol.Py4JJavaError: msg`, `java.lang.IllegalStateException`:
# a possibly qualified name ending in Error or Exception, at the start of the line.
_EXCEPTION = re.compile(r"^(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*(?:Error|Exception)(?::\s.*)?$")
# Spark's log4j record: `26/12/02 13:47:24 ERROR Utils: ...`.
_LOG_RECORD = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d [A-Z]+ ")


def exception_line(lines: Sequence[str]) -> str | None:
    """The last exception line of a driver log's tail that is not a Spark thread's logged
    error (else the last such one), or None if it holds none."""
    logged: str | None = None
    texts = [line.rstrip() for line in lines]
    for index in range(len(texts) - 1, -1, -1):
        text = texts[index]
        main = _JAVA_MAIN.match(text)
        if main:
            return main.group(1)[:MAX_LENGTH]
        if _EXCEPTION.match(text):
            if index == 0 or not _LOG_RECORD.match(texts[index - 1]):
                return text[:MAX_LENGTH]
            logged = logged or text[:MAX_LENGTH]
    return logged
