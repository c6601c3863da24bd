#!/usr/bin/env python3
"""Verifies an insightd answer's Insight-Receipt with Python's `cryptography` and `hashlib`, an
implementation independent of insightd's: the receipt is an RFC 8941 dictionary
`head="<JWS>", index=<n>, path=(:<base64>: ...)`; the head a JWS compact serialization (RFC
7515, alg EdDSA, RFC 8037) of {instance, tenant, environment, sequence, size, root, previous,
time} (without tenant and environment: a head made before heads were kept per tenant) under a
key of the JWKS; the body's leaf hash SHA-256(0x00 || body) leads through the audit path to the root as
RFC 9162 section 2.1.3.2 says. The steps are docs/api.md's, "Verifying a receipt".

Usage: verify_receipt.py JWKS_FILE BODY_FILE RECEIPT [--tenant T] [--environment E]
                         [--previous HEAD_JWS]
--tenant, --environment: the body must name them (the answer of another tenant or
environment does not pass); a head that names a tenant and environment must name the body's.
--previous: a head of the same chain (instance, tenant, environment) seen before; the receipt's
head must be its successor (sequence + 1, previous = SHA-256 of its serialization).
Exit 0 and prints "instance sequence kid" when the receipt verifies; exit 1 with the reason.
"""
import argparse
import base64
import hashlib
import json
import re
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def b64url_decode(text):
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def parse_receipt(text):
    """The three members of the Insight-Receipt dictionary (RFC 8941 section 3.2), parsed
    strictly: a string, an integer and an inner list of byte sequences, in any order."""
    members = {}
    rest = text.strip(" ")
    token = r"[a-z*][a-z0-9_.*-]*"
    while rest:
        m = re.match(r"(%s)=" % token, rest)
        if not m:
            raise ValueError("a member without a key: %r" % rest[:20])
        key, rest = m.group(1), rest[m.end():]
        if rest.startswith('"'):
            m = re.match(r'"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"', rest)
            if not m:
                raise ValueError("a malformed string")
            value = re.sub(r'\\(["\\])', r"\1", m.group(1))
        elif rest.startswith("("):
            m = re.match(r"\(((?::[A-Za-z0-9+/=]*:)(?: +:[A-Za-z0-9+/=]*:)*)?\)", rest)
            if not m:
                raise ValueError("a malformed inner list of byte sequences")
            value = [base64.b64decode(item.strip(":"), validate=True) for item in (m.group(1) or "").split()]
        else:
            m = re.match(r"-?[0-9]{1,15}", rest)
            if not m:
                raise ValueError("a value that is not a string, an integer or an inner list")
            value = int(m.group(0))
        members[key] = value
        rest = rest[m.end():]
        m = re.match(r"[ \t]*,[ \t]*", rest)
        if m:
            rest = rest[m.end():]
            if not rest:
                raise ValueError("a trailing comma")
        elif rest.strip(" \t"):
            raise ValueError("text after a member: %r" % rest[:20])
        else:
            rest = ""
    head, index, path = members.get("head"), members.get("index"), members.get("path")
    if not isinstance(head, str) or not isinstance(index, int) or not isinstance(path, list):
        raise ValueError("the receipt lacks head (a string), index (an integer) or path (an inner list)")
    return head, index, path


def verify_head(jws, jwks):
    """The head's payload when its JWS verifies under a key of the JWKS."""
    parts = jws.split(".")
    if len(parts) != 3:
        raise ValueError("the head is not a compact JWS")
    header = json.loads(b64url_decode(parts[0]))
    if header.get("alg") != "EdDSA" or set(header) != {"alg", "kid"}:
        raise ValueError("unexpected JWS header %r" % header)
    keys = {k["kid"]: k for k in jwks["keys"]}
    key = keys.get(header["kid"])
    if key is None:
        raise ValueError("kid %s is not in the JWKS" % header["kid"])
    if (key["kty"], key["crv"], key["use"], key["alg"]) != ("OKP", "Ed25519", "sig", "EdDSA"):
        raise ValueError("unexpected JWK %r" % key)
    # RFC 7638: the kid is the key's thumbprint.
    members = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": key["x"]}, separators=(",", ":"), sort_keys=True)
    if b64url_encode(hashlib.sha256(members.encode()).digest()) != key["kid"]:
        raise ValueError("kid is not the RFC 7638 thumbprint of x")
    public_key = Ed25519PublicKey.from_public_bytes(b64url_decode(key["x"]))
    try:
        public_key.verify(b64url_decode(parts[2]), (parts[0] + "." + parts[1]).encode())
    except InvalidSignature:
        raise ValueError("the head's signature does not verify")
    payload = json.loads(b64url_decode(parts[1]))
    members = {"instance", "sequence", "size", "root", "previous", "time"}
    if set(payload) not in (members, members | {"tenant", "environment"}):
        raise ValueError("unexpected head members %r" % sorted(payload))
    return payload, header["kid"]


def chain(head):
    """The chain a head extends: its instance, tenant and environment (None for a head of no tenant)."""
    return head["instance"], head.get("tenant"), head.get("environment")


def root_from_path(leaf, index, size, path):
    """RFC 9162 section 2.1.3.2: the root the audit path gives, or None."""
    if not 0 <= index < size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0 or len(p) != 32:
            return None
        if fn & 1 or fn == sn:
            r = hashlib.sha256(b"\x01" + p + r).digest()
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = hashlib.sha256(b"\x01" + r + p).digest()
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def verify(jwks, body, receipt, tenant=None, environment=None, previous=None):
    jws, index, path = parse_receipt(receipt)
    head, kid = verify_head(jws, jwks)
    leaf = hashlib.sha256(b"\x00" + body).digest()
    if root_from_path(leaf, index, head["size"], path) != b64url_decode(head["root"]):
        raise ValueError("the body and the path do not lead to the signed root")
    answer = json.loads(body)
    if "tenant" in head and (head["tenant"], head["environment"]) != (answer.get("tenant"), answer.get("environment")):
        raise ValueError("the head is of tenant %r in %r, the answer of %r in %r"
                         % (head["tenant"], head["environment"], answer.get("tenant"), answer.get("environment")))
    if tenant is not None and answer.get("tenant") != tenant:
        raise ValueError("the answer is tenant %r's, not %r's" % (answer.get("tenant"), tenant))
    if environment is not None and answer.get("environment") != environment:
        raise ValueError("the answer is from %r, not %r" % (answer.get("environment"), environment))
    if previous is not None:
        before, _ = verify_head(previous, jwks)
        if chain(before) != chain(head):
            raise ValueError("the head is of chain %r, the previous one of %r" % (chain(head), chain(before)))
        if head["sequence"] != before["sequence"] + 1:
            raise ValueError("the head is not the next after the previous one")
        if head["previous"] != b64url_encode(hashlib.sha256(previous.encode()).digest()):
            raise ValueError("the head's previous is not the hash of the previous head")
        if head["time"] < before["time"]:
            raise ValueError("the head is older than the previous one")
    return head, kid


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("jwks")
    parser.add_argument("body")
    parser.add_argument("receipt")
    parser.add_argument("--tenant")
    parser.add_argument("--environment")
    parser.add_argument("--previous")
    args = parser.parse_args()
    with open(args.jwks, "rb") as f:
        jwks = json.load(f)
    with open(args.body, "rb") as f:
        body = f.read()
    try:
        head, kid = verify(jwks, body, args.receipt, args.tenant, args.environment, args.previous)
    except (ValueError, KeyError, TypeError) as error:
        sys.exit(str(error))
    print(head["instance"], head["sequence"], kid)


if __name__ == "__main__":
    main()
