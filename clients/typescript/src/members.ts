/**
 * The members of each request schema of openapi/openapi.json (every one is closed:
 * `additionalProperties: false`), and the check that refuses a request naming another. TypeScript
 * types catch a misspelt member only in a literal; a request built from JSON (the capture kit's
 * object, forwarded unchanged) or from `any` reaches the client unchecked, and a member the API
 * lacks there is a mistake (`interaction.interaction`: the kit's object wrapped once too often).
 * Answers are not checked: a member a later insightd adds must not break this client.
 */
import { UnknownMemberError } from "./errors.js";

/** Each member and, when it is an object (or an array of objects, `[]`), its schema. */
export const REQUEST_MEMBERS: Record<string, Record<string, string | null>> = {
  EvaluationRequest: { requestId: null, operationCategory: null, insights: "InsightRequest[]", subject: "Subject", interaction: "Interaction", transaction: "Transaction", initiator: "Initiator" },
  InsightRequest: { type: null, schemaVersion: null, modelVersion: null },
  Subject: { account: null, device: null, counterparty: null },
  // `summary`'s feature names are insightd's to judge (422 naming the feature).
  Interaction: { events: "InteractionEvent[]", summary: null, device: "DeviceFacts", source: "InteractionSource" },
  InteractionEvent: { t: null, type: null, field: null },
  DeviceFacts: { activeCall: null, callStartedBeforeSession: null, screenSharing: null, remoteAccessApp: null },
  InteractionSource: { kit: null, version: null, platform: null, droppedEvents: null },
  Transaction: { newCounterparty: null, amountBand: null },
  Initiator: { kind: null, agent: "AgentFacts" },
  AgentFacts: { userRequested: null, untrustedContext: null, argumentsFromUntrustedContext: null, sideEffects: null },
  Label: { insightId: null, outcome: null, fraudType: null, discoveredAt: null },
};

/** Throws UnknownMemberError for the first member of `value` (at `path`) that `schema` lacks. */
export function checkMembers(value: unknown, schema: string, path: string): void {
  if (schema.endsWith("[]")) {
    if (Array.isArray(value)) value.forEach((item, index) => checkMembers(item, schema.slice(0, -2), `${path}[${index}]`));
    return;
  }
  // Not an object: a type error insightd names (422); only members can vanish unseen.
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  const members = REQUEST_MEMBERS[schema];
  for (const [name, member] of Object.entries(value)) {
    const at = path ? `${path}.${name}` : name;
    if (!(name in members)) throw new UnknownMemberError(at, schema, Object.keys(members));
    const child = members[name];
    if (child !== null && member !== undefined && member !== null) checkMembers(member, child, at);
  }
}
