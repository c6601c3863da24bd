/**
 * Verifies an answer's Insight-Receipt (docs/api.md, "Receipts"): the RFC 8941 dictionary
 * `head="<JWS>", index=<n>, path=(:<base64>: ...)`; the head a compact JWS (EdDSA, RFC 8037) of
 * {instance, sequence, size, root, previous, time} under a key of GET /v1/signing-keys whose kid
 * is its RFC 7638 thumbprint; the body's leaf hash SHA-256(0x00 || body) leads through the audit
 * path to the head's root (RFC 9162, section 2.1.3.2). The same steps as e2e/verify_receipt.py,
 * with Node's WebCrypto.
 */
import { ReceiptInvalidError } from "./errors.js";
import type { JSONWebKeySet, ReceiptHeadPayload, SigningKey } from "./models.js";

/** An answer's proof, verified: keep `header` and the body's exact bytes with the transaction. */
export interface Receipt {
  header: string;
  headJws: string;
  index: number;
  path: Uint8Array[];
  head: ReceiptHeadPayload;
  kid: string;
}

const encoder = new TextEncoder();

export function base64UrlDecode(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new ReceiptInvalidError("not base64url");
  return base64Decode(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
}

export function base64UrlEncode(data: Uint8Array): string {
  return base64Encode(data).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function base64Decode(text: string): Uint8Array {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) throw new ReceiptInvalidError("not base64");
  const binary = atob(text);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

export function base64Encode(data: Uint8Array): string {
  return btoa(String.fromCharCode(...data));
}

export async function sha256(...parts: Uint8Array[]): Promise<Uint8Array> {
  const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    joined.set(p, at);
    at += p.length;
  }
  return new Uint8Array(await crypto.subtle.digest("SHA-256", joined));
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** head, index and path of an Insight-Receipt (an RFC 8941 dictionary), parsed strictly. */
export function parseReceipt(text: string): { head: string; index: number; path: Uint8Array[] } {
  const members: Record<string, string | number | Uint8Array[]> = {};
  let rest = text.replace(/^ +| +$/g, "");
  while (rest) {
    let m = /^([a-z*][a-z0-9_.*-]*)=/.exec(rest);
    if (!m) throw new ReceiptInvalidError("Insight-Receipt: a member without a key");
    const key = m[1];
    rest = rest.slice(m[0].length);
    let value: string | number | Uint8Array[];
    if (rest.startsWith('"')) {
      m = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"/.exec(rest);
      if (!m) throw new ReceiptInvalidError("Insight-Receipt: a malformed string");
      value = m[1].replace(/\\(["\\])/g, "$1");
    } else if (rest.startsWith("(")) {
      m = /^\(((?::[A-Za-z0-9+/=]*:)(?: +:[A-Za-z0-9+/=]*:)*)?\)/.exec(rest);
      if (!m) throw new ReceiptInvalidError("Insight-Receipt: a malformed inner list");
      value = (m[1] ?? "").split(" ").filter((item) => item).map((item) => base64Decode(item.slice(1, -1)));
    } else {
      m = /^-?[0-9]{1,15}/.exec(rest);
      if (!m) throw new ReceiptInvalidError("Insight-Receipt: a value that is not a string, an integer or an inner list");
      value = Number(m[0]);
    }
    members[key] = value;
    rest = rest.slice(m[0].length);
    const comma = /^[ \t]*,[ \t]*/.exec(rest);
    if (comma) {
      rest = rest.slice(comma[0].length);
      if (!rest) throw new ReceiptInvalidError("Insight-Receipt: a trailing comma");
    } else if (rest.replace(/[ \t]/g, "")) {
      throw new ReceiptInvalidError("Insight-Receipt: text after a member");
    } else {
      rest = "";
    }
  }
  const { head, index, path } = members;
  if (typeof head !== "string" || typeof index !== "number" || !Array.isArray(path)) {
    throw new ReceiptInvalidError("Insight-Receipt lacks head (a string), index (an integer) or path (an inner list)");
  }
  return { head, index, path };
}

/** RFC 9162 section 2.1.3.2: the root the audit path gives, or undefined. */
export async function rootFromPath(leaf: Uint8Array, index: number, size: number, path: Uint8Array[]): Promise<Uint8Array | undefined> {
  if (!(index >= 0 && index < size)) return undefined;
  let fn = index, sn = size - 1, r = leaf;
  const one = Uint8Array.of(1);
  for (const p of path) {
    if (sn === 0 || p.length !== 32) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = await sha256(one, p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = await sha256(one, r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined;
}

/** The RFC 7638 thumbprint of an Ed25519 key: its kid. */
export async function thumbprint(x: string): Promise<string> {
  return base64UrlEncode(await sha256(encoder.encode(JSON.stringify({ crv: "Ed25519", kty: "OKP", x }))));
}

/** Whether a JWK of a set is an Ed25519 signing key named by its RFC 7638 thumbprint. */
async function usable(jwk: SigningKey): Promise<boolean> {
  return jwk.kty === "OKP" && jwk.crv === "Ed25519" && jwk.use === "sig" && jwk.alg === "EdDSA" && (await thumbprint(jwk.x)) === jwk.kid;
}

function importKey(jwk: SigningKey): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", base64UrlDecode(jwk.x), { name: "Ed25519" }, false, ["verify"]);
}

/**
 * The keys an application trusts to sign heads, whatever the base URL's GET /v1/signing-keys
 * lists (a proxy can serve its own set and re-sign answers: docs/api.md, "Receipts").
 * `keys`: a JWKS document (an object or its JSON text) whose keys verify without a fetch;
 * `thumbprints`: RFC 7638 thumbprints (the kids) of keys that may be fetched — pin the key
 * published ahead of a rotation too (docs/operations.md, "Signing keys"); `allowUnpinned`: also
 * trust other fetched keys (while rolling pins out: `receipt.kid` tells which key signed).
 */
export class KeyPins {
  readonly thumbprints: ReadonlySet<string>;
  readonly allowUnpinned: boolean;
  private readonly pinned: SigningKey[];
  private imported: Promise<Map<string, CryptoKey>> | undefined;

  constructor(options: { keys?: JSONWebKeySet | string; thumbprints?: readonly string[]; allowUnpinned?: boolean }) {
    const set = typeof options.keys === "string" ? (JSON.parse(options.keys) as JSONWebKeySet) : options.keys;
    if (options.thumbprints !== undefined && !Array.isArray(options.thumbprints)) throw new TypeError("thumbprints is a list of thumbprints");
    this.pinned = set?.keys ?? [];
    this.thumbprints = new Set([...(options.thumbprints ?? []), ...this.pinned.map((jwk) => jwk.kid)]);
    if (this.thumbprints.size === 0) throw new TypeError("pin at least one key or thumbprint");
    this.allowUnpinned = options.allowUnpinned ?? false;
  }

  /** Whether a key of that kid may verify a head. */
  admits(kid: string): boolean {
    return this.allowUnpinned || this.thumbprints.has(kid);
  }

  /** The pinned key of that kid, if it is one of `keys`. */
  async key(kid: string): Promise<CryptoKey | undefined> {
    this.imported ??= (async () => {
      const keys = new Map<string, CryptoKey>();
      for (const jwk of this.pinned) {
        if (!(await usable(jwk))) throw new TypeError(`pinned key ${jwk.kid} is not an Ed25519 signing key named by its RFC 7638 thumbprint`);
        keys.set(jwk.kid, await importKey(jwk));
      }
      return keys;
    })();
    return (await this.imported).get(kid);
  }

  refuse(kid: string): never {
    throw new ReceiptInvalidError(`the head's key ${kid} is not pinned (pinned: ${[...this.thumbprints].sort().join(", ")})`);
  }
}

/** Answers the key set, or undefined when unchanged since `etag` (304). */
export type KeyFetcher = (etag: string | undefined) => Promise<{ keys: JSONWebKeySet | undefined; etag: string | undefined }>;

/**
 * Verifies receipts against the key set `fetchKeys` answers, cached and fetched again, once per
 * answer, when a head names a kid it does not hold (after a rotation). It remembers the last head
 * of each chain (instance, tenant, environment): a head claiming the same place in the chain as another, or a successor whose
 * `previous` is not the hash of the head before it, fails.
 */
export class ReceiptVerifier {
  private keys: Map<string, CryptoKey> | undefined;
  private etag: string | undefined;
  private readonly lastHeads = new Map<string, { sequence: number; jws: string; time: number }>();

  /** With `pins`, pinned keys need no fetch and only pinned keys verify (unless the pins allow unpinned ones). */
  constructor(private readonly fetchKeys: KeyFetcher, private readonly pins?: KeyPins) {}

  private async key(kid: string): Promise<CryptoKey> {
    if (this.pins) {
      const pinned = await this.pins.key(kid);
      if (pinned) return pinned;
      if (!this.pins.admits(kid)) this.pins.refuse(kid);
    }
    const cached = this.keys?.get(kid);
    if (cached) return cached;
    const fetched = await this.fetchKeys(this.keys ? this.etag : undefined);
    if (fetched.keys) {
      const keys = new Map<string, CryptoKey>();
      for (const jwk of fetched.keys.keys) {
        if ((await usable(jwk)) && (this.pins?.admits(jwk.kid) ?? true)) keys.set(jwk.kid, await importKey(jwk));
      }
      this.keys = keys;
      this.etag = fetched.etag;
    }
    const key = this.keys?.get(kid);
    if (!key) throw new ReceiptInvalidError(`the head's key ${kid} is not in GET /v1/signing-keys`);
    return key;
  }

  /** The payload of a head JWS, and its kid, when its signature verifies. */
  async verifyHead(jws: string): Promise<{ head: ReceiptHeadPayload; kid: string }> {
    const parts = jws.split(".");
    if (parts.length !== 3) throw new ReceiptInvalidError("the head is not a compact JWS");
    let header: unknown, payload: unknown;
    try {
      header = JSON.parse(new TextDecoder().decode(base64UrlDecode(parts[0])));
      payload = JSON.parse(new TextDecoder().decode(base64UrlDecode(parts[1])));
    } catch (error) {
      if (error instanceof ReceiptInvalidError) throw error;
      throw new ReceiptInvalidError("the head's header or payload is not JSON");
    }
    const h = header as Record<string, unknown>;
    if (typeof h !== "object" || h === null || h.alg !== "EdDSA" || typeof h.kid !== "string" || Object.keys(h).sort().join() !== "alg,kid") {
      throw new ReceiptInvalidError("the head's JWS header is not {alg: EdDSA, kid}");
    }
    const key = await this.key(h.kid);
    const valid = await crypto.subtle.verify({ name: "Ed25519" }, key, base64UrlDecode(parts[2]), encoder.encode(parts[0] + "." + parts[1]));
    if (!valid) throw new ReceiptInvalidError("the head's signature does not verify");
    const p = payload as Record<string, unknown>;
    const members = typeof p === "object" && p !== null ? Object.keys(p).sort().join() : "";
    if (typeof p !== "object" || p === null
      || (members !== "instance,previous,root,sequence,size,time" && members !== "environment,instance,previous,root,sequence,size,tenant,time")
      || (p.tenant !== undefined && (typeof p.tenant !== "string" || p.tenant === "" || typeof p.environment !== "string" || p.environment === ""))
      || typeof p.instance !== "string" || !Number.isInteger(p.sequence) || !Number.isInteger(p.size) || typeof p.root !== "string"
      || !(p.previous === null || typeof p.previous === "string") || !Number.isInteger(p.time)) {
      throw new ReceiptInvalidError("the head's payload is not {instance, tenant, environment, sequence, size, root, previous, time}");
    }
    return { head: p as unknown as ReceiptHeadPayload, kid: h.kid };
  }

  /** The Receipt of `body` (the answer's exact bytes), or ReceiptInvalidError. */
  async verify(body: Uint8Array, headerValue: string | null): Promise<Receipt> {
    if (headerValue === null) throw new ReceiptInvalidError("the answer has no Insight-Receipt");
    const { head: jws, index, path } = parseReceipt(headerValue);
    const { head, kid } = await this.verifyHead(jws);
    const root = await rootFromPath(await sha256(Uint8Array.of(0), body), index, head.size, path);
    if (!root || !equal(root, base64UrlDecode(head.root))) throw new ReceiptInvalidError("the body and the path do not lead to the signed root");
    if (head.tenant !== undefined) {
      let answer: Record<string, unknown> | null = null;
      try { answer = JSON.parse(new TextDecoder().decode(body)); } catch { answer = null; }
      if (typeof answer !== "object" || answer === null || answer.tenant !== head.tenant || answer.environment !== head.environment) {
        throw new ReceiptInvalidError(`the head is ${head.tenant}/${head.environment}'s, not the answer's`);
      }
    }
    await this.checkChain(head, jws);
    return { header: headerValue, headJws: jws, index, path, head, kid };
  }

  private async checkChain(head: ReceiptHeadPayload, jws: string): Promise<void> {
    const chain = `${head.instance}\u0000${head.tenant ?? ""}\u0000${head.environment ?? ""}`;
    const last = this.lastHeads.get(chain);
    if (last) {
      if (head.sequence === last.sequence && jws !== last.jws) {
        throw new ReceiptInvalidError(`two heads claim sequence ${head.sequence} of instance ${head.instance}`);
      }
      if (head.sequence === last.sequence + 1) {
        if (head.previous !== base64UrlEncode(await sha256(encoder.encode(last.jws)))) {
          throw new ReceiptInvalidError("the head's previous is not the hash of the head before it");
        }
        if (head.time < last.time) throw new ReceiptInvalidError("the head is older than the head before it");
      }
    }
    if (!last || head.sequence > last.sequence) this.lastHeads.set(chain, { sequence: head.sequence, jws, time: head.time });
  }
}
