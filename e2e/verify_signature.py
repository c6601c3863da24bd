#!/usr/bin/env python3
"""Verifies an insightd answer's Insight-Signature with Python's `cryptography` package, an
implementation independent of insightd's OpenSSL calls: a JWS compact serialization with a
detached payload (RFC 7515 appendix F), alg EdDSA (RFC 8037), against a JWKS.

Usage: verify_signature.py JWKS_FILE BODY_FILE SIGNATURE
Exit 0 and prints the kid when the signature verifies; exit 1 with the reason otherwise.
"""
import base64
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def main():
    jwks_file, body_file, signature = sys.argv[1:4]
    with open(jwks_file, "rb") as f:
        jwks = json.load(f)
    with open(body_file, "rb") as f:
        body = f.read()
    parts = signature.split(".")
    if len(parts) != 3 or parts[1] != "":
        sys.exit("not a detached JWS")
    header = json.loads(b64url_decode(parts[0]))
    if header.get("alg") != "EdDSA" or set(header) != {"alg", "kid"}:
        sys.exit("unexpected JWS header %r" % header)
    keys = {k["kid"]: k for k in jwks["keys"]}
    key = keys.get(header["kid"])
    if key is None:
        sys.exit("kid %s is not in the JWKS" % header["kid"])
    if (key["kty"], key["crv"], key["use"], key["alg"]) != ("OKP", "Ed25519", "sig", "EdDSA"):
        sys.exit("unexpected JWK %r" % key)
    # RFC 7638: the kid is the key's thumbprint.
    from cryptography.hazmat.primitives import hashes
    digest = hashes.Hash(hashes.SHA256())
    digest.update(json.dumps({"crv": "Ed25519", "kty": "OKP", "x": key["x"]}, separators=(",", ":"), sort_keys=True).encode())
    if b64url_encode(digest.finalize()).decode() != key["kid"]:
        sys.exit("kid is not the RFC 7638 thumbprint of x")
    public_key = Ed25519PublicKey.from_public_bytes(b64url_decode(key["x"]))
    signing_input = parts[0].encode() + b"." + b64url_encode(body)
    try:
        public_key.verify(b64url_decode(parts[2]), signing_input)
    except InvalidSignature:
        sys.exit("signature does not verify")
    print(header["kid"])


if __name__ == "__main__":
    main()
