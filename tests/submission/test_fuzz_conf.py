"""Whatever conf a user writes, the pipeline either renders it or raises SparkConfError,
and never changes what it was given."""

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import builder
from airflow_provider_sparkk8s.submission.conf import DriverConf, LocalInputs, MainAppResource
from airflow_provider_sparkk8s.submission.render import prepare, render
from airflow_provider_sparkk8s.submission.spec import FeatureStep, SparkPod, StepResult
from tests.support.driver_conf import IDS

SCALAR_KEYS = [
    "spark.app.name",
    "spark.kubernetes.namespace",
    "spark.kubernetes.container.image",
    "spark.kubernetes.driver.container.image",
    "spark.kubernetes.container.image.pullPolicy",
    "spark.kubernetes.container.image.pullSecrets",
    "spark.kubernetes.driver.pod.name",
    "spark.driver.cores",
    "spark.kubernetes.driver.request.cores",
    "spark.kubernetes.driver.limit.cores",
    "spark.driver.memory",
    "spark.driver.memoryOverhead",
    "spark.driver.memoryOverheadFactor",
    "spark.kubernetes.memoryOverheadFactor",
    "spark.driver.minMemoryOverhead",
    "spark.driver.port",
    "spark.driver.blockManager.port",
    "spark.blockManager.port",
    "spark.ui.port",
    "spark.connect.grpc.binding.port",
    "spark.kubernetes.scheduler.name",
    "spark.kubernetes.driver.scheduler.name",
    "spark.kubernetes.securityContext.allowPrivilegeEscalation",
    "spark.kubernetes.driver.securityContext.allowPrivilegeEscalation",
    "spark.kubernetes.driver.service.ipFamilyPolicy",
    "spark.kubernetes.driver.service.ipFamilies",
    "spark.kubernetes.driver.service.publishNotReadyAddresses",
    "spark.driver.host",
    "spark.driver.bindAddress",
    "spark.jars",
    "spark.files",
    "spark.archives",
    "spark.submit.pyFiles",
    "spark.kubernetes.authenticate.driver.oauthToken",
    "spark.kubernetes.authenticate.driver.caCertFile",
    "spark.kubernetes.authenticate.driver.serviceAccountName",
    "spark.kubernetes.authenticate.driver.mounted.caCertFile",
    "spark.kubernetes.local.dirs.tmpfs",
    "spark.local.dir",
    "spark.kubernetes.driver.podTemplateFile",
    "spark.kubernetes.driver.podTemplateContainerName",
    "spark.kubernetes.executor.podTemplateFile",
    "spark.kubernetes.hadoop.configMapName",
    "spark.kubernetes.kerberos.krb5.path",
    "spark.kubernetes.kerberos.krb5.configMapName",
    "spark.kerberos.principal",
    "spark.kerberos.keytab",
    "spark.kubernetes.kerberos.tokenSecret.name",
    "spark.kubernetes.kerberos.tokenSecret.itemKey",
    "spark.kubernetes.configMap.maxSize",
    "spark.kubernetes.driver.pod.excludedFeatureSteps",
    "spark.kubernetes.driver.pod.featureSteps",
    "spark.pyspark.python",
    "spark.pyspark.driver.python",
    "spark.kubernetes.legacy.useReadWriteOnceAccessMode",
    "spark.home",
    "spark.driver.resource.gpu.amount",
    "spark.driver.resource.gpu.vendor",
]
PREFIX_KEYS = [
    "spark.kubernetes.driver.label.",
    "spark.kubernetes.driver.annotation.",
    "spark.kubernetes.driver.service.label.",
    "spark.kubernetes.driver.service.annotation.",
    "spark.kubernetes.driverEnv.",
    "spark.kubernetes.node.selector.",
    "spark.kubernetes.driver.node.selector.",
    "spark.kubernetes.driver.secrets.",
    "spark.kubernetes.driver.secretKeyRef.",
]
VOLUME_TYPES = ["hostPath", "emptyDir", "nfs", "persistentVolumeClaim", "configMap"]
VOLUME_SUFFIXES = [
    "mount.path",
    "mount.readOnly",
    "mount.subPath",
    "mount.subPathExpr",
    "options.path",
    "options.type",
    "options.claimName",
    "options.storageClass",
    "options.sizeLimit",
    "options.medium",
    "options.server",
    "label.team",
    "annotation.note",
]
FILES = {
    "/t/driver.yaml": b"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n",
    "/t/bad.yaml": b"- [not a pod",
    "/t/krb5.conf": b"[libdefaults]\n",
    "/t/ca.crt": b"CA",
    "/t/keytab": b"\x05\x02",
    "/conf/hive-site.xml": b"<c/>",
    "/hadoop/core-site.xml": b"<c/>",
}

