/** InsightClient: insightd's API over Node 20's fetch. */
import {
  BatchTooLargeError, InsightdError, PROBLEM_ERRORS, ProblemError, ReceiptInvalidError, TransportError, UnexpectedResponseError,
} from "./errors.js";
import type { AuthorizationChoice, ConsumptionStatus, Environment } from "./enums.js";
import type {
  APIKeyInfo, APIKeyList, AuthorizationState, AuthorizationSubject, Caller, CallerList, CallerQuotaPatch, ErasureResult, EvaluationRequest, EvaluationResponse, InsightCatalog, JSONWebKeySet, Label, LabelSubmissionResult, Problem,
  RateLimitList, RateLimitState, ReceiptHeadList, SubjectIdentifiers, Transparency,
} from "./models.js";
import { checkMembers } from "./members.js";
import { KeyPins, Receipt, ReceiptVerifier } from "./receipts.js";

export const VERSION = "0.1.0";
/** The most labels one POST /v1/labels takes. */
export const MAX_LABELS = 1000;

/**
 * Each operation of openapi/ this client calls: [method, path, retry]. `retry` says when a failed
 * attempt is tried again: "safe" — after a network failure or a 503, since repeating the request
 * changes nothing (reads, PUT, a consumption report or a key revocation done twice, labels under
 * the same Idempotency-Key); "unsent" — only when the request cannot have reached insightd (the
 * connection was never made), because a second POST /v1/evaluations would be a second evaluation
 * the caller did not ask for.
 */
export const OPERATIONS = {
  createEvaluation: ["POST", "/v1/evaluations", "unsent"],
  reportConsumption: ["POST", "/v1/evaluations/{eventId}/consumption", "safe"],
  submitLabels: ["POST", "/v1/labels", "safe"],
  listInsights: ["GET", "/v1/insights", "safe"],
  getSigningKeys: ["GET", "/v1/signing-keys", "safe"],
  listReceiptHeads: ["GET", "/v1/receipts/heads", "safe"],
  setAuthorization: ["PUT", "/v1/authorization", "safe"],
  queryAuthorization: ["POST", "/v1/authorization/query", "safe"],
  subjectTransparency: ["POST", "/v1/subjects/transparency", "safe"],
  subjectErasure: ["POST", "/v1/subjects/erasure", "safe"],
  listCallers: ["GET", "/admin/v1/callers", "safe"],
  getCaller: ["GET", "/admin/v1/callers/{callerId}", "safe"],
  updateCallerQuota: ["PATCH", "/admin/v1/callers/{callerId}", "safe"],
  getCallerRateLimit: ["GET", "/admin/v1/callers/{callerId}/rate-limit", "safe"],
  resetCallerRateLimit: ["POST", "/admin/v1/callers/{callerId}/rate-limit/reset", "safe"],
  listRateLimits: ["GET", "/admin/v1/rate-limits", "safe"],
  listCallerKeys: ["GET", "/admin/v1/callers/{callerId}/keys", "safe"],
  revokeCallerKey: ["POST", "/admin/v1/callers/{callerId}/keys/{keyId}/revoke", "safe"],
} as const;
type Operation = keyof typeof OPERATIONS;

