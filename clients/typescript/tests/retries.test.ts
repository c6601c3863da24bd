// What the client sends again, against a real socket that reads each request and drops the
// connection without answering (the answer lost on the way back).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { InsightClient, TransportError } from "../src/index.js";
import type { ClientOptions } from "../src/index.js";

const request = { operationCategory: "payment", insights: [{ type: "isLikelyBeingCoached", schemaVersion: 1 }] };

async function sent(call: (client: InsightClient) => Promise<unknown>, options: ClientOptions = {}): Promise<number> {
  let requests = 0;
  const server = createServer((incoming, response) => {
    requests++;
    incoming.on("data", () => {});
    incoming.on("end", () => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const client = new InsightClient(`http://127.0.0.1:${server.address().port}`, "key", { maxRetries: 2, backoffMs: 0, timeoutMs: 2000, ...options });
    await assert.rejects(call(client), (error: unknown) => error instanceof TransportError && error.mayHaveReachedServer);
    return requests;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

test("an evaluation that may have arrived is not sent again", async () => {
  assert.equal(await sent((c) => c.evaluate(request)), 1);
});

test("only an evaluation with your requestId is sent again", async () => {
  assert.equal(await sent((c) => c.evaluate({ ...request, requestId: "txn-1" })), 3);
  assert.equal(await sent((c) => c.evaluate({ ...request, requestId: "txn-1" }), { idempotentEvaluations: false }), 1);
});

test("reads and idempotent writes are sent again", async () => {
  assert.equal(await sent((c) => c.catalog()), 3);
  assert.equal(await sent((c) => c.reportConsumption("e", "notUsedNotNeeded")), 3);
});
