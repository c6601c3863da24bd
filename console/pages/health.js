// Health: readiness and the store's writes on this instance since it started.
import { api } from "../api.js";
import { el, fmt } from "../format.js";
import { failed } from "../app.js";

export function healthPage(root) {
  let stopped = false, timer = null;
  const body = el("div", { id: "health" }, el("p", {}, "Loading…"));
  root.append(el("h2", {}, "Health"), body);

  const tile = (label, value, state) => el("div", { class: `tile ${state || ""}`.trim() },
    el("span", { class: "tile-label" }, label), el("span", { class: "tile-value" }, value));

  async function refresh() {
    try {
      const h = await api("/admin/v1/health");
      if (stopped) return;
      const s = h.store;
      body.replaceChildren(
        el("p", { class: "lead" }, `This instance, since it started ${fmt.time(h.startedAt)}. Other instances of a cluster report their own.`),
        el("div", { class: "tiles" },
          tile("Ready for traffic", h.ready ? "yes" : "no — see the daemon's log", h.ready ? "good" : "bad"),
          tile("Velocity", h.velocity === "ready" ? "ready" : "rebuilding (no escalation yet)", h.velocity === "ready" ? "good" : "warn"),
          tile("Store reachable", s.reachable ? "yes" : "no — requests that need it answer 503", s.reachable ? "good" : "bad"),
          tile("Writes committed", fmt.int(s.writesCommitted)),
          tile("Commits", fmt.int(s.commits)),
          tile("Write failures", fmt.int(s.writeFailures), s.writeFailures > 0 ? "bad" : "good"),
          tile("Write queue depth", fmt.int(s.queueDepth), s.queueDepth > 100 ? "warn" : null)));
    } catch (error) { if (!stopped) failed(error); }
    if (!stopped) timer = setTimeout(refresh, 5000);
  }
  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
