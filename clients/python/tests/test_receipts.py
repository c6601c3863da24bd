"""The receipt verifier on trees built here, signed with a key made here: each way an answer can
be forged fails with ReceiptInvalidError."""
import base64
import dataclasses
import hashlib
import json
import os
import unittest

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from insightd_client import Client, JSONWebKeySet, KeyPins, ReceiptInvalidError, SigningKey
from insightd_client.receipts import ReceiptVerifier, b64url_decode, b64url_encode, thumbprint


def leaf(body):
    return hashlib.sha256(b"\x00" + body).digest()


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def tree(leaves):
    """RFC 9162's MTH and each leaf's audit path, by its definition."""
    if len(leaves) == 1:
        return leaves[0], [[]]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    left, left_paths = tree(leaves[:k])
    right, right_paths = tree(leaves[k:])
    return node(left, right), [p + [right] for p in left_paths] + [p + [left] for p in right_paths]


class Signer:
    def __init__(self):
        self.key = Ed25519PrivateKey.generate()
        x = b64url_encode(self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
        self.jwk = SigningKey("OKP", "Ed25519", x, thumbprint(x), "sig", "EdDSA")

    def head(self, payload):
        header = b64url_encode(json.dumps({"alg": "EdDSA", "kid": self.jwk.kid}).encode())
        body = b64url_encode(json.dumps(payload).encode())
        return header + "." + body + "." + b64url_encode(self.key.sign((header + "." + body).encode()))


def receipt(jws, index, path):
    return 'head="%s", index=%d, path=(%s)' % (jws, index, " ".join(":%s:" % base64.b64encode(p).decode() for p in path))


class ReceiptTests(unittest.TestCase):
    def setUp(self):
        self.signer = Signer()
        self.fetches = 0
        self.bodies = [b'{"n":%d}' % i for i in range(5)]
        root, self.paths = tree([leaf(b) for b in self.bodies])
        self.payload = {"instance": "a", "sequence": 0, "size": 5, "root": b64url_encode(root), "previous": None, "time": 1}
        self.jws = self.signer.head(self.payload)
        self.verifier = ReceiptVerifier(self.fetch)

    def fetch(self, etag):
        self.fetches += 1
        return JSONWebKeySet([self.signer.jwk]), "etag"

    def test_every_leaf_verifies(self):
        for i, body in enumerate(self.bodies):
            verified = self.verifier.verify(body, receipt(self.jws, i, self.paths[i]))
            self.assertEqual((verified.head.size, verified.kid), (5, self.signer.jwk.kid))
        self.assertEqual(self.fetches, 1, "the key set is cached")

    def test_a_head_names_the_answers_tenant_and_environment_and_chains_by_them(self):
        bodies = [b'{"tenant":"acme","environment":"production","n":%d}' % i for i in range(2)]
        root, paths = tree([leaf(b) for b in bodies])
        own = dict(self.payload, size=2, root=b64url_encode(root), tenant="acme", environment="production")
        self.assertEqual(self.verifier.verify(bodies[0], receipt(self.signer.head(own), 0, paths[0])).head.tenant, "acme")
        for why, payload in [("another tenant", dict(own, tenant="globex")), ("another environment", dict(own, environment="sandbox")),
                             ("a tenant without an environment", {k: v for k, v in own.items() if k != "environment"})]:
            with self.assertRaises(ReceiptInvalidError, msg=why):
                self.verifier.verify(bodies[0], receipt(self.signer.head(payload), 0, paths[0]))
        # Sequence 0 of another chain of the same instance is no fork of acme's.
        self.verifier.verify(bodies[1], receipt(self.signer.head(dict(own, tenant="acme", environment="production")), 1, paths[1]))
        fork = dict(own, time=2)
        with self.assertRaises(ReceiptInvalidError, msg="a second head 0 of acme's chain"):
            self.verifier.verify(bodies[0], receipt(self.signer.head(fork), 0, paths[0]))

    def test_forgeries_fail(self):
        forged = {
            "a changed body": (b'{"n":9}', receipt(self.jws, 2, self.paths[2])),
            "another leaf's path": (self.bodies[2], receipt(self.jws, 2, self.paths[3])),
            "another index": (self.bodies[2], receipt(self.jws, 3, self.paths[2])),
            "an index past the tree": (self.bodies[2], receipt(self.jws, 7, self.paths[2])),
            "a head signed by another key": (self.bodies[2], receipt(Signer().head(self.payload), 2, self.paths[2])),
            "a changed head": (self.bodies[2], receipt(self.jws.replace(".", ".e", 1), 2, self.paths[2])),
            "no receipt": (self.bodies[2], None),
            "a malformed receipt": (self.bodies[2], 'head="x", index=2'),
        }
        for what, (body, header) in forged.items():
            with self.subTest(what):
                with self.assertRaises(ReceiptInvalidError):
                    self.verifier.verify(body, header)

    def test_unknown_kid_fetches_again_once(self):
        other = Signer()
        with self.assertRaises(ReceiptInvalidError):
            self.verifier.verify(self.bodies[0], receipt(other.head(self.payload), 0, self.paths[0]))
        self.assertEqual(self.fetches, 1)
        self.signer = other
        self.verifier.verify(self.bodies[0], receipt(other.head(self.payload), 0, self.paths[0]))
        self.assertEqual(self.fetches, 2)

    def test_the_chain(self):
        self.verifier.verify(self.bodies[0], receipt(self.jws, 0, self.paths[0]))
        fork = self.signer.head(dict(self.payload, time=2))
        with self.assertRaises(ReceiptInvalidError):
            self.verifier.verify(self.bodies[0], receipt(fork, 0, self.paths[0]))
        forged_previous = self.signer.head(dict(self.payload, sequence=1, previous=b64url_encode(b"\x00" * 32)))
        with self.assertRaises(ReceiptInvalidError):
            self.verifier.verify(self.bodies[0], receipt(forged_previous, 0, self.paths[0]))
        previous = b64url_encode(hashlib.sha256(self.jws.encode()).digest())
        older = self.signer.head(dict(self.payload, sequence=1, previous=previous, time=0))
        with self.assertRaises(ReceiptInvalidError):
            self.verifier.verify(self.bodies[0], receipt(older, 0, self.paths[0]))
        successor = self.signer.head(dict(self.payload, sequence=1, previous=previous))
        self.assertEqual(self.verifier.verify(self.bodies[0], receipt(successor, 0, self.paths[0])).head.sequence, 1)


class PinningTests(unittest.TestCase):
    """Pinned keys and thumbprints: a head signed by a key the application did not pin fails,
    even when the key set the base URL serves lists it (a proxy serving its own key set)."""

    def setUp(self):
        self.insightd, self.proxy, self.next = Signer(), Signer(), Signer()
        self.served = [self.proxy.jwk]
        self.fetches = 0
        # A real answer and its head's payload (every member the daemon writes), made a tree of
        # that one answer as the re-keying proxy (clients/conformance/tamper_proxy.py) makes it.
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "receipts.json")) as f:
            answer = json.load(f)["answers"][0]
        self.body = answer["body"].encode()
        real = json.loads(b64url_decode(answer["receipt"].split('"')[1].split(".")[1]))
        self.payload = dict(real, instance="a", sequence=0, size=1, root=b64url_encode(leaf(self.body)), previous=None)

    def fetch(self, etag):
        self.fetches += 1
        return JSONWebKeySet(list(self.served)), "etag-%d" % self.fetches

    def verify(self, signer, pins):
        return ReceiptVerifier(self.fetch, pins).verify(self.body, receipt(signer.head(self.payload), 0, []))

    def test_without_pins_the_served_key_set_is_trusted(self):
        self.assertEqual(self.verify(self.proxy, None).kid, self.proxy.jwk.kid)

    def test_a_key_not_pinned_fails_even_when_served(self):
        for pins in (KeyPins(thumbprints=[self.insightd.jwk.kid]),
                     KeyPins(keys=json.dumps({"keys": [dataclasses.asdict(self.insightd.jwk)]}))):
            with self.subTest(pins=pins.thumbprints):
                with self.assertRaisesRegex(ReceiptInvalidError, "the head's key %s is not pinned" % self.proxy.jwk.kid):
                    self.verify(self.proxy, pins)
        self.assertEqual(self.fetches, 0, "an unpinned kid is refused without a fetch")

    def test_a_served_key_posing_as_a_pinned_one_fails(self):
        # The proxy serves its own x under insightd's kid: not that kid's thumbprint, dropped.
        self.served = [SigningKey("OKP", "Ed25519", self.proxy.jwk.x, self.insightd.jwk.kid, "sig", "EdDSA")]
        self.proxy.jwk = self.served[0]
        with self.assertRaisesRegex(ReceiptInvalidError, "not in GET /v1/signing-keys"):
            self.verify(self.proxy, KeyPins(thumbprints=[self.insightd.jwk.kid]))

    def test_pinned_keys_need_no_fetch_and_pinned_thumbprints_are_fetched(self):
        pinned = KeyPins(keys=JSONWebKeySet([self.insightd.jwk]))
        self.assertEqual(self.verify(self.insightd, pinned).kid, self.insightd.jwk.kid)
        self.assertEqual(self.fetches, 0)
        self.served = [self.insightd.jwk]
        self.assertEqual(self.verify(self.insightd, KeyPins(thumbprints=[self.insightd.jwk.kid])).kid, self.insightd.jwk.kid)
        self.assertEqual(self.fetches, 1)

    def test_a_rotation_to_a_pinned_next_key(self):
        pins = KeyPins(thumbprints=[self.insightd.jwk.kid, self.next.jwk.kid])
        verifier = ReceiptVerifier(self.fetch, pins)
        self.served = [self.insightd.jwk, self.next.jwk, self.proxy.jwk]
        self.assertEqual(verifier.verify(self.body, receipt(self.insightd.head(self.payload), 0, [])).kid, self.insightd.jwk.kid)
        # Each head of another instance, so that only the key differs.
        self.assertEqual(verifier.verify(self.body, receipt(self.next.head(dict(self.payload, instance="b")), 0, [])).kid,
                         self.next.jwk.kid)
        with self.assertRaisesRegex(ReceiptInvalidError, "not pinned"):
            verifier.verify(self.body, receipt(self.proxy.head(dict(self.payload, instance="c")), 0, []))

    def test_allow_unpinned_accepts_a_served_key(self):
        self.assertEqual(self.verify(self.proxy, KeyPins(thumbprints=[self.insightd.jwk.kid], allow_unpinned=True)).kid,
                         self.proxy.jwk.kid)

    def test_bad_pins_are_refused_at_once(self):
        wrong_kid = dataclasses.replace(self.insightd.jwk, kid=self.proxy.jwk.kid)
        for what, make in {"no pin": lambda: KeyPins(thumbprints=[]), "one string": lambda: KeyPins(thumbprints="abc"),
                           "a kid not its thumbprint": lambda: KeyPins(keys=JSONWebKeySet([wrong_kid]))}.items():
            with self.subTest(what):
                with self.assertRaises(ValueError):
                    make()

    def test_the_client_takes_pins(self):
        client = Client("http://127.0.0.1:9", "k", pinned_thumbprints=[self.insightd.jwk.kid])
        with self.assertRaisesRegex(ReceiptInvalidError, "not pinned"):
            client._verifier.verify(self.body, receipt(self.proxy.head(self.payload), 0, []))


