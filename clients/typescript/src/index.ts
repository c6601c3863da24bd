/**
 * insightd's TypeScript client: evaluate, report consumption, label, switch authorization, read
 * the catalog and, for admins, callers and rate limits, with every answer's receipt verified.
 * See README.md beside this package and docs/client.md.
 */
export * from "./enums.js";
export * from "./models.js";
export * from "./errors.js";
export { REQUEST_MEMBERS } from "./members.js";
export { KeyPins, ReceiptVerifier, type Receipt } from "./receipts.js";
export { InsightClient, MAX_LABELS, OPERATIONS, VERSION, type ClientOptions, type Evaluation } from "./client.js";