export interface ClientOptions {
  /** Milliseconds for a whole attempt (connect, send, answer); default 10,000. */
  timeoutMs?: number;
  /** Further attempts after a network failure or a 503, where a repeat is safe; default 2. */
  maxRetries?: number;
  /** First wait between attempts (doubling), unless insightd says Retry-After; default 200 ms. */
  backoffMs?: number;
  /** The longest Retry-After the client waits for by itself; default 5,000 ms. */
  maxWaitMs?: number;
  /** Verify every evaluation's Insight-Receipt (default true). */
  verifyReceipts?: boolean;
  /**
   * The keys trusted to sign receipts: `pinnedKeys` a JWKS document (an object or its JSON text,
   * e.g. what insightd's operator hands out), `pinnedThumbprints` the keys' RFC 7638 thumbprints
   * (their kids). Without pins the client trusts whatever key set the base URL serves, so a
   * receipt proves the answer only as far as TLS to insightd does; with them, a head signed by
   * any other key fails with ReceiptInvalidError ("… is not pinned"), even when the base URL's
   * JWKS lists it. Pin the next key before a rotation (docs/operations.md, "Signing keys").
   * `allowUnpinnedKeys`: accept other fetched keys too (while rolling pins out).
   */
  pinnedKeys?: JSONWebKeySet | string;
  pinnedThumbprints?: readonly string[];
  allowUnpinnedKeys?: boolean;
  /** The tenant and environment answers must name; default those of the first verified answer. */
  expectedTenant?: string;
  expectedEnvironment?: Environment;
  /**
   * On by default: insightd replays an evaluation sent again with the same requestId
   * (docs/api.md, "Retries: requestId"), so an evaluation whose requestId you set is retried like
   * a read, the same bytes. Never one whose requestId the client generated: you could not find it
   * again. False for an insightd older than that.
   */
  idempotentEvaluations?: boolean;
}

/** An evaluation's answer, its verified receipt (undefined when verification is off), the exact body bytes. */
export interface Evaluation extends EvaluationResponse {
  receipt: Receipt | undefined;
  body: Uint8Array;
  attempts: number;
  /** insightd answered a retry from the first evaluation (Idempotent-Replayed). */
  replayed: boolean;
}

interface Answer { status: number; headers: Headers; body: Uint8Array; attempts: number }
class Unsent extends Error {}
class Lost extends Error {}

// Node's fetch (undici) names why a connection was never made in the error's cause.
const NEVER_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

/** One insightd base URL and API key; create one and share it. */
export class InsightClient {
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly backoffMs: number;
  private readonly maxWaitMs: number;
  readonly verifyReceipts: boolean;
  private expectedTenant: string | undefined;
  private expectedEnvironment: string | undefined;
  private readonly verifier: ReceiptVerifier;
  readonly idempotentEvaluations: boolean;

  constructor(baseUrl: string, private readonly apiKey: string, options: ClientOptions = {}) {
    const url = new URL(baseUrl);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError("baseUrl must be an http or https URL");
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.backoffMs = options.backoffMs ?? 200;
    this.maxWaitMs = options.maxWaitMs ?? 5_000;
    this.verifyReceipts = options.verifyReceipts ?? true;
    this.expectedTenant = options.expectedTenant;
    this.expectedEnvironment = options.expectedEnvironment;
    this.idempotentEvaluations = options.idempotentEvaluations ?? true;
    const pinned = options.pinnedKeys !== undefined || options.pinnedThumbprints !== undefined;
    const pins = pinned
      ? new KeyPins({ keys: options.pinnedKeys, thumbprints: options.pinnedThumbprints, allowUnpinned: options.allowUnpinnedKeys })
      : undefined;
    this.verifier = new ReceiptVerifier((etag) => this.fetchSigningKeys(etag), pins);
  }

  // ---- evaluations