interesting = st.sampled_from(
    [
        "",
        " ",
        "1",
        "0",
        "-1",
        "2g",
        "1500k",
        "512",
        "1.5g",
        "0.5",
        "500m",
        "abc",
        "true",
        "FALSE",
        "yes",
        "7078",
        "70000",
        "IPv4,IPv6",
        "IPv6",
        "DualStack",
        "Always",
        "never",
        "a,b, ,c",
        "local:///opt/a.jar",
        "/tmp/a.jar",
        "file:/x.py",
        "s3a://b/k",
        "{{APP_ID}}",
        "{{SPARK_VERSION}}",
        "My App!",
        "x" * 300,
        "/t/driver.yaml",
        "/t/bad.yaml",
        "/t/missing",
        "/t/krb5.conf",
        "/t/ca.crt",
        "/t/keytab",
        "s:k",
        "secret",
        "OnDemand",
        "spark-local-dir-1",
        "Memory",
        "nvidia.com",
        "org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep",
        "no.such:step",
        "/mnt/x",
        "1Gi",
        "100",
        "ReadWriteOnce",
        "user@REALM",
        "local:///k.keytab",
        "/opt/spark",
    ]
)
values = st.one_of(interesting, st.text(max_size=30))
# Mostly valid values per key, so the generated confs reach deep into every step.
VALID = {
    "spark.app.name": ["pi", "My App", "etl.job_2"],
    "spark.kubernetes.namespace": ["default", "jobs"],
    "spark.kubernetes.container.image.pullPolicy": ["Always", "Never", "IfNotPresent"],
    "spark.kubernetes.container.image.pullSecrets": ["a,b", "regcred"],
    "spark.driver.cores": ["1", "2"],
    "spark.kubernetes.driver.request.cores": ["0.5", "500m"],
    "spark.kubernetes.driver.limit.cores": ["1", "1500m"],
    "spark.driver.memory": ["2g", "512m", "4096"],
    "spark.driver.memoryOverhead": ["200m", "1g"],
    "spark.driver.memoryOverheadFactor": ["0.2", "1"],
    "spark.kubernetes.memoryOverheadFactor": ["0.3"],
    "spark.driver.minMemoryOverhead": ["500m"],
    "spark.driver.port": ["7000"],
    "spark.ui.port": ["4041"],
    "spark.kubernetes.driver.service.ipFamilies": ["IPv4,IPv6", "IPv6"],
    "spark.kubernetes.driver.service.ipFamilyPolicy": ["PreferDualStack"],
    "spark.jars": ["local:///a.jar,s3a://b/c.jar"],
    "spark.files": ["https://x/y.txt"],
    "spark.kubernetes.authenticate.driver.caCertFile": ["/t/ca.crt"],
    "spark.kubernetes.authenticate.driver.oauthToken": ["tok"],
    "spark.kubernetes.driver.podTemplateFile": ["/t/driver.yaml"],
    "spark.kubernetes.executor.podTemplateFile": ["/t/driver.yaml"],
    "spark.kubernetes.kerberos.krb5.path": ["/t/krb5.conf"],
    "spark.kerberos.keytab": ["/t/keytab"],
    "spark.kerberos.principal": ["user@REALM"],
    "spark.local.dir": ["/a,/b"],
    "spark.kubernetes.local.dirs.tmpfs": ["true"],
    "spark.kubernetes.configMap.maxSize": ["100"],
    "spark.kubernetes.driver.pod.excludedFeatureSteps": [
        "org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep"
    ],
}
BOOLEAN_KEYS = [
    k
    for k in SCALAR_KEYS
    if "allowPrivilegeEscalation" in k or "publishNot" in k or "useReadWriteOnce" in k
]


def value_for(key):
    valid = VALID.get(key, ["true", "false"] if key in BOOLEAN_KEYS else ["x"])
    good = st.sampled_from(valid)
    return st.one_of(good, good, good, values)