class WorkedExampleTests(unittest.TestCase):
    """docs/api.md's worked example: three answers, the head signed by RFC 8032's first test key."""

    JWK = SigningKey("OKP", "Ed25519", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
                     "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k", "sig", "EdDSA")
    HEAD = ("eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcktfcW14VldhWVZBOXd3QkY2SXVvM3ZWeno3VHhIQ1R3WEJ5Z3JTNGsifQ.eyJpbnN0YW5jZSI6IndlYi0xLTRmMmE5YzAxIiwic2VxdWVuY2UiOjQxLCJzaXplIjozLCJyb290IjoiQzBnZ2J4Z1lmdEt3dWd6TWFzNHE3WFlFbEotSUlTU3FqNkxBNXMyRWtEQSIsInByZXZpb3VzIjoieGdOd2ZyVkFDUUlKU0VKMUZoUTJlMl9yY0hmaE9BbmpKT3ZlQkFzaVJGUSIsInRpbWUiOjE3OTY1MjI2NjQxMDd9.MOU2PIvMci1x5_Yzf5DTmAqfLrpf788-BfQYDDuqMNVEim3hyRXSESsX2vOkjRKe6_TMqPk0QJiCtLjrK7ZrAQ")
    BODIES = [b'{"eventId":"e0","tenant":"acme","environment":"production"}',
              b'{"eventId":"e1","tenant":"acme","environment":"sandbox"}',
              b'{"eventId":"e2","tenant":"globex","environment":"production"}']
    PATHS = ["(:Euu5lAAHET5Atm1jyvmGifWaaHH8KNyW6jnBaHnS6Oc=: :pTY1mPp1bItRlBF4rvRajDpsBcOeXQiswBbpwUyUhEA=:)",
             "(:O9poCmCk5ytQPU4R69+eZiNCZT9qSVezfHD1iHJDdfA=: :pTY1mPp1bItRlBF4rvRajDpsBcOeXQiswBbpwUyUhEA=:)",
             "(:WKaG4afrKIlvzCaW/UV0mM+GlPRiFF5aNIz+0H5yqBA=:)"]

    def test_each_leaf_of_the_documented_tree_verifies(self):
        verifier = ReceiptVerifier(lambda etag: (JSONWebKeySet([self.JWK]), None))
        for index, (body, path) in enumerate(zip(self.BODIES, self.PATHS)):
            receipt = verifier.verify(body, 'head="%s", index=%d, path=%s' % (self.HEAD, index, path))
            self.assertEqual((receipt.head.instance, receipt.head.sequence, receipt.kid),
                             ("web-1-4f2a9c01", 41, self.JWK.kid))
        with self.assertRaises(ReceiptInvalidError):
            verifier.verify(self.BODIES[1], 'head="%s", index=0, path=%s' % (self.HEAD, self.PATHS[0]))



