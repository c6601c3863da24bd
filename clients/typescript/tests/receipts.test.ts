// The receipt verifier on trees built here, signed with a key made here: each way an answer can
// be forged fails with ReceiptInvalidError. Run by `node --test` after tsc (conformance.sh test).
import { test } from "node:test";
import assert from "node:assert/strict";
import { BatchTooLargeError, InsightClient, KeyPins, PROBLEM_ERRORS, ProblemCode, ProblemError, ReceiptInvalidError, ReceiptVerifier, TransportError } from "../src/index.js";
import { readFileSync } from "node:fs";
import { base64Encode, base64UrlDecode, base64UrlEncode, sha256, thumbprint } from "../src/receipts.js";
import { problemError } from "../src/client.js";

const encoder = new TextEncoder();
const leaf = (body: Uint8Array) => sha256(Uint8Array.of(0), body);
const node = (left: Uint8Array, right: Uint8Array) => sha256(Uint8Array.of(1), left, right);

/** RFC 9162's MTH and each leaf's audit path, by its definition. */
async function tree(leaves: Uint8Array[]): Promise<[Uint8Array, Uint8Array[][]]> {
  if (leaves.length === 1) return [leaves[0], [[]]];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  const [left, leftPaths] = await tree(leaves.slice(0, k));
  const [right, rightPaths] = await tree(leaves.slice(k));
  return [await node(left, right), [...leftPaths.map((p) => [...p, right]), ...rightPaths.map((p) => [...p, left])]];
}

async function signer() {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const x = base64UrlEncode(new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey)));
  const jwk = { kty: "OKP", crv: "Ed25519", x, kid: await thumbprint(x), use: "sig", alg: "EdDSA" };
  const head = async (payload: object) => {
    const input = base64UrlEncode(encoder.encode(JSON.stringify({ alg: "EdDSA", kid: jwk.kid }))) + "." + base64UrlEncode(encoder.encode(JSON.stringify(payload)));
    return input + "." + base64UrlEncode(new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, pair.privateKey, encoder.encode(input))));
  };
  return { jwk, head };
}

const receipt = (jws: string, index: number, path: Uint8Array[]) => `head="${jws}", index=${index}, path=(${path.map((p) => `:${base64Encode(p)}:`).join(" ")})`;

async function fixture() {
  const key = await signer();
  const bodies = [0, 1, 2, 3, 4].map((n) => encoder.encode(`{"n":${n}}`));
  const [root, paths] = await tree(await Promise.all(bodies.map(leaf)));
  const payload = { instance: "a", sequence: 0, size: 5, root: base64UrlEncode(root), previous: null as string | null, time: 1 };
  let fetches = 0;
  let keys = [key.jwk];
  const verifier = new ReceiptVerifier(async () => {
    fetches++;
    return { keys: { keys }, etag: "e" };
  });
  return { key, bodies, paths, payload, jws: await key.head(payload), verifier, fetches: () => fetches, setKeys: (k: typeof keys) => (keys = k) };
}

test("every leaf verifies, with one fetch of the key set", async () => {
  const f = await fixture();
  for (let i = 0; i < 5; i++) {
    const verified = await f.verifier.verify(f.bodies[i], receipt(f.jws, i, f.paths[i]));
    assert.equal(verified.head.size, 5);
    assert.equal(verified.kid, f.key.jwk.kid);
  }
  assert.equal(f.fetches(), 1);
});

test("forgeries fail", async () => {
  const f = await fixture();
  const other = await signer();
  const forged: [string, Uint8Array, string | null][] = [
    ["a changed body", encoder.encode('{"n":9}'), receipt(f.jws, 2, f.paths[2])],
    ["another leaf's path", f.bodies[2], receipt(f.jws, 2, f.paths[3])],
    ["another index", f.bodies[2], receipt(f.jws, 3, f.paths[2])],
    ["an index past the tree", f.bodies[2], receipt(f.jws, 7, f.paths[2])],
    ["a head signed by another key", f.bodies[2], receipt(await other.head(f.payload), 2, f.paths[2])],
    ["a changed head", f.bodies[2], receipt(f.jws.replace(".", ".e"), 2, f.paths[2])],
    ["no receipt", f.bodies[2], null],
    ["a malformed receipt", f.bodies[2], 'head="x", index=2'],
  ];
  for (const [what, body, header] of forged) {
    await assert.rejects(f.verifier.verify(body, header), ReceiptInvalidError, what);
  }
});

