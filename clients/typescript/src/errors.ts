/**
 * The errors the client throws. Every problem `code` has its class (a subclass of ProblemError,
 * found in PROBLEM_ERRORS); a code this client version does not know throws ProblemError itself.
 * The client's own: ReceiptInvalidError (an answer whose proof does not verify: never trust it),
 * TransportError (no answer: network, timeout), UnexpectedResponseError, BatchTooLargeError.
 */
import { ProblemCode } from "./enums.js";
import type { Problem } from "./models.js";

/** Every error this client throws. */
export class InsightdError extends Error {
  override name = "InsightdError";
}

/**
 * insightd answered with a problem (RFC 9457). Branch on `code` (or the class), not on `detail`.
 * `retryAfter`: seconds to wait before trying again when insightd said (Retry-After);
 * `attempts`: the requests sent (more than 1 after retries).
 */
export class ProblemError extends InsightdError {
  override name = "ProblemError";
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly field?: string;
  readonly reason?: string;
  constructor(readonly problem: Problem, readonly retryAfter: number | undefined, readonly rateLimit: string | undefined, readonly attempts: number) {
    super(`${problem.status} ${problem.code}: ${problem.detail}${problem.field ? ` (${problem.field})` : ""}`);
    this.status = problem.status;
    this.code = problem.code;
    this.detail = problem.detail;
    this.field = problem.field;
    this.reason = problem.reason;
  }
}

type ProblemErrorClass = new (problem: Problem, retryAfter: number | undefined, rateLimit: string | undefined, attempts: number) => ProblemError;
function problemClass(name: string): ProblemErrorClass {
  return class extends ProblemError {
    override name = name;
  };
}

export const ContextInvalidError = problemClass("ContextInvalidError");
export const UnauthorizedError = problemClass("UnauthorizedError");
export const ForbiddenError = problemClass("ForbiddenError");
export const DeniedError = problemClass("DeniedError");
export const OverrideNotAllowedError = problemClass("OverrideNotAllowedError");
export const NotFoundError = problemClass("NotFoundError");
export const EvaluationNotFoundError = problemClass("EvaluationNotFoundError");
export const CallerNotFoundError = problemClass("CallerNotFoundError");
export const KeyNotFoundError = problemClass("KeyNotFoundError");
export const MethodNotAllowedError = problemClass("MethodNotAllowedError");
export const ConsumptionConflictError = problemClass("ConsumptionConflictError");
export const IdempotencyKeyReusedError = problemClass("IdempotencyKeyReusedError");
export const UnsupportedMediaTypeError = problemClass("UnsupportedMediaTypeError");
export const PayloadTooLargeError = problemClass("PayloadTooLargeError");
export const HeadersTooLargeError = problemClass("HeadersTooLargeError");
export const MalformedRequestError = problemClass("MalformedRequestError");
export const RequestTimeoutError = problemClass("RequestTimeoutError");
export const NotImplementedError = problemClass("NotImplementedError");
export const HttpVersionNotSupportedError = problemClass("HttpVersionNotSupportedError");
export const RateLimitExceededError = problemClass("RateLimitExceededError");
export const ServerError = problemClass("ServerError");

/** The error class of each problem code. */
export const PROBLEM_ERRORS: Record<(typeof ProblemCode)[keyof typeof ProblemCode], ProblemErrorClass> = {
  contextInvalid: ContextInvalidError, unauthorized: UnauthorizedError, forbidden: ForbiddenError, denied: DeniedError,
  overrideNotAllowed: OverrideNotAllowedError, notFound: NotFoundError, evaluationNotFound: EvaluationNotFoundError,
  callerNotFound: CallerNotFoundError, keyNotFound: KeyNotFoundError, methodNotAllowed: MethodNotAllowedError,
  consumptionConflict: ConsumptionConflictError, idempotencyKeyReused: IdempotencyKeyReusedError,
  unsupportedMediaType: UnsupportedMediaTypeError, payloadTooLarge: PayloadTooLargeError, headersTooLarge: HeadersTooLargeError,
  malformedRequest: MalformedRequestError, requestTimeout: RequestTimeoutError, notImplemented: NotImplementedError,
  httpVersionNotSupported: HttpVersionNotSupportedError, rateLimitExceeded: RateLimitExceededError, serverError: ServerError,
};

/**
 * The answer's Insight-Receipt does not prove it: a changed body, a head not signed by a key of
 * GET /v1/signing-keys, a path that does not lead to the head's root, another tenant's or
 * environment's answer, a forked chain. Never retried; do not act on that answer.
 */
export class ReceiptInvalidError extends InsightdError {
  override name = "ReceiptInvalidError";
}

/** No answer (connection refused or lost, timeout); `mayHaveReachedServer`: an evaluation may exist. */
export class TransportError extends InsightdError {
  override name = "TransportError";
  constructor(message: string, readonly mayHaveReachedServer: boolean) {
    super(message);
  }
}

/** An answer that is not what the API promises (not JSON, another requestId, missing insights). */
export class UnexpectedResponseError extends InsightdError {
  override name = "UnexpectedResponseError";
}

/** More than 1,000 labels in one submission: refused before anything is sent. */
export class BatchTooLargeError extends InsightdError {
  override name = "BatchTooLargeError";
}

/**
 * A request with a member its schema lacks: `path` names it in the body
 * (`interaction.interaction`: the kit's object wrapped once too often;
 * `transaction.newCounterParty`: a misspelt name). Thrown before sending.
 */
export class UnknownMemberError extends InsightdError {
  override name = "UnknownMemberError";
  constructor(readonly path: string, readonly schema: string, readonly members: string[]) {
    super(`unknown member ${path}: ${schema} has ${members.join(", ")}`);
  }
}
