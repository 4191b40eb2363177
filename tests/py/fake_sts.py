"""A fake AWS STS on loopback over HTTPS, answering AssumeRoleWithWebIdentity and AssumeRole.

It hands out keys only for the one role it was started with: with AssumeRoleWithWebIdentity,
to a caller holding TOKEN; with AssumeRole, to a request signed (SigV4) with the access key
SOURCE_KEY_ID. Anything else gets STS's AccessDenied. It makes its own self-signed certificate
for 127.0.0.1 and writes it to DIR/cert.pem (clients trust it through SSL_CERT_FILE), writes
every request it reads to DIR/requests.jsonl (its parameters, and the access key it was signed
with as "SignedWith"), and prints "port N" once it listens.

    python fake_sts.py DIR ROLE_ARN TOKEN ACCESS_KEY SECRET_KEY SESSION_TOKEN [SOURCE_KEY_ID]
"""

import datetime
import http.server
import ipaddress
import json
import ssl
import sys
import urllib.parse
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def main() -> None:
    directory = Path(sys.argv[1])
    role_arn, token, access_key, secret_key, session_token = sys.argv[2:7]
    source_key = sys.argv[7] if len(sys.argv) > 7 else None
    log = directory / "requests.jsonl"

    class Sts(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.do_POST()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            query = urllib.parse.urlsplit(self.path).query
            params = dict(urllib.parse.parse_qsl(query + "&" + body))
            authorization = self.headers.get("Authorization") or ""
            signed_with = authorization.partition("Credential=")[2].partition("/")[0]
            params["SignedWith"] = signed_with
            with log.open("a") as f:
                f.write(json.dumps(params) + "\n")
            action = params.get("Action")
            granted = params.get("RoleArn") == role_arn and (
                (action == "AssumeRoleWithWebIdentity" and params.get("WebIdentityToken") == token)
                or (action == "AssumeRole" and source_key is not None and signed_with == source_key)
            )
            if granted:
                status, text = 200, (
                    f'<{action}Response xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
                    f"<{action}Result><Credentials>"
                    f"<AccessKeyId>{access_key}</AccessKeyId>"
                    f"<SecretAccessKey>{secret_key}</SecretAccessKey>"
                    f"<SessionToken>{session_token}</SessionToken>"
                    "<Expiration>2099-01-01T00:00:00Z</Expiration>"
                    f"</Credentials></{action}Result>"
                    f"</{action}Response>"
                )
            else:
                status, text = 403, (
                    "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
                    "<Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message>"
                    "</Error></ErrorResponse>"
                )
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/xml")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    cert_path, key_path = self_signed(directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sts)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
