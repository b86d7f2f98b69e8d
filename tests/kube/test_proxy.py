"""The proxy decision (kube/proxy.py) against the rules of Go's httpproxy, which client-go
uses for HTTPS_PROXY / HTTP_PROXY / NO_PROXY, and of client-go for a kubeconfig proxy-url."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.proxy import parse_proxy, proxy_for, uses_proxy

PROXY = "http://proxy.corp:3128"


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "proxied"),
    [
        ("api.example.com", 443, "", True),
        ("localhost", 443, "", False),  # never through an environment proxy
        ("127.0.0.1", 6443, "", False),
        ("127.9.9.9", 6443, "", False),
        ("::1", 6443, "", False),
        ("api.example.com", 443, "*", False),
        ("10.1.2.3", 443, "*", False),
        # a domain: itself and every sub-domain, never a mere suffix of the name
        ("example.com", 443, "example.com", False),
        ("api.example.com", 443, "example.com", False),
        ("notexample.com", 443, "example.com", True),
        # a leading dot or *. : sub-domains only
        ("example.com", 443, ".example.com", True),
        ("api.example.com", 443, ".example.com", False),
        ("example.com", 443, "*.example.com", True),
        ("a.b.example.com", 443, "*.example.com", False),
        # ports
        ("api.example.com", 443, "example.com:443", False),
        ("api.example.com", 6443, "example.com:443", True),
        # case and blanks
        ("API.Example.COM", 443, " EXAMPLE.com ,other.org", False),
        # CIDR and IP entries match IP servers only
        ("10.1.2.3", 443, "10.0.0.0/8", False),
        ("11.0.0.1", 443, "10.0.0.0/8", True),
        ("ten.example.com", 443, "10.0.0.0/8", True),
        ("10.1.2.3", 443, "10.1.2.3", False),
        ("10.1.2.3", 443, "10.1.2.3:6443", True),
        ("10.1.2.3", 6443, "10.1.2.3:6443", False),
        ("10.1.2.3", 443, "1.2.3", True),  # a domain entry never matches an IP
        ("2001:db8::1", 443, "2001:db8::/32", False),
        ("2001:db8::1", 443, "[2001:db8::1]:443", False),
        ("2001:db9::1", 443, "2001:db8::/32", True),
        ("172.20.0.1", 443, "10.0.0.0/8,172.16.0.0/12", False),
        # malformed entries are ignored
        ("api.example.com", 443, ":443,,", True),
        ("10.1.2.3", 443, "10.0.0.0/99", True),
    ],
)
def test_no_proxy_rules_as_go_reads_them(host: str, port: int, no_proxy: str, proxied: bool):
    assert uses_proxy(host, port, no_proxy) is proxied


def test_the_variable_follows_the_server_scheme_lower_case_first() -> None:
    env = {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:2", "HTTP_PROXY": PROXY}
    https = proxy_for("https://api.example.com:6443", None, env)
    assert https is not None and (https.host, https.port) == ("lower", 2)
    plain = proxy_for("http://api.example.com:8080", None, env)
    assert plain is not None and plain.host == "proxy.corp"
    assert proxy_for("https://api.example.com", None, {"HTTP_PROXY": PROXY}) is None
    # Go ignores HTTP_PROXY in a CGI environment
    assert proxy_for("http://api.example.com", None, {"HTTP_PROXY": PROXY}) is not None
    assert proxy_for("http://a.b", None, {"http_proxy": PROXY, "REQUEST_METHOD": "GET"}) is None


def test_no_proxy_lower_case_first_and_loopback_servers_go_direct() -> None:
    env = {"HTTPS_PROXY": PROXY, "no_proxy": "example.com", "NO_PROXY": "other.org"}
    assert proxy_for("https://api.example.com", None, env) is None
    assert proxy_for("https://api.other.org", None, env) is not None
    assert proxy_for("https://127.0.0.1:6443", None, {"HTTPS_PROXY": PROXY}) is None
    assert proxy_for("https://localhost:6443", None, {"HTTPS_PROXY": PROXY}) is None


def test_a_kubeconfig_proxy_url_wins_over_the_environment_and_loopback() -> None:
    env = {"HTTPS_PROXY": "http://env:1", "NO_PROXY": "*"}
    proxy = proxy_for("https://127.0.0.1:6443", "http://from-kubeconfig:3128", env)
    assert proxy is not None and (proxy.host, proxy.port) == ("from-kubeconfig", 3128)


def test_proxy_values_as_go_parses_them() -> None:
    bare = parse_proxy("proxy.corp:3128", "HTTPS_PROXY")  # no scheme: http
    assert (bare.host, bare.port, bare.authorization) == ("proxy.corp", 3128, None)
    assert parse_proxy("http://proxy.corp", "HTTPS_PROXY").port == 80
    login = parse_proxy("http://sp%40rk:s3cret@proxy.corp:3128", "proxy-url")
    assert login.authorization == "Basic c3BAcms6czNjcmV0"  # "sp@rk:s3cret"
    assert "s3cret" not in repr(login) and "credentials" in repr(login)


@pytest.mark.parametrize("url", ["socks5://proxy:1080", "https://user:s3cret@proxy:3128"])
def test_unsupported_proxy_schemes_are_refused_naming_the_key(url: str) -> None:
    with pytest.raises(KubeConfigError) as refused:
        parse_proxy(url, "proxy-url", "kubeconfig k")
    message = str(refused.value)
    assert "proxy-url=" in message and "only http:// proxies" in message
    assert "s3cret" not in message


def test_kubeconfig_proxy_url_reaches_the_settings_and_is_checked_early(tmp_path) -> None:
    def config(proxy_url: str) -> dict:
        return {
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            "clusters": [
                {"name": "k", "cluster": {"server": "https://k:6443", "proxy-url": proxy_url}}
            ],
            "users": [{"name": "u", "user": {"token": "t"}}],
        }

    settings = kubeconfig_settings(content=config("http://spark:pw-123@proxy:3128"))
    assert settings.proxy_url == "http://spark:pw-123@proxy:3128"
    assert "pw-123" not in repr(settings) and "proxy:3128" in repr(settings)
    with pytest.raises(KubeConfigError, match="proxy-url"):
        kubeconfig_settings(content=config("socks5://proxy:1080"))
