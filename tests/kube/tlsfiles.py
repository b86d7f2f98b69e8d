"""Throw-away PKI for TLS unit tests: a CA, a server certificate and a client certificate."""

from __future__ import annotations

import datetime
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    ca_file: str
    server_cert_file: str
    server_key_file: str
    client_cert_file: str
    client_key_file: str
    other_ca_file: str  # a CA that signed nothing here: the "wrong CA"

    def read(self, name: str) -> str:
        return Path(getattr(self, name)).read_text()

    def server_context(self, require_client_cert: bool) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.server_cert_file, self.server_key_file)
        if require_client_cert:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.ca_file)
        return context


# The only name in the server certificate: connecting to 127.0.0.1 verifies only when the
# client sets this TLS server name, which is what the tls_server_name tests need.
SERVER_NAME = "api.sparkk8s.test"


def make_pki(directory: Path) -> Pki:
    now = datetime.datetime.now(datetime.UTC)

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def write_key(name: str, private: ec.EllipticCurvePrivateKey) -> str:
        path = directory / name
        path.write_bytes(
            private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return str(path)

    def write_cert(name: str, cert: x509.Certificate) -> str:
        path = directory / name
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return str(path)

    def issue(
        subject: str,
        public: object,
        issuer: x509.Name,
        signer: object,
        ca: bool = False,
        sans: list[x509.GeneralName] | None = None,
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer)
            .public_key(public)  # type: ignore[arg-type]
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(signer, hashes.SHA256())  # type: ignore[arg-type]

    ca_key, other_key = key(), key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sparkk8s-test-ca")])
    ca = issue("sparkk8s-test-ca", ca_key.public_key(), ca_name, ca_key, ca=True)
    other_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "other-ca")])
    other = issue("other-ca", other_key.public_key(), other_name, other_key, ca=True)
    server_key, client_key = key(), key()
    server = issue(
        "kube-apiserver",
        server_key.public_key(),
        ca_name,
        ca_key,
        sans=[x509.DNSName(SERVER_NAME)],
    )
    client = issue("sparkk8s-client", client_key.public_key(), ca_name, ca_key)
    return Pki(
        ca_file=write_cert("ca.crt", ca),
        server_cert_file=write_cert("server.crt", server),
        server_key_file=write_key("server.key", server_key),
        client_cert_file=write_cert("client.crt", client),
        client_key_file=write_key("client.key", client_key),
        other_ca_file=write_cert("other-ca.crt", other),
    )