  /**
   * POST /v1/evaluations: the answer, its receipt verified (unless verification is off).
   * `override`: the sandbox's Insight-Override, e.g. "isLikelyBeingCoached=high". Throws the
   * problem's error class, or ReceiptInvalidError, UnexpectedResponseError, TransportError;
   * UnknownMemberError, before sending, for a member the request's schema lacks (one built from
   * JSON: `interaction.interaction`, the kit's object wrapped once too often). Retried like a read when you set requestId (insightd replays the first evaluation); otherwise
   * not once the request may have reached insightd (TransportError.mayHaveReachedServer).
   */
  async evaluate(request: EvaluationRequest, options: { override?: string } = {}): Promise<Evaluation> {
    checkMembers(request, "EvaluationRequest", "");
    const sent: EvaluationRequest = { ...request, requestId: request.requestId ?? "req-" + randomLetters(24) };
    const retry = this.idempotentEvaluations && request.requestId !== undefined ? "safe" : undefined;
    const answer = await this.call("createEvaluation", {}, { body: sent, headers: options.override === undefined ? {} : { "Insight-Override": options.override }, retry });
    const receipt = this.verifyReceipts ? await this.verifier.verify(answer.body, answer.headers.get("insight-receipt")) : undefined;
    const response = this.decode<EvaluationResponse>(answer);
    if (typeof response.eventId !== "string" || !Array.isArray(response.insights) || typeof response.decision?.action !== "string") {
      throw new UnexpectedResponseError("the answer is not an EvaluationResponse");
    }
    if (response.requestId !== sent.requestId) throw new UnexpectedResponseError("the answer's requestId is not the one sent");
    if (response.insights.length !== sent.insights.length) throw new UnexpectedResponseError("the answer does not answer each requested insight");
    if (receipt) {
      this.expectedTenant ??= response.tenant;
      this.expectedEnvironment ??= response.environment;
      if (response.tenant !== this.expectedTenant || response.environment !== this.expectedEnvironment) {
        throw new ReceiptInvalidError(`the answer is ${response.tenant}/${response.environment}'s, not ${this.expectedTenant}/${this.expectedEnvironment}'s`);
      }
    }
    return { ...response, receipt, body: answer.body, attempts: answer.attempts, replayed: answer.headers.get("idempotent-replayed") === "true" };
  }

  /** POST /v1/evaluations/{eventId}/consumption: what you did with the evaluation. */
  async reportConsumption(eventId: string, status: ConsumptionStatus, insightIdsUsed?: string[]): Promise<void> {
    await this.call("reportConsumption", { eventId }, { body: insightIdsUsed ? { status, insightIdsUsed } : { status } });
  }

  // ---- labels

  /**
   * POST /v1/labels: up to 1,000 labels (BatchTooLargeError beyond, before sending), one result
   * each. The Idempotency-Key (generated when absent) is sent again on a retry.
   */
  async submitLabels(labels: Label[], idempotencyKey?: string): Promise<LabelSubmissionResult> {
    if (labels.length < 1 || labels.length > MAX_LABELS) throw new BatchTooLargeError(`a label submission takes 1 to ${MAX_LABELS} labels, not ${labels.length}`);
    checkMembers(labels, "Label[]", "labels");
    const key = idempotencyKey ?? crypto.randomUUID();
    const answer = await this.call("submitLabels", {}, { body: { labels }, headers: { "Idempotency-Key": key } });
    const result = this.decode<Omit<LabelSubmissionResult, "replayed" | "idempotencyKey">>(answer);
    return { ...result, replayed: answer.headers.get("idempotent-replayed") === "true", idempotencyKey: key };
  }

  // ---- authorization, transparency, erasure

  /** PUT /v1/authorization: a person's choice. */
  async setAuthorization(subject: AuthorizationSubject, status: AuthorizationChoice): Promise<AuthorizationState> {
    return this.decode(await this.call("setAuthorization", {}, { body: { subject, status } }));
  }

  /** POST /v1/authorization/query: where a subject's choice stands. */
  async queryAuthorization(subject: AuthorizationSubject): Promise<AuthorizationState> {
    return this.decode(await this.call("queryAuthorization", {}, { body: { subject } }));
  }

  /** POST /v1/subjects/transparency: the evaluations that carried a person, newest first. */
  async transparency(subject: SubjectIdentifiers, page: { limit?: number; cursor?: string; tenant?: string } = {}): Promise<Transparency> {
    return this.decode(await this.call("subjectTransparency", {}, { body: { subject, ...page } }));
  }

  /** POST /v1/subjects/erasure (admin): unlink a person everywhere. */
  async eraseSubject(subject: SubjectIdentifiers, tenant?: string): Promise<ErasureResult> {
    return this.decode(await this.call("subjectErasure", {}, { body: tenant === undefined ? { subject } : { subject, tenant } }));
  }

