/**
 * The TypeScript client's conformance driver (clients/conformance/README.md): `describe` prints
 * the client's operations and enumerations; `run` executes clients/conformance/scenario.json
 * against the daemon the environment names, through the client's public API only.
 */
import { readFileSync } from "node:fs";
import { execSync } from "node:child_process";
import {
  BatchTooLargeError, REQUEST_MEMBERS, UnknownMemberError, DecisionAction, ENUMERATIONS, InsightClient, InsightdError, OPERATIONS, PROBLEM_ERRORS, ProblemError,
  ReceiptInvalidError, VERSION,
} from "../src/index.js";
import type { ClientOptions, Evaluation, EvaluationRequest, Label } from "../src/index.js";

type Step = Record<string, any>;
type Got = Record<string, any>;

class Failed extends Error {}
function check(condition: unknown, message: string): void {
  if (!condition) throw new Failed(message);
}
const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};

function describe(): void {
  const operations = Object.fromEntries(Object.entries(OPERATIONS).map(([id, [method, path]]) => [id, `${method} ${path}`]));
  console.log(JSON.stringify({ client: "typescript", version: VERSION, operations, enums: ENUMERATIONS,
    requestMembers: Object.fromEntries(Object.entries(REQUEST_MEMBERS).map(([schema, members]) => [schema, Object.keys(members)])) }, null, 1));
}

class Run {
  private readonly clients = new Map<string, InsightClient>();
  private readonly saved = new Map<string, Evaluation>();
  private readonly idempotencyKeys = new Map<string, string>();
  private readonly today = new Date().toISOString().slice(0, 10);

  constructor(private readonly scenario: { contexts: Record<string, EvaluationRequest>; steps: Step[] }) {}

  private client(keyName: string, via?: string, verify = true, pins: ClientOptions = {}, pin?: string): InsightClient {
    const slot = `${keyName}/${via}/${verify}/${pin}`;
    let client = this.clients.get(slot);
    if (!client) {
      const url = env(via === "tampering" ? "INSIGHT_TAMPERING_URL" : via === "rekeying" ? "INSIGHT_REKEYING_URL" : "INSIGHT_URL");
      client = new InsightClient(url, env(`INSIGHT_KEY_${keyName.toUpperCase()}`), { verifyReceipts: verify, ...pins });
      this.clients.set(slot, client);
    }
    return client;
  }

  /** The daemon's own keys (never a proxy's), pinned as the step says. */
  private async pins(pin?: string): Promise<ClientOptions> {
    if (pin === undefined) return {};
    const jwks = await new InsightClient(env("INSIGHT_URL"), "").signingKeys();
    return pin === "thumbprints" ? { pinnedThumbprints: jwks.keys.map((key) => key.kid) } : { pinnedKeys: jwks };
  }

  private callerId = (name: string) => env(`INSIGHT_CALLER_${name.toUpperCase()}`);
  private evaluation(name: string): Evaluation {
    const evaluation = this.saved.get(name);
    if (!evaluation) throw new Failed(`no saved evaluation ${name}`);
    return evaluation;
  }

  private request(step: Step): EvaluationRequest {
    const request = { ...this.scenario.contexts[step.context] };
    if (step.requestId !== undefined) {
      const name = `request:${step.requestId}`;
      if (!this.idempotencyKeys.has(name)) this.idempotencyKeys.set(name, `${step.requestId}-${crypto.randomUUID()}`);
      request.requestId = this.idempotencyKeys.get(name);
    }
    return request;
  }

