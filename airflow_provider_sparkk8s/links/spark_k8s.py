"""Extra links on the task: the Spark UI and the driver pod.

Where those live depends on the deployment (a Kubernetes dashboard, an ingress in front of
the driver's UI, a Spark history server), so the URLs come from templates: the connection's
extras first (`spark_ui_url_template`, `driver_pod_url_template`), else the provider's
`[sparkk8s]` config section. No template, no link, but for one: without a Spark UI template
the operator fills that link itself with the driver's UI through Airflow's own api-server
(plugins/spark_ui.py) when the submission routes the UI there (docs/operator.md, "Extra links").

Placeholders: `{namespace}`, `{driver_pod}`, `{application_id}`, `{submission_id}`,
`{conn_id}`; values are URL-quoted. The operator fills the templates as soon as it knows
the driver and pushes the URLs to XCom, so the links work while the task is deferred;
Airflow 3 calls `get_link` in the worker when the task stops and stores its answer for the
UI: it answers from the operator's `link_urls`, and the operator lists only the links it
has URLs for, so a link without a template is neither read back nor stored empty.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow_provider_sparkk8s.version_compat import BaseOperatorLink, conf, xcom_value

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.version_compat import BaseOperator, TaskInstanceKey

CONFIG_SECTION = "sparkk8s"
SPARK_UI_TEMPLATE_KEY = "spark_ui_url_template"
DRIVER_POD_TEMPLATE_KEY = "driver_pod_url_template"
PLACEHOLDERS = ("namespace", "driver_pod", "application_id", "submission_id", "conn_id")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


def fill_url_template(template: str, values: Mapping[str, str | None]) -> str:
    """The template with every known placeholder replaced by its URL-quoted value.

    Plain substitution, not `str.format`: a template is configuration, not code, and must
    not reach attributes of the values.
    """

    def replace(match: re.Match[str]) -> str:
        return quote(values.get(match.group(1)) or "", safe="")

    return _PLACEHOLDER.sub(replace, template)


def link_templates(
    connection_extras: Mapping[str, Any], config: Mapping[str, str | None]
) -> dict[str, str]:
    """{template key: template}: the connection's extras win over the provider config."""
    templates = {}
    for key in (SPARK_UI_TEMPLATE_KEY, DRIVER_POD_TEMPLATE_KEY):
        for source in (connection_extras, config):
            value = source.get(key)
            if isinstance(value, str) and value.strip():
                templates[key] = value.strip()
                break
    return templates


def configured_templates() -> dict[str, str | None]:
    """The `[sparkk8s]` URL templates from Airflow's config (empty when unset)."""
    return {
        key: conf.get(CONFIG_SECTION, key, fallback=None)
        for key in (SPARK_UI_TEMPLATE_KEY, DRIVER_POD_TEMPLATE_KEY)
    }


class _TemplatedLink(BaseOperatorLink):
    template_key: str = ""

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        # In the worker, the operator that ran knows its URLs (`link_urls`): no XCom read.
        known = getattr(operator, "link_urls", None)
        if isinstance(known, Mapping):
            return str(known.get(self.xcom_key, ""))
        url = xcom_value(ti_key, self.xcom_key)
        return url if isinstance(url, str) else ""


class SparkUiLink(_TemplatedLink):
    name = "Spark UI"
    template_key = SPARK_UI_TEMPLATE_KEY


class DriverPodLink(_TemplatedLink):
    name = "Driver pod"
    template_key = DRIVER_POD_TEMPLATE_KEY


LINKS: tuple[_TemplatedLink, ...] = (SparkUiLink(), DriverPodLink())


def link_urls(templates: Mapping[str, str], values: Mapping[str, str | None]) -> dict[str, str]:
    """{XCom key of the link: URL} for every configured template."""
    return {
        link.xcom_key: fill_url_template(templates[link.template_key], values)
        for link in LINKS
        if link.template_key in templates
    }
