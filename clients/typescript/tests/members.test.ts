// A request the caller built with a member the API lacks is refused before anything is sent,
// naming the member's path; the capture kit's object forwarded unchanged passes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { InsightClient, UnknownMemberError } from "../src/index.js";
import type { EvaluationRequest } from "../src/index.js";

// The web kit's object, as InsightCapture's session.finish() returns it (JSON from the browser).
const kit = JSON.parse('{"events": [{"t": 0, "type": "sessionStart"}, {"t": 900, "type": "submit"}], "source": {"kit": "insight-capture-web", "version": "1.0.0", "platform": "web"}}');
const base = { operationCategory: "payment", insights: [{ type: "isLikelyBeingCoached", schemaVersion: 1 }] };

/** The error `evaluate` throws for `request`, and the requests a real socket received meanwhile. */
async function refusal(request: unknown): Promise<{ error: unknown; requests: number }> {
  let requests = 0;
  const server = createServer((incoming, response) => { requests++; incoming.on("data", () => {}); incoming.on("end", () => response.destroy()); });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const client = new InsightClient(`http://127.0.0.1:${server.address().port}`, "key", { maxRetries: 0, timeoutMs: 2000 });
    const error = await client.evaluate(request as EvaluationRequest).then(() => undefined, (caught: unknown) => caught);
    return { error, requests };
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

test("the kit's object wrapped twice is refused as interaction.interaction, unsent", async () => {
  const { error, requests } = await refusal({ ...base, interaction: { interaction: kit } });
  assert.ok(error instanceof UnknownMemberError, `got ${error}`);
  const refused = error as UnknownMemberError;
  assert.equal(refused.path, "interaction.interaction");
  assert.ok(refused.message.includes("interaction.interaction"), refused.message);
  assert.equal(requests, 0);
});

test("a misspelt member is refused by its path, unsent", async () => {
  const { error, requests } = await refusal({ ...base, transaction: { newCounterParty: true } });
  assert.ok(error instanceof UnknownMemberError, `got ${error}`);
  assert.equal((error as UnknownMemberError).path, "transaction.newCounterParty");
  assert.ok((error as UnknownMemberError).members.includes("newCounterparty"));
  assert.equal(requests, 0);
  const inEvent = await refusal({ ...base, interaction: { ...kit, events: [{ t: 0, type: "sessionStart", x: 1 }] } });
  assert.equal((inEvent.error as UnknownMemberError).path, "interaction.events[0].x");
});

test("the kit's object forwarded unchanged is sent", async () => {
  const { error, requests } = await refusal({ ...base, interaction: kit });
  assert.ok(!(error instanceof UnknownMemberError), `got ${error}`);
  assert.equal(requests, 1);
});
