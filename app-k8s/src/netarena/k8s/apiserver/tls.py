"""HTTPS for the embedded API server, as a kind cluster serves it.

A cluster's API server answers only over TLS, with a certificate for its service names
and addresses signed by the cluster's CA; the kubeconfig carries that CA. One CA and one
server certificate (ECDSA P-256, quick to make and to handshake) are made per process and
shared by every server it starts.
"""

from __future__ import annotations

import atexit
import datetime
import ipaddress
import shutil
import ssl
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["ServingCertificate", "serving_certificate", "server_context"]

_NAMES = ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
          "kubernetes.default.svc.cluster.local", "localhost", "kind-control-plane")


@dataclass(frozen=True)
class ServingCertificate:
    """The CA (for kubeconfigs) and the server's certificate chain and key (as files)."""

    ca_pem: bytes
    cert_file: Path
    key_file: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


_LOCK = threading.Lock()
_MADE: list[ServingCertificate] = []


def serving_certificate() -> ServingCertificate:
    """This process's CA and API server certificate (made once, on first use, ~10 ms).

    Episodes start concurrently: the first caller makes it under a lock, so every server
    and every kubeconfig of the process share one CA.
    """
    with _LOCK:
        if not _MADE:
            _MADE.append(_make())
        return _MADE[0]


def _make() -> ServingCertificate:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("kubernetes")).issuer_name(
        _name("kubernetes")).public_key(ca_key.public_key()).serial_number(
        x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=400))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False,
                                     False), critical=True)
        .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in _NAMES]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", "10.96.0.1")]
    cert = (x509.CertificateBuilder().subject_name(_name("kube-apiserver")).issuer_name(
        ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=400))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                       critical=False)
        .sign(ca_key, hashes.SHA256()))
    folder = Path(tempfile.mkdtemp(prefix="k8s-apiserver-tls-"))
    atexit.register(shutil.rmtree, folder, True)
    cert_file, key_file = folder / "apiserver.crt", folder / "apiserver.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM)
                          + ca.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_file.chmod(0o600)
    return ServingCertificate(ca.public_bytes(serialization.Encoding.PEM), cert_file, key_file)


def server_context() -> ssl.SSLContext:
    """A TLS server context holding the API server's certificate."""
    cert = serving_certificate()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert.cert_file, cert.key_file)
    context.set_alpn_protocols(["http/1.1"])
    return context