  // ---- catalog and proofs

  /** GET /v1/insights: the insight types, values and model versions served. */
  async catalog(): Promise<InsightCatalog> {
    return this.decode(await this.call("listInsights"));
  }

  /** GET /v1/signing-keys: the JWKS that verifies receipt heads. */
  async signingKeys(): Promise<JSONWebKeySet> {
    return this.decode(await this.call("getSigningKeys", {}, { authenticate: false }));
  }

  /** GET /v1/receipts/heads: the latest head of each instance, or one instance's chain; each head's signature verified. */
  async receiptHeads(query: { instance?: string; from?: number; limit?: number } = {}): Promise<ReceiptHeadList> {
    const heads = this.decode<ReceiptHeadList>(await this.call("listReceiptHeads", {}, { query }));
    if (this.verifyReceipts) {
      for (const listed of heads.heads) {
        const { head } = await this.verifier.verifyHead(listed.head);
        if (head.instance !== listed.instance || head.sequence !== listed.sequence || head.root !== listed.root) {
          throw new ReceiptInvalidError("a listed head's members differ from its signed payload");
        }
      }
    }
    return heads;
  }

  private async fetchSigningKeys(etag: string | undefined) {
    const headers: Record<string, string> = { "Cache-Control": "no-cache" };
    if (etag) headers["If-None-Match"] = etag;
    const answer = await this.call("getSigningKeys", {}, { headers, authenticate: false, expect: [200, 304] });
    if (answer.status === 304) return { keys: undefined, etag };
    return { keys: this.decode<JSONWebKeySet>(answer), etag: answer.headers.get("etag") ?? undefined };
  }

  // ---- admin

  /** GET /admin/v1/callers: the callers of the admin's tenant. */
  async callers(): Promise<Caller[]> {
    return this.decode<CallerList>(await this.call("listCallers")).callers;
  }

  async caller(callerId: string): Promise<Caller> {
    return this.decode(await this.call("getCaller", { callerId }));
  }

  /** PATCH /admin/v1/callers/{callerId}: rate, burst, training capture (at least one). */
  async updateCallerQuota(callerId: string, patch: CallerQuotaPatch): Promise<Caller> {
    return this.decode(await this.call("updateCallerQuota", { callerId }, { body: patch }));
  }

  async callerRateLimit(callerId: string): Promise<RateLimitState> {
    return this.decode(await this.call("getCallerRateLimit", { callerId }));
  }

  /** POST …/rate-limit/reset: clear the penalty, forgive overdue reports so far (no refill). */
  async resetCallerRateLimit(callerId: string): Promise<RateLimitState> {
    return this.decode(await this.call("resetCallerRateLimit", { callerId }));
  }

  /** GET /admin/v1/rate-limits: every caller of the tenant with its rate-limit state. */
  async rateLimits(): Promise<RateLimitList["callers"]> {
    return this.decode<RateLimitList>(await this.call("listRateLimits")).callers;
  }

  async callerKeys(callerId: string): Promise<APIKeyInfo[]> {
    return this.decode<APIKeyList>(await this.call("listCallerKeys", { callerId })).keys;
  }

  async revokeCallerKey(callerId: string, keyId: string): Promise<APIKeyInfo> {
    return this.decode(await this.call("revokeCallerKey", { callerId, keyId }));
  }

  // ---- transport

  private decode<T>(answer: Answer): T {
    try {
      return JSON.parse(new TextDecoder().decode(answer.body)) as T;
    } catch {
      throw new UnexpectedResponseError(`HTTP ${answer.status}: the answer is not JSON`);
    }
  }

