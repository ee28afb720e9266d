"""ganeti.utils.x509: the self-signed cluster certificate."""

import os
import stat
import time

import pytest
from cryptography import x509 as cx509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from OpenSSL import SSL

from ganeti import errors
from ganeti.utils import x509


def test_generate_self_signed():
    key_pem, cert_pem = x509.GenerateSelfSignedX509Cert("node.example.test",
                                                        30)
    assert key_pem.startswith("-----BEGIN PRIVATE KEY-----")
    cert = cx509.load_pem_x509_certificate(cert_pem.encode())
    assert cert.subject == cert.issuer
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0] \
        .value == "node.example.test"
    assert cert.public_key().key_size == 2048
    assert isinstance(cert.signature_hash_algorithm, hashes.SHA256)
    assert cert.extensions.get_extension_for_class(
        cx509.BasicConstraints).value.ca
    usages = cert.extensions.get_extension_for_class(
        cx509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usages
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usages
    # Self-signed: the certificate verifies its own signature
    cert.verify_directly_issued_by(cert)
    expiry = x509.GetCertificateExpiry(cert_pem)
    assert abs(expiry - (time.time() + 30 * 86400)) < 60
    assert cert.not_valid_before_utc.timestamp() < time.time()


def test_keys_and_serials_differ():
    first = x509.GenerateSelfSignedX509Cert("a", 1)
    second = x509.GenerateSelfSignedX509Cert("a", 1)
    assert first[0] != second[0]
    assert x509.GetCertificateDigest(first[1]) != \
        x509.GetCertificateDigest(second[1])


def test_invalid_validity():
    with pytest.raises(errors.ProgrammerError):
        x509.GenerateSelfSignedX509Cert("a", 0)


def test_ssl_cert_file(tmp_path):
    path = str(tmp_path / "server.pem")
    x509.GenerateSelfSignedSslCert(path, common_name="c.example.test",
                                   validity_days=2)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path, encoding="ascii") as fobj:
        pem = fobj.read()
    assert "PRIVATE KEY" in pem and "CERTIFICATE" in pem
    # One file is enough for a TLS context: key and certificate match
    ctx = SSL.Context(SSL.TLS_SERVER_METHOD)
    ctx.use_certificate_chain_file(path)
    ctx.use_privatekey_file(path)
    ctx.check_privatekey()
    # The digest ignores the key and the PEM framing
    cert_only = pem[pem.index("-----BEGIN CERTIFICATE-----"):]
    assert x509.GetCertificateDigest(pem) == \
        x509.GetCertificateDigest(cert_only.encode())
    loaded = x509.LoadCertificate(pem)
    assert x509.GetCertificateDigest(loaded) == \
        loaded.fingerprint(hashes.SHA256()).hex()
    assert len(x509.GetCertificateDigest(pem)) == 64


def test_invalid_pem():
    with pytest.raises(errors.X509CertError):
        x509.GetCertificateDigest("no certificate here")
    with pytest.raises(errors.X509CertError):
        x509.GetCertificateExpiry("-----BEGIN CERTIFICATE-----\nAAAA\n"
                                  "-----END CERTIFICATE-----\n")
