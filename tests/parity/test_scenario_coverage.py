"""The parity scenarios touch every driver feature step and every driver conf key (Spark's
`spark.kubernetes.*` entries in `Config.scala` that shape the driver's objects, and the
other keys the driver steps read), or say why not."""

from __future__ import annotations

from tests.parity.scenarios import SCENARIO_DIR, all_scenarios

DRIVER_KEYS = [
    "spark.kubernetes.namespace",
    "spark.kubernetes.container.image",
    "spark.kubernetes.driver.container.image",
    "spark.kubernetes.container.image.pullPolicy",
    "spark.kubernetes.container.image.pullSecrets",
    "spark.kubernetes.driver.pod.name",
    "spark.kubernetes.driver.request.cores",
    "spark.kubernetes.driver.limit.cores",
    "spark.kubernetes.memoryOverheadFactor",
    "spark.kubernetes.driver.scheduler.name",
    "spark.kubernetes.scheduler.name",
    "spark.kubernetes.node.selector.",
    "spark.kubernetes.driver.node.selector.",
    "spark.kubernetes.driver.label.",
    "spark.kubernetes.driver.annotation.",
    "spark.kubernetes.driver.service.label.",
    "spark.kubernetes.driver.service.annotation.",
    "spark.kubernetes.driverEnv.",
    "spark.kubernetes.driver.secrets.",
    "spark.kubernetes.driver.secretKeyRef.",
    "spark.kubernetes.driver.volumes.hostPath.",
    "spark.kubernetes.driver.volumes.emptyDir.",
    "spark.kubernetes.driver.volumes.nfs.",
    "spark.kubernetes.driver.volumes.persistentVolumeClaim.",
    ".options.claimName: OnDemand",
    ".mount.subPathExpr",
    ".options.type",
    ".label.",
    ".annotation.",
    "spark.kubernetes.local.dirs.tmpfs",
    "spark.kubernetes.driver.podTemplateFile",
    "spark.kubernetes.driver.podTemplateContainerName",
    "spark.kubernetes.executor.podTemplateFile",
    "spark.kubernetes.driver.pod.excludedFeatureSteps",
    "spark.kubernetes.securityContext.allowPrivilegeEscalation",
    "spark.kubernetes.driver.service.ipFamilyPolicy",
    "spark.kubernetes.driver.service.ipFamilies",
    "spark.kubernetes.driver.service.publishNotReadyAddresses",
    "spark.kubernetes.driver.service.deleteOnTermination",
    "spark.kubernetes.authenticate.submission.oauthToken",
    "spark.kubernetes.authenticate.submission.oauthTokenFile",
    "spark.kubernetes.authenticate.driver.oauthToken",
    "spark.kubernetes.authenticate.driver.caCertFile",
    "spark.kubernetes.authenticate.driver.clientKeyFile",
    "spark.kubernetes.authenticate.driver.clientCertFile",
    "spark.kubernetes.authenticate.driver.mounted.oauthTokenFile",
    "spark.kubernetes.authenticate.driver.mounted.caCertFile",
    "spark.kubernetes.authenticate.driver.serviceAccountName",
    "spark.kubernetes.authenticate.executor.serviceAccountName",
    "spark.kubernetes.trust.certificates",
    "spark.kubernetes.submission.requestTimeout",
    "spark.kubernetes.submission.connectionTimeout",
    "spark.kubernetes.report.interval",
    "spark.kubernetes.file.upload.path",
    "spark.kubernetes.configMap.maxSize",
    "spark.kubernetes.hadoop.configMapName",
    "spark.kubernetes.kerberos.krb5.path",
    "spark.kubernetes.kerberos.krb5.configMapName",
    "spark.kubernetes.kerberos.tokenSecret.name",
    "spark.kubernetes.kerberos.tokenSecret.itemKey",
    "spark.kubernetes.driver.annotateExitException",
    "spark.kubernetes.appKillPodDeletionGracePeriod",
    "spark.kubernetes.executor.podNamePrefix",
    "spark.kubernetes.legacy.useReadWriteOnceAccessMode",
    "spark.driver.memory",
    "spark.driver.memoryOverhead",
    "spark.driver.memoryOverheadFactor",
    "spark.driver.minMemoryOverhead",
    "spark.driver.cores",
    "spark.driver.resource.",
    "spark.driver.port",
    "spark.driver.blockManager.port",
    "spark.blockManager.port",
    "spark.ui.port",
    "spark.connect.grpc.binding.port",
    "spark.pyspark.python",
    "spark.pyspark.driver.python",
    "spark.local.dir",
    "spark.kerberos.principal",
    "spark.kerberos.keytab",
    "HADOOP_CONF_DIR",
    "SPARK_CONF_DIR",
    "SPARK_LOCAL_DIRS",
    "PYSPARK_PYTHON",
    "--proxy-user",
    "--properties-file",
    "--jars",
    "--files",
    "--py-files",
    "--archives",
    "--driver-memory",
    "--driver-cores",
    "--executor-memory",
    "--executor-cores",
    "--num-executors",
    "--verbose",
    "--packages",
    "--exclude-packages",
    "--repositories",
    "spark.jars.packages",
    "spark.jars.excludes",
    "spark.jars.repositories",
    "spark.jars.ivySettings",
    "spark.kubernetes.driver.pod.featureSteps: org.apache.spark.deploy.k8s.features.VolcanoFeatureStep",
    "spark.kubernetes.scheduler.volcano.podGroupTemplateFile",
    "spark.kubernetes.scheduler.volcano.podGroupTemplateJson",
    # spark-submit's wrapper and launcher (docs/cli.md)
    "spark-env.sh",
    "HADOOP_USER_NAME",
    "SPARK_SUBMIT_OPTS",
    "--driver-java-options",
    "--driver-library-path",
    "--driver-class-path",
    "--driver-default-class-path",
    "--load-spark-defaults",
    "--extra-properties-file",
    "--remote",
    "spark.kubernetes.pyspark.pythonVersion",
]

