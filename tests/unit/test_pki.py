import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from clusters.pki import PKI, write_kubeconfig


def load(path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_node_client_certificate_carries_the_node_identity_and_is_signed_by_the_ca(tmp_path) -> None:
    pki = PKI(tmp_path)
    pair = pki.issue("node-1-kubelet-client", "system:node:node-1", ("system:nodes",))
    cert, ca = load(pair.cert), load(pki.ca.cert)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:node-1"
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:nodes"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    cert.verify_directly_issued_by(ca)
    assert (pair.key.stat().st_mode & 0o777) == 0o600


def test_serving_certificate_has_the_requested_names(tmp_path) -> None:
    pair = PKI(tmp_path).issue(
        "apiserver", "kube-apiserver", dns=("kubernetes.default.svc",), ips=("10.96.0.1",), server=True, client=False
    )
    sans = load(pair.cert).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["kubernetes.default.svc"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.96.0.1")]


def test_service_account_key_pair_is_ecdsa(tmp_path) -> None:
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    pair = PKI(tmp_path).service_account_keys()
    assert isinstance(load_pem_public_key(pair.cert.read_bytes()), ec.EllipticCurvePublicKey)


def test_kubeconfig_points_at_server_ca_and_credentials(tmp_path) -> None:
    import yaml

    pki = PKI(tmp_path)
    creds = pki.issue("admin", "dralab-admin", ("system:masters",))
    cfg = yaml.safe_load(write_kubeconfig(tmp_path / "k", "https://10.99.1.1:6443", pki.ca.cert, creds, "admin").read_text())
    assert cfg["clusters"][0]["cluster"] == {"server": "https://10.99.1.1:6443", "certificate-authority": str(pki.ca.cert)}
    assert cfg["users"][0]["user"]["client-certificate"] == str(creds.cert)