test("an unknown kid fetches the key set again, once", async () => {
  const f = await fixture();
  await f.verifier.verify(f.bodies[0], receipt(f.jws, 0, f.paths[0]));
  const other = await signer();
  const rotated = receipt(await other.head(f.payload), 0, f.paths[0]);
  await assert.rejects(f.verifier.verify(f.bodies[0], rotated), ReceiptInvalidError);
  assert.equal(f.fetches(), 2);
  f.setKeys([f.key.jwk, other.jwk]);
  await assert.rejects(f.verifier.verify(f.bodies[0], rotated), ReceiptInvalidError, "the same sequence, another head: a fork");
  assert.equal(f.fetches(), 3);
});

test("the chain: a forged previous fails, the true successor passes", async () => {
  const f = await fixture();
  await f.verifier.verify(f.bodies[0], receipt(f.jws, 0, f.paths[0]));
  const forged = await f.key.head({ ...f.payload, sequence: 1, previous: base64UrlEncode(new Uint8Array(32)) });
  await assert.rejects(f.verifier.verify(f.bodies[0], receipt(forged, 0, f.paths[0])), ReceiptInvalidError);
  const previous = base64UrlEncode(await sha256(encoder.encode(f.jws)));
  const older = await f.key.head({ ...f.payload, sequence: 1, previous, time: 0 });
  await assert.rejects(f.verifier.verify(f.bodies[0], receipt(older, 0, f.paths[0])), ReceiptInvalidError, "older than the head before it");
  const successor = await f.key.head({ ...f.payload, sequence: 1, previous });
  assert.equal((await f.verifier.verify(f.bodies[0], receipt(successor, 0, f.paths[0]))).head.sequence, 1);
});

test("every problem code has its error class, with retryAfter", () => {
  for (const code of Object.values(ProblemCode)) {
    const body = encoder.encode(JSON.stringify({ type: `urn:insightd:problem:${code}`, title: "t", status: 429, code, detail: "d" }));
    const error = problemError(429, new Headers({ "Retry-After": "3" }), body, 1) as ProblemError;
    assert.equal(error.constructor, PROBLEM_ERRORS[code]);
    assert.equal(error.code, code);
    assert.equal(error.retryAfter, 3);
  }
  const unknown = problemError(400, new Headers(), encoder.encode('{"type":"x","title":"t","status":400,"code":"somethingNew","detail":"d"}'), 1);
  assert.equal(unknown.constructor, ProblemError);
});

test("more than 1,000 labels are refused before sending; an unreachable daemon is a TransportError that never left", async () => {
  const client = new InsightClient("http://127.0.0.1:2", "key", { maxRetries: 1, backoffMs: 0 });
  const label = { insightId: "i", outcome: "confirmedLegitimate", discoveredAt: "2026-12-01" };
  await assert.rejects(client.submitLabels(Array(1001).fill(label)), BatchTooLargeError);
  await assert.rejects(client.evaluate({ operationCategory: "payment", insights: [{ type: "isLikelyBeingCoached", schemaVersion: 1 }] }),
    (error: unknown) => error instanceof TransportError && !error.mayHaveReachedServer);
});