# Driver keys no scenario sets, and why real spark-submit cannot be the oracle for them here.
NOT_COVERED = {
    # A user's own feature step is a JVM class for spark-submit and a Python callable for us,
    # so only Spark's optional steps (Volcano) can go through the oracle.
    "spark.kubernetes.driver.pod.featureSteps (user steps)": "JVM classes for spark-submit",
    # Only change how the submitting client authenticates, never an object; the recorder is
    # plain http and fabric8 wants real PEM material for the files.
    "spark.kubernetes.authenticate.submission.clientCertFile": "client auth only",
    "spark.kubernetes.authenticate.submission.clientKeyFile": "client auth only",
    "spark.kubernetes.context": "needs a kubeconfig context; auth only",
}


def _scenario_text() -> str:
    # The runner adds waitAppCompletion=false to every scenario (the oracle must not wait).
    runner_conf = "spark.kubernetes.submission.waitAppCompletion"
    return "\n".join([runner_conf, *(p.read_text() for p in sorted(SCENARIO_DIR.glob("*.yaml")))])


def test_every_driver_key_is_in_some_scenario() -> None:
    text = _scenario_text()
    missing = [key for key in DRIVER_KEYS if key not in text]
    assert missing == []


def test_every_feature_step_is_exercised() -> None:
    text = _scenario_text()
    step_triggers = {
        "basic_driver": "spark.kubernetes.container.image",
        "driver_kubernetes_credentials": "spark.kubernetes.authenticate.driver.oauthToken",
        "driver_service": "spark.kubernetes.driver.service.ipFamilyPolicy",
        "network_policy": "NetworkPolicyFeatureStep",
        "mount_secrets": "spark.kubernetes.driver.secrets.",
        "env_secrets": "spark.kubernetes.driver.secretKeyRef.",
        "mount_volumes": "spark.kubernetes.driver.volumes.",
        "driver_command": ".py",
        "hadoop_conf_driver": "HADOOP_CONF_DIR",
        "kerberos_conf_driver": "spark.kubernetes.kerberos.krb5.path",
        "pod_template_config_map": "spark.kubernetes.executor.podTemplateFile",
        "local_dirs": "spark.kubernetes.local.dirs.tmpfs",
    }
    assert [step for step, trigger in step_triggers.items() if trigger not in text] == []


def test_both_spark_lines_have_scenarios() -> None:
    lines = [line for scenario in all_scenarios() for line in scenario.spark_lines]
    assert lines.count("4.3.0") >= 30 and lines.count("3.5.9") >= 15
