"""Verifies an answer's Insight-Receipt (docs/api.md, "Receipts"): the RFC 8941 dictionary
`head="<JWS>", index=<n>, path=(:<base64>: ...)`; the head a compact JWS (EdDSA, RFC 8037) of
{instance, sequence, size, root, previous, time} under a key of GET /v1/signing-keys whose kid is
its RFC 7638 thumbprint; the body's leaf hash SHA-256(0x00 || body) leads through the audit path
to the head's root (RFC 9162, section 2.1.3.2). The same steps as e2e/verify_receipt.py."""
import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass
from typing import List

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .errors import ReceiptInvalidError
from .models import JSONWebKeySet, ReceiptHeadPayload
from .wire import decode


def b64url_decode(text):
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ReceiptInvalidError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass(frozen=True)
class Receipt:
    """An answer's proof, verified: keep `header` (the Insight-Receipt value) and the body's
    exact bytes with the transaction; with the JWKS of that time they prove the answer."""
    header: str
    head_jws: str
    index: int
    path: List[bytes]
    head: ReceiptHeadPayload
    kid: str


def parse_receipt(text):
    """head, index and path of an Insight-Receipt (an RFC 8941 dictionary), parsed strictly."""
    members = {}
    rest = text.strip(" ")
    while rest:
        m = re.match(r"([a-z*][a-z0-9_.*-]*)=", rest)
        if not m:
            raise ReceiptInvalidError("Insight-Receipt: a member without a key")
        key, rest = m.group(1), rest[m.end():]
        if rest.startswith('"'):
            m = re.match(r'"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"', rest)
            if not m:
                raise ReceiptInvalidError("Insight-Receipt: a malformed string")
            value = re.sub(r'\\(["\\])', r"\1", m.group(1))
        elif rest.startswith("("):
            m = re.match(r"\(((?::[A-Za-z0-9+/=]*:)(?: +:[A-Za-z0-9+/=]*:)*)?\)", rest)
            if not m:
                raise ReceiptInvalidError("Insight-Receipt: a malformed inner list")
            try:
                value = [base64.b64decode(item.strip(":"), validate=True) for item in (m.group(1) or "").split()]
            except ValueError:
                raise ReceiptInvalidError("Insight-Receipt: a byte sequence that is not base64")
        else:
            m = re.match(r"-?[0-9]{1,15}", rest)
            if not m:
                raise ReceiptInvalidError("Insight-Receipt: a value that is not a string, an integer or an inner list")
            value = int(m.group(0))
        members[key] = value
        rest = rest[m.end():]
        m = re.match(r"[ \t]*,[ \t]*", rest)
        if m:
            rest = rest[m.end():]
            if not rest:
                raise ReceiptInvalidError("Insight-Receipt: a trailing comma")
        elif rest.strip(" \t"):
            raise ReceiptInvalidError("Insight-Receipt: text after a member")
        else:
            rest = ""
    head, index, path = members.get("head"), members.get("index"), members.get("path")
    if not isinstance(head, str) or not isinstance(index, int) or not isinstance(path, list):
        raise ReceiptInvalidError("Insight-Receipt lacks head (a string), index (an integer) or path (an inner list)")
    return head, index, path


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


def thumbprint(x):
    """The RFC 7638 thumbprint of an Ed25519 key: its kid."""
    members = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":"), sort_keys=True)
    return b64url_encode(hashlib.sha256(members.encode()).digest())


def _usable(jwk):
    """Whether a JWK of a set is an Ed25519 signing key named by its RFC 7638 thumbprint."""
    return (jwk.kty, jwk.crv, jwk.use, jwk.alg) == ("OKP", "Ed25519", "sig", "EdDSA") and thumbprint(jwk.x) == jwk.kid


class KeyPins:
    """The keys an application trusts to sign heads, whatever the base URL's GET /v1/signing-keys
    lists (a proxy can serve its own set and re-sign answers: docs/api.md, "Receipts").

    - `keys`: a JWKS document (its JSON text or bytes, a dict, or a JSONWebKeySet) whose keys
      verify heads without being fetched: the set insightd's operator hands out.
    - `thumbprints`: RFC 7638 thumbprints (the `kid`s) of keys that may be fetched. Pin the key
      published ahead of a rotation too (docs/operations.md, "Signing keys").
    - `allow_unpinned`: also trust a fetched key that is not pinned (while rolling pins out:
      `receipt.kid` tells which key signed). By default a head signed by any other key fails."""

    def __init__(self, keys=None, thumbprints=(), allow_unpinned=False):
        if isinstance(keys, (str, bytes)):
            keys = json.loads(keys)
        if isinstance(keys, dict):
            keys = decode(JSONWebKeySet, keys)
        self.keys = {}
        for jwk in keys.keys if keys is not None else []:
            if not _usable(jwk):
                raise ValueError("pinned key %s is not an Ed25519 signing key named by its RFC 7638 thumbprint" % jwk.kid)
            self.keys[jwk.kid] = Ed25519PublicKey.from_public_bytes(b64url_decode(jwk.x))
        if isinstance(thumbprints, str):
            raise ValueError("thumbprints is a list of thumbprints, not one string")
        self.thumbprints = frozenset(thumbprints) | frozenset(self.keys)
        if not self.thumbprints:
            raise ValueError("pin at least one key or thumbprint")
        self.allow_unpinned = allow_unpinned

    def admits(self, kid):
        """Whether a key of that kid may verify a head."""
        return self.allow_unpinned or kid in self.thumbprints

    def refuse(self, kid):
        raise ReceiptInvalidError("the head's key %s is not pinned (pinned: %s)" % (kid, ", ".join(sorted(self.thumbprints))))


