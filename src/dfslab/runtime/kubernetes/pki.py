"""The local Kubernetes's credentials: one CA, the API server's serving certificate, the
service-account signing key, and a bearer token per component.

Why tokens and not a client certificate per component: the API server's static token file
gives every component its Kubernetes identity (system:node:<name> in system:nodes, the
controller manager's and scheduler's own users) in one line each, so the Node and RBAC
authorizers judge them exactly as on a kubeadm cluster. Everything lives under the cluster's
state directory and goes with it.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

# The `kubernetes` Service's ClusterIP: the first address of the service range. Pods reach the
# API server there (in-cluster config), so the serving certificate must name it.
SERVICE_RANGE = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"
VALID_DAYS = 30


@dataclass(frozen=True)
class Pki:
    dir: Path

    @property
    def ca(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def server_cert(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def server_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"

    @property
    def tokens(self) -> Path:
        return self.dir / "tokens.csv"

    def token(self, user: str) -> str:
        for line in self.tokens.read_text().splitlines():
            token, name = line.split(",")[:2]
            if name == user:
                return token
        raise KeyError(user)


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write_key(key: rsa.RSAPrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _cert(subject: str, key, issuer_key, issuer_name: x509.Name | None, ca: bool,
          sans: list[x509.GeneralName] | None = None) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name or name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), True)
    else:
        builder = builder.add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), False)
    return builder.sign(issuer_key, hashes.SHA256())


def create(directory: Path, api_address: str, users: dict[str, str]) -> Pki:
    """CA, serving certificate for `api_address`, service-account keys, and a token per user
    ({user: comma-separated groups})."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    pki = Pki(directory)
    ca_key = _key()
    ca = _cert("dfslab-kubernetes-ca", ca_key, ca_key, None, ca=True)
    pki.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    server_key = _key()
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in
                                    ("kubernetes", "kubernetes.default", "kubernetes.default.svc", "localhost")]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in (api_address, SERVICE_IP, "127.0.0.1")]
    server = _cert("kube-apiserver", server_key, ca_key, ca.subject, ca=False, sans=sans)
    pki.server_cert.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    _write_key(server_key, pki.server_key)
    sa_key = _key()
    _write_key(sa_key, pki.sa_key)
    pki.sa_pub.write_bytes(sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                            serialization.PublicFormat.SubjectPublicKeyInfo))
    lines = [f'{secrets.token_hex(16)},{user},{user},"{groups}"' for user, groups in users.items()]
    pki.tokens.write_text("\n".join(lines) + "\n")
    pki.tokens.chmod(0o600)
    return pki


def kubeconfig(pki: Pki, server: str, user: str) -> str:
    """A kubeconfig for `user` (its token) against `server`, trusting the cluster's CA."""
    import base64
    import yaml
    ca = base64.b64encode(pki.ca.read_bytes()).decode()
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dfslab",
        "clusters": [{"name": "dfslab", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": user, "user": {"token": pki.token(user)}}],
        "contexts": [{"name": "dfslab", "context": {"cluster": "dfslab", "user": user}}],
    })