class DocumentedExamplePerTenant(unittest.TestCase):
    """docs/api.md's worked example: three answers of tenant acme in production, whose head names them."""

    JWK = WorkedExampleTests.JWK
    HEAD = ("eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcktfcW14VldhWVZBOXd3QkY2SXVvM3ZWeno3VHhIQ1R3WEJ5Z3JTNGsifQ.eyJpbnN0YW5jZSI6IndlYi0xLTRmMmE5YzAxIiwidGVuYW50IjoiYWNtZSIsImVudmlyb25tZW50IjoicHJvZHVjdGlvbiIsInNlcXVlbmNlIjo0MSwic2l6ZSI6Mywicm9vdCI6IkJnNHlVc0dBMnJuSlZSZDFYc3hSWUlYcFEyaVZaUUNtYWNvek1oR1E4ZmciLCJwcmV2aW91cyI6InhnTndmclZBQ1FJSlNFSjFGaFEyZTJfcmNIZmhPQW5qSk92ZUJBc2lSRlEiLCJ0aW1lIjoxNzk2NTIyNjY0MTA3fQ.KdOFJdic-IhJDjarlaNxyFTAnwj6F0zzY8CkaTQCpQenbmdqfAfAORt7z-gaUWyGuOdDX6iFpbqE-TkNfJk8BA")
    BODIES = [b'{"eventId":"e%d","tenant":"acme","environment":"production"}' % k for k in range(3)]
    PATHS = ["(:plzHCViWaOdFSLKqrngt79Gv9E5p+tujoU0mPtJT6CE=: :Ixt/S01+g7BrmmewKLKpgpTGjA+v889KACHN/ROfNWc=:)",
             "(:O9poCmCk5ytQPU4R69+eZiNCZT9qSVezfHD1iHJDdfA=: :Ixt/S01+g7BrmmewKLKpgpTGjA+v889KACHN/ROfNWc=:)",
             "(:jGH9Soqq6cb7j2GEQ3H+lt2tO0+5JTRHVVAqHakFzY4=:)"]

    def test_each_leaf_verifies_and_the_head_names_its_tenant(self):
        verifier = ReceiptVerifier(lambda etag: (JSONWebKeySet([self.JWK]), None))
        for index, (body, path) in enumerate(zip(self.BODIES, self.PATHS)):
            receipt = verifier.verify(body, 'head="%s", index=%d, path=%s' % (self.HEAD, index, path))
            self.assertEqual((receipt.head.instance, receipt.head.tenant, receipt.head.environment, receipt.head.sequence),
                             ("web-1-4f2a9c01", "acme", "production", 41))
        # A head of no tenant of the same instance and sequence is another chain's: no fork.
        verifier.verify(WorkedExampleTests.BODIES[0],
                        'head="%s", index=0, path=%s' % (WorkedExampleTests.HEAD, WorkedExampleTests.PATHS[0]))


if __name__ == "__main__":
    unittest.main()
