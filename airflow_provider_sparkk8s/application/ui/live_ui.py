"""The live Spark UI through Airflow (docs/spark_ui.md): which paths, which conf, which
headers. Pure: the plugin (plugins/spark_ui.py) and the proxy service decide nothing else.

A task instance's UI lives under Airflow at `/sparkk8s/ui/{dag_id}/{run_id}/{task_id}/{map_index}`
(the "base"); the plugin forwards the rest of the path to kube-apiserver's pod proxy,
`/api/v1/namespaces/{ns}/pods/{driver}:{port}/proxy/...` (the "upstream prefix").

Two rewrites meet here. Spark writes its links under `spark.ui.proxyBase` (the operator sets
it to the base), but its redirects to the bare path (`/` -> `http://<pod>:4040/jobs/`). The
API server then prefixes every same-host absolute URL of an HTML page and of a Location
header with the upstream prefix, unless it is already there. So an answer carries either
`<upstream prefix><base>/x` (a link) or `<upstream prefix>/x` (a redirect), and both mean
`<base>/x`: that one rule (`LinkRewriter`, `browser_location`) undoes the API server's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record

# The plugin's FastAPI app is mounted here, its pages under UI_ROUTE.
PLUGIN_PREFIX = "/sparkk8s"
UI_ROUTE = "/ui"
XCOM_KEY = "spark_ui"
DEFAULT_UI_PORT = 4040
PROXY_BASE_KEY = "spark.ui.proxyBase"
# Spark's own reverse proxy (standalone master) sets spark.ui.proxyBase itself.
REVERSE_PROXY_KEY = "spark.ui.reverseProxy"
UI_ENABLED_KEY = "spark.ui.enabled"
UI_PORT_KEY = "spark.ui.port"
# What Go's URL escaping leaves as it is in a path: kube-apiserver re-escapes every link it
# rewrites so, and a base quoted the same way reads the same after its rewrite.
_GO_PATH_SAFE = "$&+,:;=@"
# Spark's UI scripts look for these path segments to find a standalone or history app id.
_SPARK_RESERVED_SEGMENTS = ("proxy", "history")

# Sent to the driver as the browser sent them; anything else (Cookie: Airflow's session,
# Authorization, X-Forwarded-*) stays here.
FORWARDED_REQUEST_HEADERS = (
    "accept",
    "accept-language",
    "cache-control",
    "if-modified-since",
    "if-none-match",
    "range",
    "user-agent",
)
# RFC 9110 7.6.1's hop-by-hop fields, plus what the proxy answers itself.
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
}
# Not passed back: a driver must not set cookies or CORS rules on Airflow's origin, and
# the length changes whenever a page is rewritten.
_DROPPED_RESPONSE_HEADERS = {"set-cookie", "content-length", "access-control-allow-origin"}
# Spark's own protections of its pages (4.x's HttpSecurityFilter sends a CSP of 'self' and a
# per-page script nonce, no host or path: under Airflow's origin it means the same). They
# reach the browser as the driver sent them, even if its Connection header names them.
PROTECTION_HEADERS = frozenset(
    {
        "content-security-policy",
        "x-frame-options",
        "x-content-type-options",
        "x-xss-protection",
        "referrer-policy",
        "strict-transport-security",
    }
)
# Read-only: what the plugin forwards. Anything else (the UI's kill forms POST) is refused.
PROXIED_METHODS = ("GET", "HEAD")
# Spark's state-changing endpoints (job and stage kill), refused whatever the method.
_KILL_PATHS = ("jobs/job/kill", "stages/stage/kill")


@record
class SparkUiTarget:
    """Where one task instance's driver UI is, as the operator publishes it (XCom)."""

    conn_id: str
    namespace: str
    driver_pod: str
    port: int = DEFAULT_UI_PORT

    def to_xcom(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_xcom(value: Any) -> SparkUiTarget | None:
        if not isinstance(value, Mapping):
            return None
        try:
            return SparkUiTarget(
                conn_id=str(value["conn_id"]),
                namespace=str(value["namespace"]),
                driver_pod=str(value["driver_pod"]),
                port=int(value.get("port", DEFAULT_UI_PORT)),
            )
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def upstream_prefix(self) -> str:
        """kube-apiserver's proxy to the driver pod's UI port (no trailing slash)."""
        ns, pod = quote(self.namespace, safe=""), quote(self.driver_pod, safe="")
        return f"/api/v1/namespaces/{ns}/pods/{pod}:{self.port}/proxy"


@record
class TaskInstanceUi:
    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1
    # The path Airflow itself is served under ([api] base_url's), "" at the host's root.
    root: str = ""

    @property
    def base(self) -> str:
        """The UI's path from the host's root, without a trailing slash (Spark adds "/jobs/")."""
        segments = (self.dag_id, self.run_id, self.task_id, str(self.map_index))
        quoted = "/".join(quote(segment, safe=_GO_PATH_SAFE) for segment in segments)
        return f"{self.root.rstrip('/')}{PLUGIN_PREFIX}{UI_ROUTE}/{quoted}"

    def reserved_segment(self) -> str | None:
        """An id that Spark's UI scripts would mistake for a proxy path, if any."""
        for segment in (self.dag_id, self.run_id, self.task_id):
            if segment in _SPARK_RESERVED_SEGMENTS:
                return segment
        return None


def root_path(base_url: str | None) -> str:
    """The path of Airflow's `[api] base_url` (`https://host/airflow/` -> `/airflow`)."""
    return urlsplit(base_url or "").path.rstrip("/")


def ui_port(conf: Mapping[str, Any]) -> int:
    value = conf.get(UI_PORT_KEY)
    if value is None:
        return DEFAULT_UI_PORT
    try:
        return int(str(value).strip())
    except ValueError:
        raise SparkConfError(UI_PORT_KEY, value, "a port number") from None


def _is_true(conf: Mapping[str, Any], key: str, default: bool) -> bool:
    value = conf.get(key)
    return default if value is None else str(value).strip().lower() == "true"


def ui_enabled(conf: Mapping[str, Any]) -> bool:
    return _is_true(conf, UI_ENABLED_KEY, True)


def with_proxy_base(conf: Mapping[str, Any], base: str) -> dict[str, Any]:
    """`conf` with spark.ui.proxyBase = `base`, unless the user chose their own proxy
    (spark.ui.proxyBase or spark.ui.reverseProxy) or turned the UI off: their value wins."""
    merged = dict(conf)
    user_chose = PROXY_BASE_KEY in conf or _is_true(conf, REVERSE_PROXY_KEY, False)
    if ui_enabled(conf) and not user_chose:
        merged[PROXY_BASE_KEY] = base
    return merged


def proxied_by_us(conf: Mapping[str, Any], base: str) -> bool:
    """Whether the submitted conf routes the UI's links through our base."""
    return ui_enabled(conf) and conf.get(PROXY_BASE_KEY) == base


class UnsafePath(ValueError):
    """A requested path that would leave the driver's UI (dot segments)."""


def upstream_path(target: SparkUiTarget, rest: str) -> str:
    """The API server path for the UI page `rest` (the part after the base)."""
    segments = rest.split("/") if rest else []
    if any(segment in (".", "..") for segment in segments):
        raise UnsafePath(f"dot segments are not proxied: {rest!r}")
    return target.upstream_prefix + "/" + "/".join(quote(s, safe="@:!$&'()*+,;=") for s in segments)


def forwarded_request_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    kept = {name.lower(): value for name, value in headers}
    forwarded = {name: kept[name] for name in FORWARDED_REQUEST_HEADERS if name in kept}
    # Plain bodies: the API server rewrites HTML itself only when it can read it, and so
    # do we.
    forwarded["accept-encoding"] = "identity"
    return forwarded


def api_server_form(path: str) -> str:
    """`path` as kube-apiserver writes it back after prefixing it (Go's `URL.String` of
    the unescaped path): the same as `path` unless an id held a `/` or other escapes."""
    return quote(unquote(path), safe="/" + _GO_PATH_SAFE)


def _bases(base: str) -> tuple[str, ...]:
    """The base as Spark wrote it and as the API server may have rewritten it."""
    return tuple(dict.fromkeys((base, api_server_form(base))))


def browser_location(location: str, upstream_prefix: str, base: str) -> str:
    """A Location header as the browser must follow it (see the module docstring)."""
    parts = urlsplit(location)
    path = parts.path
    for prefix in (*(upstream_prefix + form for form in _bases(base)), upstream_prefix):
        if path == prefix or path.startswith(prefix + "/"):
            # The API server's own rewrite (it may name itself as the host): the browser
            # resolves the path against Airflow's origin.
            path = base + path[len(prefix) :]
            return urlunsplit(("", "", path, parts.query, parts.fragment))
    return location


def response_headers(
    headers: Iterable[tuple[str, str]], upstream_prefix: str, base: str
) -> list[tuple[str, str]]:
    """The upstream answer's headers for the browser: no hop-by-hop field (nor one the
    Connection header names), no cookie, Location mapped back under `base`; Spark's
    protections (PROTECTION_HEADERS) always kept."""
    pairs = list(headers)
    named = {
        token.strip().lower()
        for name, value in pairs
        if name.lower() == "connection"
        for token in value.split(",")
    }
    kept = []
    for name, value in pairs:
        lower = name.lower()
        dropped = lower in _HOP_BY_HOP or lower in named or lower in _DROPPED_RESPONSE_HEADERS
        if dropped and lower not in PROTECTION_HEADERS:
            continue
        mapped = browser_location(value, upstream_prefix, base) if lower == "location" else value
        kept.append((name, mapped))
    return kept


def is_html(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "text/html"


class LinkRewriter:
    """Streams an HTML body, replacing `<upstream prefix><base>` and `<upstream prefix>`
    by `<base>`, across chunk boundaries (a match may straddle two chunks)."""

    def __init__(self, upstream_prefix: str, base: str):
        prefix, ours = upstream_prefix.encode(), base.encode()
        forms = sorted((form.encode() for form in _bases(base)), key=len, reverse=True)
        alternatives = b"|".join(re.escape(form) for form in forms)
        self._pattern = re.compile(re.escape(prefix) + b"(?:" + alternatives + b")?")
        self._base = ours
        # A match starting this far from the end is decided: all of its longest form is in.
        self._longest = len(prefix) + len(forms[0])
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._pending + chunk
        decided = len(data) - self._longest + 1  # matches starting before it are final
        out: list[bytes] = []
        position = 0
        for match in self._pattern.finditer(data):
            if match.start() >= decided:
                break
            out += (data[position : match.start()], self._base)
            position = match.end()
        cut = max(position, decided)
        out.append(data[position:cut])
        self._pending = data[cut:]
        return b"".join(out)

    def flush(self) -> bytes:
        data, self._pending = self._pending, b""
        return self._pattern.sub(lambda _: self._base, data)


def refused_method(method: str, rest: str = "") -> str | None:
    """Why a request of `method` for the page `rest` is not forwarded (None: it is). The
    plugin checks only that the user may read the task instance, so no state-changing
    request reaches the driver: a Viewer must not kill a job, and the connection needs only
    `get` on pods/proxy. Spark's kill endpoints are refused for GET too: with
    `spark.ui.actionsViaGetEnabled` (a DAG's conf) they kill on a GET, and the CSRF token it
    needs is in the page any reader sees."""
    page = "/" + rest.strip("/")
    kill = any(page.endswith("/" + path) for path in _KILL_PATHS)
    if method.upper() in PROXIED_METHODS and not kill:
        return None
    return (
        f"The Spark UI through Airflow is read-only: a {method.upper()} request (such as the "
        "UI's kill of a job or stage) is not forwarded to the driver, because the plugin "
        "checks only that you may read this task instance, not that you may change it. "
        "To stop the application, mark the task instance failed or clear it in Airflow "
        "(its on_kill deletes the driver)."
    )
