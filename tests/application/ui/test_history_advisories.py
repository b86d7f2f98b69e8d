"""Which History Server versions have known vulnerabilities (application/ui/history_advisories.py)."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.ui.history_advisories import (
    EVENT_LOG_RCE,
    HISTORY_XSS,
    known_issues,
    parse_version,
    shown_url,
    warning,
)


@pytest.mark.parametrize(
    ("version", "issues"),
    [
        ("2.4.8", (EVENT_LOG_RCE,)),
        ("3.0.0", (EVENT_LOG_RCE, HISTORY_XSS)),
        ("3.4.4", (EVENT_LOG_RCE, HISTORY_XSS)),
        ("3.5.6", (EVENT_LOG_RCE, HISTORY_XSS)),
        ("3.5.7", (HISTORY_XSS,)),
        ("3.5.8", ()),
        ("3.5.9", ()),
        ("4.0.0", (EVENT_LOG_RCE,)),
        ("4.0.0-preview2", (EVENT_LOG_RCE,)),
        ("4.0.1", ()),
        ("4.1.4", ()),
        ("4.3.0", ()),
        ("3.5.1-amzn-0", (EVENT_LOG_RCE, HISTORY_XSS)),
    ],
)
def test_each_version_has_the_issues_its_advisories_name(version, issues):
    assert known_issues(version) == issues


@pytest.mark.parametrize("version", [None, "", "unknown", "v3.5.6", "3"])
def test_an_unknown_version_names_nothing(version):
    assert known_issues(version) == ()


def test_versions_parse_to_three_numbers():
    assert parse_version("3.5") == (3, 5, 0)
    assert parse_version(" 4.0.1 ") == (4, 0, 1)
    assert parse_version(356) is None


def test_the_warning_names_the_server_the_version_each_issue_and_its_fixes():
    line = warning("http://history:18080", "3.5.6", (EVENT_LOG_RCE, HISTORY_XSS))
    assert line.startswith("The History Server at http://history:18080 runs Spark 3.5.6")
    assert "CVE-2025-54920" in line and "(fixed in 3.5.7 and 4.0.1)" in line
    assert "CVE-2026-32773" in line and "(fixed in 3.5.8)" in line


def test_the_warning_never_shows_credentials_in_the_url():
    line = warning("https://user:s3cret@history.example:8443/shs/?token=t0k#x", "4.0.0",
                   (EVENT_LOG_RCE,))  # fmt: skip
    assert "s3cret" not in line and "t0k" not in line and "user" not in line
    assert "https://history.example:8443/shs/" in line
    assert shown_url("http://[::1]:18080") == "http://[::1]:18080"
    assert shown_url("http://history:notaport/") == "http://history/"
