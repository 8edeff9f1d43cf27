"""The lab's PKI: one CA, serving and client certificates, the service-account signing key.

ECDSA P-256 throughout: generating a key takes microseconds, which keeps bring-up fast.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=7)


@dataclass(frozen=True)
class CertKey:
    cert: Path
    key: Path


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    path.chmod(0o600)


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)] + [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs])


class PKI:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        self._not_before = now - datetime.timedelta(minutes=5)
        self._not_after = now + VALIDITY
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = _name("dralab-ca")
        self._ca_cert = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._not_before)
            .not_valid_after(self._not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca = CertKey(self.dir / "ca.crt", self.dir / "ca.key")
        self.ca.cert.write_bytes(self._ca_cert.public_bytes(serialization.Encoding.PEM))
        _write_key(self._ca_key, self.ca.key)

    def issue(
        self,
        name: str,
        cn: str,
        orgs: tuple[str, ...] = (),
        *,
        dns: tuple[str, ...] = (),
        ips: tuple[str, ...] = (),
        server: bool = False,
        client: bool = True,
    ) -> CertKey:
        key = ec.generate_private_key(ec.SECP256R1())
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, orgs))
            .issuer_name(self._ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._not_before)
            .not_valid_after(self._not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        sans = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        pair = CertKey(self.dir / f"{name}.crt", self.dir / f"{name}.key")
        pair.cert.write_bytes(builder.sign(self._ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
        _write_key(key, pair.key)
        return pair

    def service_account_keys(self) -> CertKey:
        """The token signing key pair (`cert` holds the public key)."""
        key = ec.generate_private_key(ec.SECP256R1())
        pair = CertKey(self.dir / "sa.pub", self.dir / "sa.key")
        pair.cert.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        _write_key(key, pair.key)
        return pair


def write_kubeconfig(path: Path, server: str, ca: Path, creds: CertKey, user: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "dralab",
        "clusters": [{"name": "dralab", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"client-certificate": str(creds.cert), "client-key": str(creds.key)}}],
        "contexts": [{"name": "dralab", "context": {"cluster": "dralab", "user": user}}],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
