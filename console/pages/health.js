// Health: readiness and whether the store's writes fail or queue on this instance (how many it
// committed counts every tenant: the operator reads that on the metrics listener), and where
// each instance's chain of receipt heads stands (the latest signed head of each).
import { api } from "../api.js";
import { el, empty, fmt, table } from "../format.js";
import { failed } from "../app.js";

export function healthPage(root) {
  let stopped = false, timer = null;
  const body = el("div", { id: "health" }, el("p", {}, "Loading…"));
  root.append(el("h2", {}, "Health"), body);

  const tile = (label, value, state) => el("div", { class: `tile ${state || ""}`.trim() },
    el("span", { class: "tile-label" }, label), el("span", { class: "tile-value" }, value));

  // The key that signed a head: its JWS header's kid (base64url JSON).
  const keyOf = (jws) => {
    try { return JSON.parse(atob(jws.split(".")[0].replace(/-/g, "+").replace(/_/g, "/"))).kid; } catch { return "–"; }
  };
  const chains = (heads) => heads.length === 0
    ? empty("No receipt head yet: each instance signs one per commit of evaluations.")
    : table("Receipt chains: the latest signed head of each instance", ["Instance", "Head", "Answers in its tree", "Made", "Signed by"],
      heads.map((h) => ({ attributes: { "data-instance": h.instance },
                          cells: [h.instance, fmt.int(h.sequence), fmt.int(h.size), fmt.time(h.time), keyOf(h.head)] })),
      { numeric: [1, 2] });

  async function refresh() {
    try {
      const [h, receipts] = await Promise.all([api("/admin/v1/health"), api("/v1/receipts/heads")]);
      if (stopped) return;
      const s = h.store;
      body.replaceChildren(
        el("p", { class: "lead" }, `This instance, since it started ${fmt.time(h.startedAt)}. Other instances of a cluster report their own.`),
        el("div", { class: "tiles" },
          tile("Ready for traffic", h.ready ? "yes" : "no — see the daemon's log", h.ready ? "good" : "bad"),
          tile("Velocity", h.velocity === "ready" ? "ready" : "rebuilding (no escalation yet)", h.velocity === "ready" ? "good" : "warn"),
          tile("Store reachable", s.reachable ? "yes" : "no — requests that need it answer 503", s.reachable ? "good" : "bad"),
          tile("Write failures", fmt.int(s.writeFailures), s.writeFailures > 0 ? "bad" : "good"),
          tile("Write queue depth", fmt.int(s.queueDepth), s.queueDepth > 100 ? "warn" : null)),
        el("h3", {}, "Receipts"),
        el("p", {}, "Each instance proves its answers with a chain of signed heads; check every chain with insightctl receipts verify."),
        chains(receipts.heads));
    } catch (error) { if (!stopped) failed(error); }
    if (!stopped) timer = setTimeout(refresh, 5000);
  }
  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
