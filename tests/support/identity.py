"""A test identity provider: an RSA key, the tokens it signs, its JWKS as a file and as a URL served over HTTP."""

from __future__ import annotations

import http.server
import json
import threading
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://idp.test.example"
AUDIENCE = "lmos-registry"


def public_jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    return {
        **json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())),
        "kid": kid,
        "use": "sig",
        "alg": "RS256",
    }


class Identity:
    """An RSA key in a JWKS file, and tokens it signs."""

    def __init__(self, directory: Path) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.jwks = directory / "jwks.json"
        self.jwks.write_text(json.dumps({"keys": [public_jwk(self.key, "test-1")]}))

    def token(
        self, subject: str, *, key: Any = None, audience: str = AUDIENCE, kid: str = "test-1", **claims: Any
    ) -> str:
        payload = {"iss": ISSUER, "aud": audience, "sub": subject, "exp": int(time.time()) + 600, **claims}
        return jwt.encode(payload, key or self.key, algorithm="RS256", headers={"kid": kid})


class ServedJwks:
    """The identity provider's JWKS URL: a local HTTP server whose key set can be rotated, and which answers 503
    while ``failing`` (an outage of the identity provider)."""

    def __init__(self, identity: Identity) -> None:
        self.keys = [json.loads(identity.jwks.read_text())["keys"][0]]
        self.fetches = 0
        self.failing = False
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.fetches += 1
                if served.failing:
                    self.send_error(503, "identity provider down")
                    return
                body = json.dumps({"keys": served.keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def rotate_in(self, key: rsa.RSAPrivateKey, kid: str) -> None:
        self.keys.append(public_jwk(key, kid))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