  private async call(
    operation: Operation,
    pathParameters: Record<string, string> = {},
    options: {
      body?: unknown; headers?: Record<string, string>; query?: Record<string, string | number | undefined>; authenticate?: boolean;
      expect?: number[]; retry?: "safe" | "unsent";
    } = {},
  ): Promise<Answer> {
    const [method, template, defaultRetry] = OPERATIONS[operation];
    const retry = options.retry ?? defaultRetry;
    let path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(pathParameters[name]));
    const query = Object.entries(options.query ?? {}).filter(([, v]) => v !== undefined).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
    if (query.length) path += "?" + query.join("&");
    const headers: Record<string, string> = { Accept: "application/json", "User-Agent": `insightd-client-typescript/${VERSION}` };
    if (options.authenticate !== false) headers.Authorization = `Bearer ${this.apiKey}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["Content-Type"] = "application/json";
    }
    Object.assign(headers, options.headers);
    for (let attempt = 1; ; attempt++) {
      let response: Response, data: Uint8Array;
      try {
        [response, data] = await this.send(method, path, headers, body);
      } catch (failure) {
        const unsent = failure instanceof Unsent;
        if ((unsent || retry === "safe") && attempt <= this.maxRetries) {
          await sleep(this.wait(attempt, null));
          continue;
        }
        throw new TransportError((failure as Error).message, !unsent);
      }
      if (response.status === 503 && retry === "safe" && attempt <= this.maxRetries) {
        const wait = this.wait(attempt, response.headers.get("retry-after"));
        if (wait <= this.maxWaitMs) {
          await sleep(wait);
          continue;
        }
      }
      const expected = options.expect ? options.expect.includes(response.status) : response.status >= 200 && response.status < 300;
      if (expected) return { status: response.status, headers: response.headers, body: data, attempts: attempt };
      throw problemError(response.status, response.headers, data, attempt);
    }
  }

  private wait(attempt: number, retryAfter: string | null): number {
    const seconds = retryAfter === null ? NaN : Number(retryAfter);
    return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : this.backoffMs * 2 ** (attempt - 1);
  }

  private async send(method: string, path: string, headers: Record<string, string>, body: string | undefined): Promise<[Response, Uint8Array]> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      let response: Response;
      try {
        response = await fetch(this.baseUrl + path, { method, headers, body, signal: controller.signal, redirect: "error" });
      } catch (error) {
        if (controller.signal.aborted) throw new Lost(`no answer within ${this.timeoutMs} ms`);
        const code = ((error as { cause?: { code?: string } }).cause ?? {}).code;
        if (code && NEVER_CONNECTED.has(code)) throw new Unsent(`cannot connect to insightd: ${code}`);
        throw new Lost(`the connection failed: ${code ?? (error as Error).message}`);
      }
      try {
        return [response, new Uint8Array(await response.arrayBuffer())];
      } catch {
        throw new Lost(controller.signal.aborted ? `no answer within ${this.timeoutMs} ms` : "the answer was cut off");
      }
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The typed error of a problem answer (exported for tests). */
export function problemError(status: number, headers: Headers, body: Uint8Array, attempts: number): InsightdError {
  let problem: Problem;
  try {
    problem = JSON.parse(new TextDecoder().decode(body)) as Problem;
  } catch {
    return new UnexpectedResponseError(`HTTP ${status} without a problem answer`);
  }
  if (typeof problem !== "object" || problem === null || typeof problem.code !== "string") return new UnexpectedResponseError(`HTTP ${status} without a problem answer`);
  const header = headers.get("retry-after");
  const retryAfter = header !== null && Number.isFinite(Number(header)) ? Number(header) : problem.retryAfterSeconds;
  const errorClass = Object.prototype.hasOwnProperty.call(PROBLEM_ERRORS, problem.code) ? PROBLEM_ERRORS[problem.code as keyof typeof PROBLEM_ERRORS] : ProblemError;
  return new errorClass(problem, retryAfter, headers.get("ratelimit") ?? undefined, attempts);
}

function randomLetters(count: number): string {
  const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  const bytes = crypto.getRandomValues(new Uint8Array(count));
  return Array.from(bytes, (b) => letters[b % letters.length]).join("");
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
