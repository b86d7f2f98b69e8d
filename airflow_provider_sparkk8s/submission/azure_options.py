"""adlfs options for an Azure upload path from hadoop-azure's own keys, as a spark-submit
user sets them: pure.

The account is the first label of the path's host (`abfss://container@ACCOUNT.dfs.core.
windows.net/...`, `wasbs://container@ACCOUNT.blob.core.windows.net/...`), and its keys are
named after that host, as hadoop-azure reads them:

- `fs.azure.account.key.<host>`: the account's shared key (ABFS also reads the unqualified
  `fs.azure.account.key`);
- a SAS instead: ABFS's `fs.azure.sas.fixed.token.<host>` (or unqualified), WASB's
  `fs.azure.sas.<container>.<host>`;
- `fs.azure.abfs.endpoint` (`host:port`), with `fs.azure.always.use.https=false` for plain
  HTTP: another endpoint than Azure's, as for an emulator. An IP address or localhost puts
  the account in the path (ABFS's rule, and Azurite's); another host gets the account as its
  first label.

With none of them set, adlfs' own lookup in the environment (`AZURE_STORAGE_*`) is left to
work. The key and SAS are secrets: `secret_values` names them so every message is scrubbed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

from airflow_provider_sparkk8s.errors import SparkConfError

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

AZURE = "spark.hadoop.fs.azure."
ACCOUNT_KEY = AZURE + "account.key"
FIXED_SAS = AZURE + "sas.fixed.token"
ENDPOINT = AZURE + "abfs.endpoint"
ALWAYS_HTTPS = AZURE + "always.use.https"
SCHEMES = ("abfs", "abfss", "wasb", "wasbs")


def _location(upload_path: str) -> tuple[str, str, str] | None:
    """(scheme, container, host) of an `abfs[s]://` or `wasb[s]://` path naming its account."""
    parts = urlsplit(upload_path)
    if parts.scheme not in SCHEMES or "@" not in parts.netloc:
        return None
    container, _, host = parts.netloc.partition("@")
    return (parts.scheme, container, host.lower()) if container and "." in host else None


def _key(spark_conf: Mapping[str, str], scheme: str, host: str) -> str | None:
    key = spark_conf.get(f"{ACCOUNT_KEY}.{host}")
    if key is None and scheme.startswith("abfs"):
        key = spark_conf.get(ACCOUNT_KEY)
    return key


def _sas(spark_conf: Mapping[str, str], scheme: str, container: str, host: str) -> str | None:
    if scheme.startswith("wasb"):
        return spark_conf.get(f"{AZURE}sas.{container}.{host}")
    return spark_conf.get(f"{FIXED_SAS}.{host}") or spark_conf.get(FIXED_SAS)


def _blob_endpoint(spark_conf: Mapping[str, str], account: str) -> str | None:
    """The account's blob endpoint URL from `fs.azure.abfs.endpoint`, None when unset."""
    endpoint = spark_conf.get(ENDPOINT)
    if not endpoint:
        return None
    parts = urlsplit("//" + endpoint)
    if "://" in endpoint or parts.path or not parts.hostname:
        raise SparkConfError(
            ENDPOINT, endpoint, "host:port with no scheme or path, such as 127.0.0.1:10000"
        )
    https = spark_conf.get(ALWAYS_HTTPS, "true").strip().lower() != "false"
    scheme = "https" if https else "http"
    if _path_style(parts.hostname):
        return f"{scheme}://{endpoint}/{account}"
    return f"{scheme}://{account}.{endpoint}"


def _path_style(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def azure_options(spark_conf: Mapping[str, str], upload_path: str) -> dict[str, Any]:
    """adlfs keyword arguments for `upload_path` from the hadoop-azure keys that are set.

    At Azure's endpoint: `account_name` with `account_key` or `sas_token`. At another one
    (`fs.azure.abfs.endpoint`): a connection string naming that blob endpoint, the account
    and its key or SAS, the only way adlfs takes an endpoint over plain HTTP."""
    location = _location(upload_path)
    if location is None:
        return {}
    scheme, container, host = location
    account = host.split(".", 1)[0]
    key = _key(spark_conf, scheme, host)
    sas = None if key else (_sas(spark_conf, scheme, container, host) or "").lstrip("?")
    endpoint = _blob_endpoint(spark_conf, account)
    if endpoint is None:
        if key:
            return {"account_name": account, "account_key": key}
        if sas:
            return {"account_name": account, "sas_token": sas}
        return {}
    if key:
        credential = f"AccountKey={key}"
    elif sas:
        credential = f"SharedAccessSignature={sas}"
    else:
        raise SparkConfError(
            ENDPOINT, spark_conf[ENDPOINT], f"{ACCOUNT_KEY}.{host} or a SAS key for it as well",
            "the upload signs its requests with the account's key or SAS",
        )  # fmt: skip
    return {
        "connection_string": (
            f"DefaultEndpointsProtocol={urlsplit(endpoint).scheme};AccountName={account};"
            f"{credential};BlobEndpoint={endpoint};"
        )
    }


def azure_secret_values(spark_conf: Mapping[str, str]) -> tuple[str, ...]:
    """Every account key and SAS in the conf, whichever account it is for."""
    return tuple(
        value
        for name, value in spark_conf.items()
        if value
        and name.startswith((ACCOUNT_KEY, AZURE + "sas."))
        and not name.startswith(AZURE + "sas.token.")  # the SAS provider's settings
    )
