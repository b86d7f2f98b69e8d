"""Which HTTP proxy, if any, a client uses for its API server: client-go's rules, pure.

- A kubeconfig cluster's `proxy-url` is used for every request, whatever the environment
  says (client-go: `rest.Config.Proxy = http.ProxyURL(...)`).
- Otherwise the environment, as Go's `http.ProxyFromEnvironment` reads it:
  `https_proxy`/`HTTPS_PROXY` for an https server, `http_proxy`/`HTTP_PROXY` for an http one
  (lower case first); `no_proxy`/`NO_PROXY` lists exceptions. A proxy value without a scheme
  means http. A loopback address or `localhost` is never sent through an environment proxy.
- NO_PROXY entries, comma-separated: `*` (no proxy at all); a CIDR (`10.0.0.0/8`, matches an
  IP server in it); an IP (`10.1.2.3`, optionally `:port`); a domain (`example.com` matches
  it and every sub-domain, `.example.com` and `*.example.com` only sub-domains, optionally
  `:port`). A domain entry never matches an IP server, an IP entry never a name.

The proxy must be an `http://` proxy (CONNECT for https servers); its credentials come from
the URL's user info. https:// and socks5:// proxies are refused with a message.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.records import record

_DEFAULT_PORTS = {"http": 80, "https": 443}


@record(repr=False)
class Proxy:
    """An HTTP proxy to reach the API server through."""

    host: str
    port: int
    authorization: str | None = None  # Proxy-Authorization header value, secret

    @property
    def url(self) -> str:
        """The proxy as an http:// URL, credentials included (for the async sender)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def __repr__(self) -> str:  # never the credentials
        login = " with credentials" if self.authorization else ""
        return f"Proxy({self.url}{login})"

    __str__ = __repr__


def proxy_for(
    server: str, proxy_url: str | None, environ: Mapping[str, str], source: str = ""
) -> Proxy | None:
    """The proxy for requests to `server`, or None to connect directly."""
    if proxy_url:
        return parse_proxy(proxy_url, "proxy-url", source)
    parts = urlsplit(server)
    scheme = parts.scheme.lower()
    names = {"https": ("https_proxy", "HTTPS_PROXY"), "http": ("http_proxy", "HTTP_PROXY")}
    if scheme not in names:
        return None
    variable, value = _first_set(environ, names[scheme])
    if not value:
        return None
    if scheme == "http" and environ.get("REQUEST_METHOD"):
        return None  # Go ignores HTTP_PROXY in a CGI environment (httpoxy)
    host = (parts.hostname or "").lower()
    port = parts.port or _DEFAULT_PORTS[scheme]
    _, no_proxy = _first_set(environ, ("no_proxy", "NO_PROXY"))
    if not uses_proxy(host, port, no_proxy or ""):
        return None
    return parse_proxy(value, variable, "the environment")


def uses_proxy(host: str, port: int, no_proxy: str) -> bool:
    """Go's httpproxy `useProxy`: False for loopback, localhost and NO_PROXY matches."""
    host = host.strip().lower().strip("[]")
    if not host:
        return True
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    for entry in no_proxy.split(","):
        if _no_proxy_matches(entry.strip().lower(), host, str(port), ip):
            return False
    return True


def _no_proxy_matches(
    entry: str, host: str, port: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None
) -> bool:
    if not entry:
        return False
    if entry == "*":
        return True
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            network = None
        if network is not None:
            return ip is not None and ip in network
    entry_host, entry_port = _split_host_port(entry)
    if not entry_host:
        return False  # ":80" and the like: malformed, ignored as Go does
    entry_ip = _ip(entry_host)
    if entry_ip is not None:
        return ip is not None and ip == entry_ip and entry_port in ("", port)
    if ip is not None:
        return False  # a domain entry never matches an IP server
    if entry_host.startswith("*."):
        entry_host = entry_host[1:]
    match_exact = not entry_host.startswith(".")
    suffix = entry_host if not match_exact else "." + entry_host
    if host.endswith(suffix) or (match_exact and host == suffix[1:]):
        return entry_port in ("", port)
    return False


def _split_host_port(entry: str) -> tuple[str, str]:
    """Go's net.SplitHostPort, or the whole entry as the host when it has no port."""
    if entry.startswith("["):
        close = entry.find("]")
        if close != -1 and entry[close + 1 : close + 2] == ":":
            return entry[1:close], entry[close + 2 :]
        return entry, ""
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, port
    return entry, ""


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _first_set(environ: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str]:
    for name in names:
        if environ.get(name):
            return name, environ[name]
    return names[-1], ""


def parse_proxy(value: str, key: str, source: str = "") -> Proxy:
    """An http:// proxy URL (a value without a scheme means http, as Go reads it)."""
    where = f" (from {source})" if source else ""
    text = value.strip()
    parts = urlsplit(text)
    if not parts.scheme or not parts.hostname or "://" not in text:
        parts = urlsplit(f"http://{text}")
    scheme = parts.scheme.lower()
    shown = without_credentials(text)
    if scheme != "http":
        raise KubeConfigError(
            f"{key}={shown!r}{where} is not supported: only http:// proxies are (CONNECT "
            "tunnels for https API servers); https:// and socks5:// proxies are not"
        )
    try:
        port = parts.port or 80
    except ValueError:
        raise KubeConfigError(f"{key}={shown!r}{where} has an invalid port") from None
    if not parts.hostname:
        raise KubeConfigError(f"{key}={shown!r}{where} names no proxy host")
    authorization = None
    if parts.username is not None:
        import base64  # here: only a proxy with credentials needs it (start-up time)

        login = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(login.encode()).decode()
    return Proxy(parts.hostname, port, authorization)


def without_credentials(url: str) -> str:
    """The URL with its user info replaced, for messages and reprs."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    if "@" in rest.split("/", 1)[0]:
        rest = "<credentials>@" + rest.split("@", 1)[1]
    return f"{scheme}{sep}{rest}"