names = st.one_of(
    st.sampled_from(["a", "b", "team", "app.kubernetes.io/name", "Bad Key", "A_B", "-x", "e"]),
    st.text(min_size=1, max_size=12),
)
scalar_entries = st.lists(st.sampled_from(SCALAR_KEYS), max_size=10, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({key: value_for(key) for key in keys})
)
prefixed_entries = st.dictionaries(
    st.builds(lambda p, n: p + n, st.sampled_from(PREFIX_KEYS), names), values, max_size=4
)
volume_entries = st.dictionaries(
    st.builds(
        lambda t, n, s: f"spark.kubernetes.driver.volumes.{t}.{n}.{s}",
        st.sampled_from(VOLUME_TYPES),
        st.sampled_from(["data", "v1", "Bad", "spark-local-dir-1"]),
        st.sampled_from(VOLUME_SUFFIXES),
    ),
    values,
    max_size=5,
)
resources = st.one_of(
    st.builds(
        MainAppResource,
        st.just("java"),
        st.sampled_from(["local:///a.jar", "/a.jar", "s3a://b/a.jar", None]),
    ),
    st.builds(
        MainAppResource,
        st.sampled_from(["python", "r"]),
        st.sampled_from(["local:///a.py", "/home/a.py", "https://x/a.R", None]),
    ),
)
environments = st.fixed_dictionaries(
    {},
    optional={
        "SPARK_CONF_DIR": st.sampled_from(["/conf", "/nowhere"]),
        "HADOOP_CONF_DIR": st.just("/hadoop"),
        "SPARK_LOCAL_DIRS": st.sampled_from(["", "/a,/b", "/x"]),
        "PYSPARK_PYTHON": st.just("python3"),
    },
)


def local_inputs(environment: dict[str, str]) -> LocalInputs:
    return LocalInputs(
        environment=environment,
        files=FILES,
        spark_user="alice",
        directories={"/conf": ("hive-site.xml",), "/hadoop": ("core-site.xml",)},
    )


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    scalars=scalar_entries,
    prefixed=prefixed_entries,
    volumes=volume_entries,
    version=st.sampled_from(
        ["3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0", "4.3.1"] * 3 + ["3.4.0", "4.3"]
    ),
    resource=resources,
    main_class=st.sampled_from(["Main", "org.example.App", None]),
    app_args=st.lists(st.text(max_size=8), max_size=3),
    proxy_user=st.sampled_from(["bob", None]),
    env=environments,
    with_image=st.sampled_from([True] * 9 + [False]),
    template=st.sampled_from(
        [None] * 6 + [{"spec": {"containers": [{"name": "x"}]}}, {"spec": "bad"}, {}]
    ),
)
def test_only_spark_conf_error_escapes(
    scalars,
    prefixed,
    volumes,
    version,
    resource,
    main_class,
    app_args,
    proxy_user,
    env,
    with_image,
    template,
):
    spark_conf = {**prefixed, **volumes, **scalars}
    if with_image:
        spark_conf.setdefault("spark.kubernetes.container.image", "apache/spark:4.3.0")
    local = local_inputs(env)
    try:
        conf = prepare(
            spark_conf,
            spark_version=version,
            main_app_resource=resource,
            main_class=main_class,
            app_args=app_args,
            proxy_user=proxy_user,
            local=local,
            ids=IDS,
            driver_pod_template=template,
        )
        rendered = render(conf)
    except SparkConfError as err:
        assert err.key is not None and str(err)  # noqa: PT017 - either outcome is checked
        return
    assert rendered.driver_pod["spec"]["containers"][-1]["name"]
    assert rendered.resources[-1]["kind"] == "ConfigMap"


def _checked(step: FeatureStep) -> FeatureStep:
    """`step`, failing if it changes the pod it is given."""

    def run(conf: DriverConf, pod: SparkPod) -> StepResult:
        before = copy.deepcopy(pod)
        result = step.run(conf, pod)
        assert pod == before, f"{step.name} changed the pod it was given"
        return result

    return FeatureStep(step.name, step.since, run)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    scalars=scalar_entries,
    prefixed=prefixed_entries,
    volumes=volume_entries,
    version=st.sampled_from(["3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0"]),
    resource=resources,
    env=environments,
    template=st.sampled_from(
        [None] * 3 + [{"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "x"}]}}]
    ),
)
def test_the_fold_never_changes_its_input(
    scalars, prefixed, volumes, version, resource, env, template
):
    spark_conf = {**prefixed, **volumes, **scalars}
    spark_conf.setdefault("spark.kubernetes.container.image", "apache/spark:4.3.0")
    local = local_inputs(env)
    try:
        conf = prepare(
            spark_conf,
            spark_version=version,
            main_app_resource=resource,
            main_class="Main",
            local=local,
            ids=IDS,
            driver_pod_template=template,
        )
    except SparkConfError:
        return
    inputs = copy.deepcopy(
        (conf.spark_conf, conf.local, conf.ids, conf.driver_pod_template, conf.app_args)
    )
    try:
        steps = [_checked(step) for step in builder.active_steps(conf)]
        builder.assemble(conf, builder.build_driver_spec(conf, steps))
    except SparkConfError:
        pass  # a refusal part-way must leave the input as it was, too
    after = (conf.spark_conf, conf.local, conf.ids, conf.driver_pod_template, conf.app_args)
    assert after == inputs
