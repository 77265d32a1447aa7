"""A self-signed certificate for the served org (simple-salesforce always speaks https)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from pathlib import Path


def self_signed_certificate(directory: Path, host: str) -> tuple[Path, Path]:
    """Create (or reuse) ``cert.pem`` and ``key.pem`` in ``directory`` for ``host``, localhost and 127.0.0.1.

    The certificate is its own authority, so that clients trust it with ``REQUESTS_CA_BUNDLE=cert.pem``
    (or ``session.verify``). It is made anew when missing, expiring within a day, or not naming ``host``.

    Raises:
        ImportError: ``cryptography`` is not installed (the ``serve`` extra).
        OSError: ``directory`` cannot be written.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    addresses = {"127.0.0.1", "::1"}
    try:
        addresses.add(str(ipaddress.ip_address(host)))
    except ValueError:
        if host != "localhost":
            names.append(x509.DNSName(host))
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in sorted(addresses)]
    now = dt.datetime.now(dt.UTC)
    if cert_path.is_file() and key_path.is_file():
        try:
            old = x509.load_pem_x509_certificate(cert_path.read_bytes())
            san = old.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            if old.not_valid_after_utc > now + dt.timedelta(days=1) and set(names) <= set(san):
                return cert_path, key_path
        except (ValueError, x509.ExtensionNotFound):
            pass
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "crmarena-gym serve-org")])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key_bytes)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path