test("docs/api.md's worked example: each leaf verifies, and the head names acme in production", async () => {
  const jwk = { kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", kid: "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k", use: "sig", alg: "EdDSA" };
  const head = "eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcktfcW14VldhWVZBOXd3QkY2SXVvM3ZWeno3VHhIQ1R3WEJ5Z3JTNGsifQ.eyJpbnN0YW5jZSI6IndlYi0xLTRmMmE5YzAxIiwidGVuYW50IjoiYWNtZSIsImVudmlyb25tZW50IjoicHJvZHVjdGlvbiIsInNlcXVlbmNlIjo0MSwic2l6ZSI6Mywicm9vdCI6IkJnNHlVc0dBMnJuSlZSZDFYc3hSWUlYcFEyaVZaUUNtYWNvek1oR1E4ZmciLCJwcmV2aW91cyI6InhnTndmclZBQ1FJSlNFSjFGaFEyZTJfcmNIZmhPQW5qSk92ZUJBc2lSRlEiLCJ0aW1lIjoxNzk2NTIyNjY0MTA3fQ.KdOFJdic-IhJDjarlaNxyFTAnwj6F0zzY8CkaTQCpQenbmdqfAfAORt7z-gaUWyGuOdDX6iFpbqE-TkNfJk8BA";
  const bodies = [0, 1, 2].map((k) => encoder.encode(`{"eventId":"e${k}","tenant":"acme","environment":"production"}`));
  const paths = ["(:plzHCViWaOdFSLKqrngt79Gv9E5p+tujoU0mPtJT6CE=: :Ixt/S01+g7BrmmewKLKpgpTGjA+v889KACHN/ROfNWc=:)",
    "(:O9poCmCk5ytQPU4R69+eZiNCZT9qSVezfHD1iHJDdfA=: :Ixt/S01+g7BrmmewKLKpgpTGjA+v889KACHN/ROfNWc=:)", "(:jGH9Soqq6cb7j2GEQ3H+lt2tO0+5JTRHVVAqHakFzY4=:)"];
  const verifier = new ReceiptVerifier(async () => ({ keys: { keys: [jwk] }, etag: undefined }));
  for (let i = 0; i < 3; i++) {
    const verified = await verifier.verify(bodies[i], `head="${head}", index=${i}, path=${paths[i]}`);
    assert.deepEqual([verified.head.instance, verified.head.tenant, verified.head.environment, verified.head.sequence],
      ["web-1-4f2a9c01", "acme", "production", 41]);
  }
});

test("a head of no tenant (made before heads were kept per tenant) still verifies", async () => {
  const jwk = { kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", kid: "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k", use: "sig", alg: "EdDSA" };
  const head = "eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcktfcW14VldhWVZBOXd3QkY2SXVvM3ZWeno3VHhIQ1R3WEJ5Z3JTNGsifQ.eyJpbnN0YW5jZSI6IndlYi0xLTRmMmE5YzAxIiwic2VxdWVuY2UiOjQxLCJzaXplIjozLCJyb290IjoiQzBnZ2J4Z1lmdEt3dWd6TWFzNHE3WFlFbEotSUlTU3FqNkxBNXMyRWtEQSIsInByZXZpb3VzIjoieGdOd2ZyVkFDUUlKU0VKMUZoUTJlMl9yY0hmaE9BbmpKT3ZlQkFzaVJGUSIsInRpbWUiOjE3OTY1MjI2NjQxMDd9.MOU2PIvMci1x5_Yzf5DTmAqfLrpf788-BfQYDDuqMNVEim3hyRXSESsX2vOkjRKe6_TMqPk0QJiCtLjrK7ZrAQ";
  const bodies = ['{"eventId":"e0","tenant":"acme","environment":"production"}', '{"eventId":"e1","tenant":"acme","environment":"sandbox"}',
    '{"eventId":"e2","tenant":"globex","environment":"production"}'].map((b) => encoder.encode(b));
  const paths = ["(:Euu5lAAHET5Atm1jyvmGifWaaHH8KNyW6jnBaHnS6Oc=: :pTY1mPp1bItRlBF4rvRajDpsBcOeXQiswBbpwUyUhEA=:)",
    "(:O9poCmCk5ytQPU4R69+eZiNCZT9qSVezfHD1iHJDdfA=: :pTY1mPp1bItRlBF4rvRajDpsBcOeXQiswBbpwUyUhEA=:)", "(:WKaG4afrKIlvzCaW/UV0mM+GlPRiFF5aNIz+0H5yqBA=:)"];
  const verifier = new ReceiptVerifier(async () => ({ keys: { keys: [jwk] }, etag: undefined }));
  for (let i = 0; i < 3; i++) {
    const verified = await verifier.verify(bodies[i], `head="${head}", index=${i}, path=${paths[i]}`);
    assert.deepEqual([verified.head.instance, verified.head.sequence, verified.kid], ["web-1-4f2a9c01", 41, jwk.kid]);
  }
  await assert.rejects(verifier.verify(bodies[1], `head="${head}", index=0, path=${paths[0]}`), ReceiptInvalidError);
});

// Pinned keys and thumbprints: a head signed by a key the application did not pin fails, even
// when the key set the base URL serves lists it (a proxy serving its own key set).
async function pinning() {
  const insightd = await signer(), proxy = await signer(), next = await signer();
  // A real answer and its head's payload (every member the daemon writes), made a tree of that
  // one answer as the re-keying proxy (clients/conformance/tamper_proxy.py) makes it.
  const fixture = JSON.parse(readFileSync(new URL("../../../testdata/receipts.json", import.meta.url).pathname, "utf8"));
  const answer = fixture.answers[0] as { body: string; receipt: string };
  const body = encoder.encode(answer.body);
  const real = JSON.parse(new TextDecoder().decode(base64UrlDecode(answer.receipt.split('"')[1].split(".")[1])));
  const payload = { ...real, instance: "a", sequence: 0, size: 1, root: base64UrlEncode(await leaf(body)), previous: null };
  const state = { served: [proxy.jwk], fetches: 0 };
  const verifier = (pins?: KeyPins) => new ReceiptVerifier(async () => {
    state.fetches++;
    return { keys: { keys: state.served }, etag: `e${state.fetches}` };
  }, pins);
  const signed = async (key: typeof insightd, instance = "a") => receipt(await key.head({ ...payload, instance }), 0, []);
  return { insightd, proxy, next, body, state, verifier, signed };
}

test("without pins the served key set is trusted; a key not pinned fails even when served, without a fetch", async () => {
  const p = await pinning();
  assert.equal((await p.verifier().verify(p.body, await p.signed(p.proxy))).kid, p.proxy.jwk.kid);
  p.state.fetches = 0;
  for (const pins of [new KeyPins({ thumbprints: [p.insightd.jwk.kid] }), new KeyPins({ keys: JSON.stringify({ keys: [p.insightd.jwk] }) })]) {
    await assert.rejects(p.verifier(pins).verify(p.body, await p.signed(p.proxy)),
      (e: Error) => e instanceof ReceiptInvalidError && e.message.includes(`the head's key ${p.proxy.jwk.kid} is not pinned`));
  }
  assert.equal(p.state.fetches, 0);
});

test("pinned keys need no fetch; pinned thumbprints are fetched; a pinned next key verifies after a rotation", async () => {
  const p = await pinning();
  assert.equal((await p.verifier(new KeyPins({ keys: { keys: [p.insightd.jwk] } })).verify(p.body, await p.signed(p.insightd))).kid, p.insightd.jwk.kid);
  assert.equal(p.state.fetches, 0);
  p.state.served = [p.insightd.jwk, p.next.jwk, p.proxy.jwk];
  const verifier = p.verifier(new KeyPins({ thumbprints: [p.insightd.jwk.kid, p.next.jwk.kid] }));
  assert.equal((await verifier.verify(p.body, await p.signed(p.insightd))).kid, p.insightd.jwk.kid);
  assert.equal((await verifier.verify(p.body, await p.signed(p.next, "b"))).kid, p.next.jwk.kid);
  await assert.rejects(verifier.verify(p.body, await p.signed(p.proxy, "c")), /not pinned/);
  assert.equal(p.state.fetches, 1);
});

test("allowUnpinned accepts a served key; bad pins are refused at once", async () => {
  const p = await pinning();
  const lenient = new KeyPins({ thumbprints: [p.insightd.jwk.kid], allowUnpinned: true });
  assert.equal((await p.verifier(lenient).verify(p.body, await p.signed(p.proxy))).kid, p.proxy.jwk.kid);
  assert.throws(() => new KeyPins({ thumbprints: [] }), TypeError);
  assert.throws(() => new KeyPins({ thumbprints: "abc" as unknown as string[] }), TypeError);
  const wrongKid = new KeyPins({ keys: { keys: [{ ...p.insightd.jwk, kid: p.proxy.jwk.kid }] } });
  await assert.rejects(p.verifier(wrongKid).verify(p.body, await p.signed(p.proxy)), TypeError);
  assert.throws(() => new InsightClient("http://127.0.0.1:9", "k", { pinnedThumbprints: [] }), TypeError);
});
