"""Per-run PKI for the test control plane: a CA, the API server's serving
certificate, the admin client certificate and the service-account signing key.

Everything is generated fresh for each run so no key material is ever committed
or shared between runs. EC P-256 keys keep generation in the milliseconds.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=2)


@dataclass(frozen=True)
class PkiFiles:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    service_account_key: Path
    service_account_pub: Path


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _validity(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
    # Backdated a little so a clock skew between processes cannot make it "not yet valid".
    now = datetime.datetime.now(datetime.UTC)
    return builder.not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(
        now + _VALIDITY
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _issue(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    usage: x509.ObjectIdentifier,
    sans: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    builder = (
        _validity(x509.CertificateBuilder())
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def generate_pki(directory: Path) -> PkiFiles:
    """Writes a fresh CA, serving cert (127.0.0.1, localhost), admin client cert
    (CN admin, O system:masters) and service-account key pair into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    files = PkiFiles(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        service_account_key=directory / "sa.key",
        service_account_pub=directory / "sa.pub",
    )

    ca_key = _new_key()
    ca_subject = _name("sparkk8s-testenv-ca")
    ca_cert = (
        _validity(x509.CertificateBuilder())
        .subject_name(ca_subject)
        .issuer_name(ca_subject)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(files.ca_key, ca_key)
    _write_cert(files.ca_cert, ca_cert)

    serving_key = _new_key()
    serving_sans: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes"),
        x509.DNSName("kubernetes.default.svc"),
        x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
        # The `kubernetes` Service's ClusterIP, which in-cluster clients dial by its
        # KUBERNETES_SERVICE_HOST (the real node's pods reach it through a DNAT rule).
        x509.IPAddress(ipaddress.IPv4Address("10.96.0.1")),
    ]
    serving = _issue(
        ca_cert,
        ca_key,
        _name("kube-apiserver"),
        serving_key,
        ExtendedKeyUsageOID.SERVER_AUTH,
        serving_sans,
    )
    _write_key(files.serving_key, serving_key)
    _write_cert(files.serving_cert, serving)

    admin_key = _new_key()
    admin = _issue(
        ca_cert,
        ca_key,
        _name("admin", "system:masters"),
        admin_key,
        ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    _write_key(files.admin_key, admin_key)
    _write_cert(files.admin_cert, admin)

    sa_key = _new_key()
    _write_key(files.service_account_key, sa_key)
    files.service_account_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return files


def issue_from_ca(
    pki: PkiFiles,
    cert_file: Path,
    key_file: Path,
    common_name: str,
    organization: str | None = None,
    server_names: list[str] | None = None,
) -> None:
    """Writes a key and a certificate signed by the run's CA: a serving certificate for
    `server_names` (IP addresses or DNS names) when given, else a client certificate (a
    kubelet's `system:node:<name>` identity)."""
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    sans: list[x509.GeneralName] = []
    for name in server_names or []:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    key = _new_key()
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server_names else ExtendedKeyUsageOID.CLIENT_AUTH
    cert = _issue(ca_cert, ca_key, _name(common_name, organization), key, usage, sans or None)
    _write_key(key_file, key)
    _write_cert(cert_file, cert)