  private readonly actions: Record<string, (step: Step) => Promise<Got>> = {
    catalog: async () => ({ catalog: await this.client("sandbox").catalog() }),
    signingKeys: async () => ({ jwks: await new InsightClient(env("INSIGHT_URL"), "").signingKeys() }),
    evaluate: async (step) => {
      const client = this.client(step.key, step.via, step.verify ?? true, await this.pins(step.pin), step.pin);
      const deadline = Date.now() + 15_000;
      let evaluation: Evaluation;
      for (;;) {
        evaluation = await client.evaluate(this.request(step), { override: step.override });
        const from = step.untilKidDiffersFrom;
        if (from === undefined || evaluation.receipt?.kid !== this.evaluation(from).receipt?.kid || Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      if (step.save) this.saved.set(step.save, evaluation);
      return { evaluation };
    },
    report: async (step) => {
      const evaluation = this.evaluation(step.evaluation);
      await this.client(step.key).reportConsumption(evaluation.eventId, step.status, [evaluation.insights[0].insightId]);
      return { recorded: true };
    },
    label: async (step) => {
      const labels: Label[] = [];
      for (let i = 0; i < (step.repeat ?? 1); i++) {
        for (const item of step.labels) {
          const label: Label = { insightId: item.insightId ?? this.evaluation(item.insightOf).insights[0].insightId, outcome: item.outcome, discoveredAt: this.today };
          if (item.fraudType) label.fraudType = item.fraudType;
          labels.push(label);
        }
      }
      if (!this.idempotencyKeys.has(step.idempotencyKey)) this.idempotencyKeys.set(step.idempotencyKey, `${step.idempotencyKey}-${crypto.randomUUID()}`);
      return { labels: await this.client(step.key).submitLabels(labels, this.idempotencyKeys.get(step.idempotencyKey)) };
    },
    authorize: async (step) => ({ authorization: await this.client(step.key).setAuthorization(step.subject, step.status) }),
    queryAuthorization: async (step) => ({ authorization: await this.client(step.key).queryAuthorization(step.subject) }),
    transparency: async (step) => {
      const transparency = await this.client(step.key).transparency(step.subject);
      return { transparency, authorization: transparency.authorization };
    },
    erase: async (step) => ({ erasure: await this.client(step.key).eraseSubject(step.subject) }),
    rateLimit: async (step) => ({ rateLimit: await this.client(step.key).callerRateLimit(this.callerId(step.caller)) }),
    rateLimits: async (step) => ({ callerIds: (await this.client(step.key).rateLimits()).map((entry) => entry.caller.callerId) }),
    resetRateLimit: async (step) => ({ rateLimit: await this.client(step.key).resetCallerRateLimit(this.callerId(step.caller)) }),
    callers: async (step) => ({ callerIds: (await this.client(step.key).callers()).map((caller) => caller.callerId) }),
    caller: async (step) => ({ caller: await this.client(step.key).caller(this.callerId(step.caller)) }),
    updateQuota: async (step) => ({ caller: await this.client(step.key).updateCallerQuota(this.callerId(step.caller), { burst: step.burst }) }),
    keys: async (step) => ({ keys: await this.client(step.key).callerKeys(this.callerId(step.caller)) }),
    revokeKey: async (step) => {
      const client = this.client(step.key);
      const callerId = this.callerId(step.caller);
      const keys = await client.callerKeys(callerId);
      check(keys.length === 1, `the caller has ${keys.length} keys, not 1`);
      return { revokedKey: await client.revokeCallerKey(callerId, keys[0].keyId) };
    },
    rotateSigningKey: async () => {
      execSync(env("INSIGHT_ROTATE_COMMAND"), { stdio: "inherit" });
      return {};
    },
    receiptHeads: async (step) => {
      const receipt = this.evaluation(step.evaluation).receipt!;
      return { heads: await this.client(step.key).receiptHeads({ instance: receipt.head.instance, from: receipt.head.sequence, limit: 1 }) };
    },
  };

  private expect(step: Step, got: Got, error: unknown): void {
    const expect: Step = step.expect ?? {};
    if (expect.problem) {
      const want = expect.problem;
      check(error instanceof ProblemError, `expected problem ${want.code}, got ${error ?? JSON.stringify(got).slice(0, 200)}`);
      const problem = error as ProblemError;
      check(problem.code === want.code && problem.constructor === PROBLEM_ERRORS[want.code as keyof typeof PROBLEM_ERRORS],
        `expected problem ${want.code}, got ${problem.code} (${problem.name})`);
      check(problem.status === want.status, `expected status ${want.status}, got ${problem.status}`);
      if (want.retryAfter) check(problem.retryAfter !== undefined && problem.retryAfter > 0, "no retryAfter");
      if ("field" in want) check(problem.field === want.field, `field ${problem.field}`);
      if ("reason" in want) check(problem.reason === want.reason, `reason ${problem.reason}`);
      if ("attempts" in expect) check(problem.attempts === expect.attempts, `${problem.attempts} attempts`);
      return;
    }
    if (expect.clientError) {
      const classes: Record<string, Function> = { receiptInvalid: ReceiptInvalidError, batchTooLarge: BatchTooLargeError, unknownMember: UnknownMemberError };
      check(error instanceof classes[expect.clientError], `expected ${expect.clientError}, got ${error ?? "an answer"}`);
      if (expect.path !== undefined) check((error as UnknownMemberError).path === expect.path, `expected path ${expect.path}, got ${(error as UnknownMemberError).path}`);
      return;
    }
    if (error !== undefined) throw error;
    const evaluation: Evaluation | undefined = got.evaluation;
    if (evaluation) {
      const verified = evaluation.receipt !== undefined;
      check(verified === (expect.verified ?? true), `verified is ${verified}`);
      const first = evaluation.insights[0];
      if ("environment" in expect) check(evaluation.environment === expect.environment, `environment ${evaluation.environment}`);
      check(evaluation.tenant === env("INSIGHT_TENANT"), `tenant ${evaluation.tenant}`);
      if ("insights" in expect) check(evaluation.insights.length === expect.insights, `${evaluation.insights.length} insights`);
      if ("value" in expect) check(first.outcome.value === expect.value, `value ${first.outcome.value}`);
      if ("reason" in expect) check(first.reasons?.includes(expect.reason), `reasons ${first.reasons}`);
      if ("insightError" in expect) check(first.outcome.error?.code === expect.insightError, `outcome ${JSON.stringify(first.outcome)}`);
      if ("decision" in expect) check(evaluation.decision.action === expect.decision, `decision ${evaluation.decision.action}`);
      check(Object.values(DecisionAction).includes(evaluation.decision.action as any), `decision ${evaluation.decision.action}`);
      if ("kidDiffersFrom" in expect) check(evaluation.receipt?.kid !== this.evaluation(expect.kidDiffersFrom).receipt?.kid, "the signing key did not change");
      if ("attempts" in expect) check(evaluation.attempts === expect.attempts, `${evaluation.attempts} attempts`);
      if ("replayed" in expect) check(evaluation.replayed === expect.replayed, `replayed is ${evaluation.replayed}`);
      if ("sameEventAs" in expect) check(evaluation.eventId === this.evaluation(expect.sameEventAs).eventId, "another eventId");
    }
    if ("insightTypes" in expect) {
      const types = got.catalog.insights.map((entry: { type: string }) => entry.type);
      check(expect.insightTypes.every((t: string) => types.includes(t)), `catalog types ${types}`);
    }
    if ("minKeys" in expect) check(got.jwks.keys.length >= expect.minKeys, `${got.jwks.keys.length} keys`);
    if ("recorded" in expect) check(got.recorded === true, "not recorded");
    if ("results" in expect) {
      const statuses = got.labels.results.map((result: { status: string }) => result.status);
      check(JSON.stringify(statuses) === JSON.stringify(expect.results), `label results ${statuses}`);
      check(got.labels.summary.accepted === statuses.filter((s: string) => s === "accepted").length, "summary");
    }
    if ("replayed" in expect && got.labels) check(got.labels.replayed === expect.replayed, `replayed is ${got.labels.replayed}`);
    if ("authorization" in expect) check(got.authorization?.status === expect.authorization, `authorization ${got.authorization?.status}`);
    if ("minEvaluations" in expect) check(got.transparency.evaluations.length >= expect.minEvaluations, `${got.transparency.evaluations.length} evaluations`);
    if ("erasedEvaluations" in expect) {
      const erasure = got.erasure;
      check(erasure.evaluations === expect.erasedEvaluations && erasure.authorizations === expect.erasedAuthorizations,
        `erased ${erasure.evaluations} evaluations, ${erasure.authorizations} authorizations`);
      check(erasure.tenant === env("INSIGHT_TENANT") && erasure.hashKeys >= 1, `erasure ${JSON.stringify(erasure)}`);
    }
    if ("minThrottled" in expect) check(got.rateLimit.throttled.count >= expect.minThrottled, `throttled ${got.rateLimit.throttled.count}`);
    if ("includesCaller" in expect) check(got.callerIds.includes(this.callerId(expect.includesCaller)), "caller not listed");
    if ("caller" in expect) {
      const owner = got.caller ?? got.rateLimit;
      check(owner.callerId === this.callerId(expect.caller), `caller ${owner.callerId}`);
    }
    if ("environment" in expect && got.caller) check(got.caller.environment === expect.environment, `environment ${got.caller.environment}`);
    if ("burst" in expect) check(got.caller.burst === expect.burst, `burst ${got.caller.burst}`);
    if ("keys" in expect) {
      check(got.keys.length === expect.keys, `${got.keys.length} keys`);
      check(got.keys.filter((key: { revokedAt: string | null }) => key.revokedAt).length === expect.revoked, "revoked keys");
    }
    if ("revoked" in expect && got.revokedKey) check(got.revokedKey.revokedAt !== null, "revokedAt is null");
    if ("includesHeadOf" in expect) {
      const jws = this.evaluation(expect.includesHeadOf).receipt?.headJws;
      check(got.heads.heads.some((head: { head: string }) => head.head === jws), "the receipt's head is not listed");
    }
  }

  async step(step: Step): Promise<void> {
    let got: Got = {};
    let error: unknown;
    try {
      got = await this.actions[step.do](step);
    } catch (raised) {
      if (!(raised instanceof InsightdError)) throw raised;
      error = raised;
    }
    this.expect(step, got, error);
  }
}

async function run(): Promise<boolean> {
  const scenario = JSON.parse(readFileSync(env("INSIGHT_SCENARIO"), "utf8"));
  const runner = new Run(scenario);
  let passed = 0, failed = 0;
  for (const step of scenario.steps as Step[]) {
    try {
      await runner.step(step);
      passed++;
      console.log(`ok    ${step.id}`);
    } catch (error) {
      failed++;
      console.log(`FAIL  ${step.id}: ${(error as Error).name}: ${(error as Error).message}`);
    }
  }
  console.log(`typescript: ${passed} passed, ${failed} failed`);
  return failed === 0;
}

const command = process.argv[2];
if (command === "describe") describe();
else if (command === "run") process.exitCode = (await run()) ? 0 : 1;
else {
  console.error("usage: driver.js describe|run");
  process.exitCode = 2;
}