class ReceiptVerifier:
    """Verifies receipts against the JWKS that `fetch_keys(etag)` returns. The key set is cached
    and fetched again, once per answer, when a head names a kid it does not hold (after a
    rotation): `fetch_keys` answers (jwks, etag), or (None, etag) when unchanged (304).
    It remembers the last head of each chain (instance, tenant, environment), so that a head claiming the same place in the
    chain as another, or a successor whose `previous` is not the hash of the head before it,
    fails. With `pins` (KeyPins), pinned keys need no fetch and only pinned keys verify (unless
    the pins allow unpinned ones). Thread-safe."""

    def __init__(self, fetch_keys, pins=None):
        self._fetch_keys = fetch_keys
        self._pins = pins
        self._lock = threading.Lock()
        self._keys = None
        self._etag = None
        self._last_heads = {}

    def _key(self, kid):
        if self._pins is not None:
            if kid in self._pins.keys:
                return self._pins.keys[kid]
            if not self._pins.admits(kid):
                self._pins.refuse(kid)
        with self._lock:
            keys, etag = self._keys, self._etag
        if keys is not None and kid in keys:
            return keys[kid]
        fetched, etag = self._fetch_keys(etag if keys is not None else None)
        if fetched is not None:
            keys = {}
            for jwk in fetched.keys:
                if _usable(jwk) and (self._pins is None or self._pins.admits(jwk.kid)):
                    keys[jwk.kid] = Ed25519PublicKey.from_public_bytes(b64url_decode(jwk.x))
            with self._lock:
                self._keys, self._etag = keys, etag
        if keys is None or kid not in keys:
            raise ReceiptInvalidError("the head's key %s is not in GET /v1/signing-keys" % kid)
        return keys[kid]

    def verify_head(self, jws):
        """The payload of a head JWS, and its kid, when its signature verifies."""
        parts = jws.split(".")
        if len(parts) != 3:
            raise ReceiptInvalidError("the head is not a compact JWS")
        try:
            header = json.loads(b64url_decode(parts[0]))
            payload = json.loads(b64url_decode(parts[1]))
        except ValueError:
            raise ReceiptInvalidError("the head's header or payload is not JSON")
        if not isinstance(header, dict) or header.get("alg") != "EdDSA" or set(header) != {"alg", "kid"}:
            raise ReceiptInvalidError("the head's JWS header is not {alg: EdDSA, kid}")
        key = self._key(header["kid"])
        try:
            key.verify(b64url_decode(parts[2]), (parts[0] + "." + parts[1]).encode())
        except InvalidSignature:
            raise ReceiptInvalidError("the head's signature does not verify")
        members = {"instance", "sequence", "size", "root", "previous", "time"}
        if not isinstance(payload, dict) or set(payload) not in (members, members | {"tenant", "environment"}):
            raise ReceiptInvalidError("the head's payload is not {instance, tenant, environment, sequence, size, root, previous, time}")
        try:
            return decode(ReceiptHeadPayload, payload), header["kid"]
        except ValueError as error:
            raise ReceiptInvalidError("the head's payload: %s" % error)

    def verify(self, body, header_value):
        """The Receipt of `body` (the answer's exact bytes), or ReceiptInvalidError."""
        if header_value is None:
            raise ReceiptInvalidError("the answer has no Insight-Receipt")
        jws, index, path = parse_receipt(header_value)
        head, kid = self.verify_head(jws)
        leaf = hashlib.sha256(b"\x00" + body).digest()
        if root_from_path(leaf, index, head.size, path) != b64url_decode(head.root):
            raise ReceiptInvalidError("the body and the path do not lead to the signed root")
        if head.tenant is not None:
            try:
                answer = json.loads(body)
            except ValueError:
                raise ReceiptInvalidError("the body is not JSON")
            if not isinstance(answer, dict) or (answer.get("tenant"), answer.get("environment")) != (head.tenant, head.environment):
                raise ReceiptInvalidError("the head is %s/%s's, not the answer's" % (head.tenant, head.environment))
        self._check_chain(head, jws)
        return Receipt(header_value, jws, index, path, head, kid)

    def _check_chain(self, head, jws):
        chain = (head.instance, head.tenant, head.environment)
        with self._lock:
            last = self._last_heads.get(chain)
            if last is not None:
                sequence, last_jws, last_time = last
                if head.sequence == sequence and jws != last_jws:
                    raise ReceiptInvalidError("two heads claim sequence %d of instance %s" % (sequence, head.instance))
                if head.sequence == sequence + 1:
                    if head.previous != b64url_encode(hashlib.sha256(last_jws.encode()).digest()):
                        raise ReceiptInvalidError("the head's previous is not the hash of the head before it")
                    if head.time < last_time:
                        raise ReceiptInvalidError("the head is older than the head before it")
            if last is None or head.sequence > last[0]:
                self._last_heads[chain] = (head.sequence, jws, head.time)
