"""X509 certificate helpers built on ``cryptography``.

The cluster certificate is self-signed and plays every role at once: noded's
server certificate, the client certificate the master presents to noded, and
the CA both sides verify the other against. pyOpenSSL can no longer build
certificates (its X509Req/sign API is gone), hence ``cryptography`` here.
"""

import base64
import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ganeti import constants, errors
from ganeti.utils import io

_KEY_BITS = 2048
# Nodes' clocks are not perfectly in sync; a certificate that is "not yet
# valid" on a node lagging behind would lock it out of the cluster.
_CLOCK_SKEW = datetime.timedelta(minutes=5)
_EXTENDED_KEY_USAGES = [ExtendedKeyUsageOID.SERVER_AUTH,
                        ExtendedKeyUsageOID.CLIENT_AUTH]


def _KeyUsage(ca: bool) -> x509.KeyUsage:
    """Signing and key exchange; a CA also signs certificates and CRLs."""
    return x509.KeyUsage(digital_signature=True, content_commitment=False,
                         key_encipherment=True, data_encipherment=False,
                         key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                         encipher_only=False, decipher_only=False)


def _Pem(key: rsa.RSAPrivateKey, cert: x509.Certificate) -> tuple[str, str]:
    """``(key_pem, cert_pem)`` as the certificate files hold them."""
    key_pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    return key_pem.decode("ascii"), cert_pem.decode("ascii")


def GenerateSelfSignedX509Cert(common_name: str,
                               validity_days: int) -> tuple[str, str]:
    """Create an RSA key and a self-signed certificate for it.

    The certificate is marked as a CA and allowed for both TLS server and
    client authentication, so one file can serve all roles of the cluster
    certificate. Returns ``(key_pem, cert_pem)``.
    """
    if validity_days <= 0:
        raise errors.ProgrammerError("Certificate validity must be positive,"
                                     " not %r" % validity_days)
    key = rsa.generate_private_key(public_exponent=65537, key_size=_KEY_BITS)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    public_key = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=validity_days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None),
                       critical=True)
        .add_extension(_KeyUsage(ca=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage(_EXTENDED_KEY_USAGES),
                       critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key),
                       critical=False)
        .sign(key, getattr(hashes, constants.X509_CERT_SIGN_DIGEST)())
    )
    return _Pem(key, cert)


def GenerateSignedX509Cert(ca_pem: str, common_name: str,
                           validity_days: int) -> tuple[str, str]:
    """Create a key and a leaf certificate signed by a CA's key.

    ``ca_pem`` holds the CA's key and certificate (the cluster
    certificate file). QEMU's TLS credentials refuse a CA certificate in
    the server or client role, so its peers get such a leaf (not a CA,
    server and client authentication). Returns ``(key_pem, cert_pem)``.
    """
    if validity_days <= 0:
        raise errors.ProgrammerError("Certificate validity must be positive,"
                                     " not %r" % validity_days)
    ca_cert = LoadCertificate(ca_pem)
    try:
        ca_key = serialization.load_pem_private_key(ca_pem.encode("ascii"),
                                                    password=None)
    except ValueError as err:
        raise errors.X509CertError(None, "Unable to load the CA's key: %s" %
                                   err) from err
    if not isinstance(ca_key, rsa.RSAPrivateKey):
        raise errors.X509CertError(None, "The CA's key is not an RSA key")
    key = rsa.generate_private_key(public_exponent=65537, key_size=_KEY_BITS)
    now = datetime.datetime.now(datetime.timezone.utc)
    not_after = min(now + datetime.timedelta(days=validity_days),
                    ca_cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                    common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                       critical=True)
        .add_extension(_KeyUsage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(_EXTENDED_KEY_USAGES),
                       critical=False)
        .sign(ca_key, getattr(hashes, constants.X509_CERT_SIGN_DIGEST)())
    )
    return _Pem(key, cert)


def GenerateSelfSignedSslCert(
        file_name: str, common_name: str = "ganeti.example.com",
        validity_days: int = constants.X509_CERT_DEFAULT_VALIDITY) -> None:
    """Write a new key and certificate into one PEM file (mode 0600).

    The file is replaced atomically so a daemon reading it concurrently sees
    either the old or the new pair, never a key without its certificate.
    """
    key_pem, cert_pem = GenerateSelfSignedX509Cert(common_name, validity_days)
    io.WriteFile(file_name, data=key_pem + cert_pem, mode=0o600)


def LoadCertificate(cert_pem: str | bytes) -> x509.Certificate:
    """Parse the first certificate of PEM data, which may include a key."""
    if isinstance(cert_pem, str):
        cert_pem = cert_pem.encode("ascii")
    # The PEM may also hold the private key (key+cert files); only the
    # certificate block is parsed.
    start = cert_pem.find(b"-----BEGIN CERTIFICATE-----")
    if start < 0:
        raise errors.X509CertError(None, "No certificate found in PEM data")
    try:
        return x509.load_pem_x509_certificate(cert_pem[start:])
    except ValueError as err:
        raise errors.X509CertError(None, "Unable to load certificate: %s" %
                                   err) from err


def GetCertificateDigest(cert_pem: str | bytes | x509.Certificate) -> str:
    """SHA-256 of the certificate's DER form, as lowercase hex.

    This is what nodes compare to decide whether a peer presents the
    cluster certificate, independent of how the PEM text is formatted.
    Accepts PEM data or an already loaded certificate.
    """
    if not isinstance(cert_pem, x509.Certificate):
        cert_pem = LoadCertificate(cert_pem)
    return cert_pem.fingerprint(hashes.SHA256()).hex()


def GetPublicKeyPin(cert_pem: str | bytes | x509.Certificate) -> str:
    """SHA-256 of the certificate's public key (SPKI), base64-encoded.

    This is the form of libcurl's pinned public keys (``sha256//<pin>``);
    it identifies a key independently of the certificate around it.
    """
    if not isinstance(cert_pem, x509.Certificate):
        cert_pem = LoadCertificate(cert_pem)
    spki = cert_pem.public_key().public_bytes(
        serialization.Encoding.DER,
        serialization.PublicFormat.SubjectPublicKeyInfo)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(spki)
    return base64.b64encode(digest.finalize()).decode("ascii")


def GetCertificateExpiry(cert_pem: str | bytes) -> float:
    """Expiry time of the certificate, as seconds since the epoch."""
    return LoadCertificate(cert_pem).not_valid_after_utc.timestamp()
