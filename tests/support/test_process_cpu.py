"""testenv/process_cpu.py: the accounting records read back, and a JVM's thread names
counted as the JVM."""

from __future__ import annotations

import struct

import pytest

from testenv.process_cpu import RECORD, Ended, by_family, comp_t, family, records


def record(command: bytes, pid: int, utime: int, stime: int, version: int = 3) -> bytes:
    return RECORD.pack(
        0, version, 0, 0, 0, 0, pid, 1, 0, 0.0, utime, stime, 0, 0, 0, 0, 0, 0, command
    )


def test_comp_t_is_a_base_8_exponent_over_a_13_bit_mantissa() -> None:
    assert comp_t(250) == 250
    assert comp_t((2 << 13) | 100) == 100 * 64


def test_records_give_each_process_its_user_and_system_seconds() -> None:
    data = record(b"kube-apiserver", 41, 1200, 300) + record(b"Finalizer", 42, (1 << 13) | 50, 0)
    assert records(data) == [Ended("kube-apiserver", 41, 15.0), Ended("Finalizer", 42, 4.0)]


def test_a_file_of_another_record_version_is_refused() -> None:
    with pytest.raises(ValueError, match="version 3"):
        records(record(b"x", 1, 0, 0, version=2))


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("Reference Handl", "java"),
        ("C1 CompilerThre", "java"),
        ("rpc-server-4-2", "java"),
        ("airflow worker ", "airflow"),
        ("kube-apiserver", "kube-apiserver"),
        ("python3", "python3"),
    ],
)
def test_families(command: str, expected: str) -> None:
    assert family(command) == expected


def test_by_family_sums_and_counts_largest_first() -> None:
    ended = [Ended("java", 1, 2.0), Ended("Finalizer", 2, 3.0), Ended("etcd", 3, 1.0)]
    assert by_family(ended) == [("java", 5.0, 2), ("etcd", 1.0, 1)]
    assert struct.calcsize(RECORD.format) == 64  # linux/acct.h's acct_v3
