"""Template files for the operator's templated parameters: a value naming a .yaml/.yml/.json
file in the DAG folder or the DAG's template_searchpath (or by absolute path) is read and
rendered with Jinja, so pod templates arrive as YAML or JSON text. Other values ending so
(s3://.../conf.yaml in `files`) stay strings: Airflow would fail on them as missing files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from airflow_provider_sparkk8s.version_compat import BaseOperator


class TemplateFiles(BaseOperator):
    """Airflow's rendering, except for values ending in a template extension that are not
    template files: an absolute path is read from disk, anything else stays a string."""

    template_ext: Sequence[str] = (".yaml", ".yml", ".json")

    def render_template(
        self, content: Any, context: Any, jinja_env: Any = None, seen_oids: Any = None
    ) -> Any:
        if isinstance(content, str) and content.endswith(tuple(self.template_ext)):
            import jinja2

            env = jinja_env or self.get_template_env()
            if os.path.isabs(content) and os.path.isfile(content):
                with open(content) as handle:
                    return self._render(env.from_string(handle.read()), context)
            try:
                env.get_template(content)
            except jinja2.TemplateNotFound:
                return self._render(env.from_string(content), context)
        return super().render_template(content, context, jinja_env, seen_oids)
