"""Pod templates: load, validate, pick Spark's container (Spark's `KubernetesUtils`).

A template arrives as a file the shell read (`spark.kubernetes.driver.podTemplateFile` ->
`conf.local.files[path]`, YAML or JSON) or as a dict from Python (`conf.driver_pod_template`,
which wins). It is parsed the way fabric8 deserialises a Pod and serialises it again: null
fields and empty lists vanish, numbers and booleans written where Kubernetes wants strings
(label values, args, env values, quantities) become text as Jackson makes it.

Container selection (`selectSparkContainer`): the container named by
`spark.kubernetes.driver.podTemplateContainerName` when exactly one has that name, else the
first container, else an empty one. It is taken out of `spec.containers`; the rest stay as
side-cars in front of it (the builder appends Spark's container last).

What the feature steps then do to the template (fabric8's builder semantics, written once in
`podops.py`): `metadata.name` and `spec.restartPolicy` are replaced; labels, annotations
and nodeSelector are merged with Spark's keys winning; volumes, imagePullSecrets, and the
container's env, ports, volumeMounts and args are appended after the template's (template
`args` stay in front of `driver ...`, `command` is kept); the container's `name` is kept
when present; `image` and `imagePullPolicy` are replaced; resource requests/limits are
merged key by key; the service account is replaced only when configured without shipped
credentials; 4.3 replaces `securityContext.allowPrivilegeEscalation`. Everything else
(init containers, affinity, tolerations, security context, priority class, ...) is kept.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import restricted_profile
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.conf_values import java_double_to_string
from airflow_provider_sparkk8s.submission.java_text import read_utf8
from airflow_provider_sparkk8s.submission.local_files import file_text
from airflow_provider_sparkk8s.submission.spec import KubeObject, SparkPod

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

DRIVER_TEMPLATE_KEY = "spark.kubernetes.driver.podTemplateFile"
DRIVER_CONTAINER_NAME_KEY = "spark.kubernetes.driver.podTemplateContainerName"
EXECUTOR_TEMPLATE_KEY = "spark.kubernetes.executor.podTemplateFile"

ACCEPTED = "a YAML or JSON manifest of one Pod (kind: Pod, apiVersion: v1)"
DICT_SOURCE = "<dict>"

# Map-typed fields fabric8 leaves out when empty (object-typed fields such as emptyDir stay).
_MAP_FIELDS = frozenset(
    {"labels", "annotations", "nodeSelector", "limits", "requests", "overhead", "matchLabels"}
)
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


# --- parsing with the scalars' source text kept ------------------------------------------


class _SourceInt(int):
    source: str


class _SourceFloat(float):
    source: str


class _SourceBool:
    def __init__(self, value: bool, source: str):
        self.value = value
        self.source = source


@functools.cache
def _template_loader() -> type:
    """SafeLoader that remembers how numbers and booleans were written.

    Jackson reads an integer or boolean scalar into a String field as written (`build: 042`
    stays `"042"`), so the text must survive parsing. Built on first use: importing yaml
    is a noticeable part of sparkk8s-submit's start-up, and most submissions have no template.
    """
    import yaml

    construct = yaml.constructor.SafeConstructor

    def construct_int(loader: Any, node: Any) -> _SourceInt:
        value = _SourceInt(construct.construct_yaml_int(loader, node))
        value.source = node.value
        return value

    def construct_float(loader: Any, node: Any) -> _SourceFloat:
        value = _SourceFloat(construct.construct_yaml_float(loader, node))
        value.source = node.value
        return value

    def construct_bool(loader: Any, node: Any) -> _SourceBool:
        return _SourceBool(construct.construct_yaml_bool(loader, node), node.value)

    def construct_timestamp(loader: Any, node: Any) -> str:
        return str(node.value)  # Kubernetes timestamps are strings

    class TemplateLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML has no stubs here
        pass

    TemplateLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    TemplateLoader.add_constructor("tag:yaml.org,2002:float", construct_float)
    TemplateLoader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    TemplateLoader.add_constructor("tag:yaml.org,2002:timestamp", construct_timestamp)
    return TemplateLoader


def _text(value: Any) -> Any:
    """A scalar as Jackson reads it into a String field: integers and booleans as written,
    floats through a Java double (`1.10` becomes `"1.1"`, as spark-submit sends it)."""
    if isinstance(value, _SourceFloat):
        return java_double_to_string(float(value))
    if isinstance(value, (_SourceInt, _SourceBool)):
        return value.source
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double_to_string(value)
    return value


def _texts_in_map(obj: Any, field: str) -> None:
    if isinstance(obj, dict) and isinstance(obj.get(field), dict):
        obj[field] = {_text(k): _text(v) for k, v in obj[field].items()}


def _texts_in_list(obj: Any, field: str) -> None:
    if isinstance(obj, dict) and isinstance(obj.get(field), list):
        obj[field] = [_text(v) for v in obj[field]]


def _coerce_string_fields(pod: dict[str, Any]) -> None:
    """Turn scalars in String-typed fields into text. Works on the freshly parsed tree only."""
    _texts_in_map(pod.get("metadata"), "labels")
    _texts_in_map(pod.get("metadata"), "annotations")
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    _texts_in_map(spec, "nodeSelector")
    _texts_in_map(spec, "overhead")
    for list_name in _CONTAINER_LISTS:
        for container in spec.get(list_name) or ():
            if not isinstance(container, dict):
                continue
            _texts_in_list(container, "args")
            _texts_in_list(container, "command")
            _texts_in_map(container.get("resources"), "limits")
            _texts_in_map(container.get("resources"), "requests")
            for env in container.get("env") or ():
                if isinstance(env, dict) and "value" in env:
                    env["value"] = _text(env["value"])
    for volume in spec.get("volumes") or ():
        empty_dir = volume.get("emptyDir") if isinstance(volume, dict) else None
        if isinstance(empty_dir, dict) and "sizeLimit" in empty_dir:
            empty_dir["sizeLimit"] = _text(empty_dir["sizeLimit"])


def _plain(value: Any) -> Any:
    """A fabric8 round trip: drop nulls and empty lists/maps, unwrap remembered scalars."""
    if isinstance(value, dict):
        result = {}
        for key, raw in value.items():
            item = _plain(raw)
            if item is None or item == [] or (item == {} and key in _MAP_FIELDS):
                continue
            result[str(_text(key))] = item
        return result
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, _SourceBool):
        return value.value
    if isinstance(value, _SourceInt):
        return int(value)
    if isinstance(value, _SourceFloat):
        return float(value)
    return value


def _deep_copy_tree(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _deep_copy_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_deep_copy_tree(item) for item in value]
    return value


def _is_list_of_maps(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


# Fields the steps read or extend: a wrong shape would break them, so it is refused here.
_POD_MAPS = {"metadata": ("labels", "annotations"), "spec": ("nodeSelector",)}
_SPEC_LISTS_OF_MAPS = (*_CONTAINER_LISTS, "volumes", "imagePullSecrets")
_CONTAINER_LISTS_OF_MAPS = ("env", "ports", "volumeMounts")
_CONTAINER_LISTS_OF_SCALARS = ("args", "command")
_CONTAINER_MAPS = ("resources", "securityContext")


def _shape_problem(pod: Any) -> str | None:
    """What makes `pod` unusable as a Pod template, or None."""
    if pod is None:
        return "the template is empty"
    if not isinstance(pod, dict):
        return "the template is not a mapping"
    if pod.get("kind") not in (None, "Pod"):
        return f"kind is {pod.get('kind')!r}"
    if pod.get("apiVersion") not in (None, "v1"):
        return f"apiVersion is {pod.get('apiVersion')!r}"
    for part, map_fields in _POD_MAPS.items():
        section = pod.get(part)
        if section is None:
            continue
        if not isinstance(section, dict):
            return f"{part} is not a mapping"
        for name in map_fields:
            if section.get(name) is not None and not isinstance(section[name], dict):
                return f"{part}.{name} is not a mapping"
    spec = pod.get("spec") or {}
    for name in _SPEC_LISTS_OF_MAPS:
        if spec.get(name) is not None and not _is_list_of_maps(spec[name]):
            return f"spec.{name} is not a list of mappings"
    for list_name in _CONTAINER_LISTS:
        for container in spec.get(list_name) or ():
            where = f"spec.{list_name}[{container.get('name')}]"
            for name in _CONTAINER_LISTS_OF_MAPS:
                if container.get(name) is not None and not _is_list_of_maps(container[name]):
                    return f"{where}.{name} is not a list of mappings"
            for name in _CONTAINER_LISTS_OF_SCALARS:
                if container.get(name) is not None and not isinstance(container[name], list):
                    return f"{where}.{name} is not a list"
            for name in _CONTAINER_MAPS:
                if container.get(name) is not None and not isinstance(container[name], dict):
                    return f"{where}.{name} is not a mapping"
            for name in ("limits", "requests"):
                value = (container.get("resources") or {}).get(name)
                if value is not None and not isinstance(value, dict):
                    return f"{where}.resources.{name} is not a mapping"
    return None


def _validated(key: str, source: str, pod: Any) -> dict[str, Any]:
    problem = _shape_problem(pod)
    if problem is None and key == DRIVER_TEMPLATE_KEY and pod.get("spec") is None:
        # spark-submit fails on it ("Could not load pod from template file."). An executor
        # template is only shipped at submission, so Spark lets that one through.
        problem = "the template has no spec"
    if problem is not None:
        raise SparkConfError(key, source, ACCEPTED, problem)
    return pod  # type: ignore[no-any-return]


def parse_template(key: str, source: str, content: bytes | str) -> KubeObject:
    """Parse template text (YAML or JSON) into a plain Pod dict, or raise SparkConfError."""
    import yaml

    text = read_utf8(content) if isinstance(content, bytes) else content
    try:
        documents = list(yaml.load_all(text, Loader=_template_loader()))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SparkConfError(key, source, ACCEPTED, f"not valid YAML or JSON{where}") from None
    if len(documents) > 1:
        raise SparkConfError(key, source, ACCEPTED, f"it holds {len(documents)} documents")
    pod = _validated(key, source, documents[0] if documents else None)
    _coerce_string_fields(pod)
    plain: KubeObject = _plain(pod)
    return plain


def template_from_dict(key: str, template: Mapping[str, Any]) -> KubeObject:
    """Validate and normalise a template given as a Python dict (the caller's dict untouched)."""
    pod = _validated(key, DICT_SOURCE, _deep_copy_tree(template))
    _coerce_string_fields(pod)
    plain: KubeObject = _plain(pod)
    return plain


def _template_file(conf: DriverConf, key: str, path: str) -> bytes:
    content = conf.local.files.get(path)
    if content is None:
        raise SparkConfError(
            key,
            path,
            "the path of a readable local file (or pass the template as a dict)",
            "the file could not be read",
        )
    return content


# --- container selection -----------------------------------------------------------------


def select_spark_container(pod: Mapping[str, Any], container_name: str | None) -> SparkPod:
    """Split Spark's container off the template pod; the others stay as side-cars."""
    spec = pod.get("spec")
    if spec is None:
        return SparkPod(
            pod={**pod, "metadata": pod.get("metadata") or {}, "spec": {}}, container={}
        )
    containers = list(spec.get("containers") or ())
    if not containers:
        spark_container: KubeObject = {}
        rest: list[KubeObject] = []
    else:
        named = (
            [c for c in containers if c.get("name") == container_name]
            if container_name is not None
            else []
        )
        if len(named) == 1:
            spark_container = named[0]
            rest = [c for c in containers if c.get("name") != container_name]
        else:  # unset, not found or ambiguous: Spark takes the first one
            spark_container, rest = containers[0], containers[1:]
    new_spec = {k: v for k, v in spec.items() if k != "containers"}
    if rest:
        new_spec["containers"] = rest
    new_pod = {**pod, "metadata": pod.get("metadata") or {}, "spec": new_spec}
    return SparkPod(pod=new_pod, container=dict(spark_container))


# --- what the pipeline calls -------------------------------------------------------------


def driver_template(conf: DriverConf) -> KubeObject | None:
    """The driver pod template as a plain dict, or None when none is configured."""
    if conf.driver_pod_template is not None:
        return template_from_dict(DRIVER_TEMPLATE_KEY, conf.driver_pod_template)
    path = conf.get(DRIVER_TEMPLATE_KEY)
    if path is None:
        return None
    return parse_template(
        DRIVER_TEMPLATE_KEY, path, _template_file(conf, DRIVER_TEMPLATE_KEY, path)
    )


def initial_driver_pod(conf: DriverConf) -> SparkPod:
    """The pod the fold starts from: the template's, or an empty pod and container."""
    template = driver_template(conf)
    if template is None:
        return SparkPod.initial()
    metadata = template.get("metadata") or {}
    if "namespace" in metadata:
        # The client creates the pod in the submission namespace and writes that namespace
        # into a template's (fabric8 6 and 7 alike, checked with 3.5.9 and 4.3.0).
        template = {**template, "metadata": {**metadata, "namespace": conf.namespace}}
    return select_spark_container(template, conf.get(DRIVER_CONTAINER_NAME_KEY))


# The executor template of the restricted profile when the author gave none: Spark's
# container (BasicExecutorFeatureStep's default name) with nothing else.
_EMPTY_EXECUTOR_TEMPLATE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "spec": {"containers": [{"name": "spark-kubernetes-executor"}]},
}


def _yaml(template: Mapping[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(dict(template), sort_keys=False, default_flow_style=False))


def executor_template_text(conf: DriverConf) -> str | None:
    """The executor template text Spark ships in a ConfigMap, validated; None when unset.

    A file is shipped as written; a dict is written as YAML. Spark only parses the executor
    template inside the driver; parsing it now reports a broken template before submission.
    With `spark.kubernetes.sparkk8s.podSecurity=restricted` the template (or one holding only
    Spark's container) gets the profile's fields it leaves out, written as YAML: the
    executors have no other way to get a pod security context on 3.5-4.3.
    """
    restricted = restricted_profile.enabled(conf)
    if conf.executor_pod_template is not None:
        template = template_from_dict(EXECUTOR_TEMPLATE_KEY, conf.executor_pod_template)
        return _yaml(restricted_profile.harden_pod(template) if restricted else template)
    path = conf.get(EXECUTOR_TEMPLATE_KEY)
    if path is None:
        if not restricted:
            return None
        return _yaml(restricted_profile.harden_pod(_EMPTY_EXECUTOR_TEMPLATE))
    content = _template_file(conf, EXECUTOR_TEMPLATE_KEY, path)
    text = file_text(conf, EXECUTOR_TEMPLATE_KEY, path, content)
    parsed = parse_template(EXECUTOR_TEMPLATE_KEY, path, text)
    return _yaml(restricted_profile.harden_pod(parsed)) if restricted else text


def executor_template(conf: DriverConf) -> KubeObject | None:
    """The executor pod template as the driver will read it (the operator's dict, or the
    file `spark.kubernetes.executor.podTemplateFile` names), parsed; None when unset."""
    text = executor_template_text(conf)
    if text is None:
        return None
    return parse_template(EXECUTOR_TEMPLATE_KEY, conf.get(EXECUTOR_TEMPLATE_KEY) or "(dict)", text)
