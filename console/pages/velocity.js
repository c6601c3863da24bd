// Velocity: the rules that fired and the shadow decision policy's disagreements, for this
// tenant on this instance since it started (the counters /metrics exposes).
import { api } from "../api.js";
import { el, fmt, table, empty } from "../format.js";
import { failed } from "../app.js";
import { barChart } from "../charts.js";

export function velocityPage(root) {
  let stopped = false, timer = null;
  const body = el("div", { id: "velocity" }, el("p", {}, "Loading…"));
  root.append(el("h2", {}, "Velocity"), body);

  async function refresh() {
    try {
      const answer = await api("/admin/v1/velocity");
      if (stopped) return;
      const scope = el("p", { class: "lead" },
        `Counts of this instance since it started (${fmt.time(answer.startedAt)}), for your tenant; each instance of a cluster counts its own (sum them in Prometheus).`);
      const rules = answer.rules.length === 0
        ? empty("No velocity rule has fired here yet. Rules fire when an account, device or counterparty is busier than its window allows (docs/velocity.md).")
        : [table("Velocity rules that fired", ["Rule", "Mode", "Count"],
            answer.rules.map((r) => [r.rule, r.mode === "shadow" ? "shadow (counted, not applied)" : "enforced", fmt.int(r.count)]), { numeric: [2] }),
           barChart("Rule hits", answer.rules.map((r) => ({ label: `${r.rule} (${r.mode})`, value: r.count,
             className: r.mode === "shadow" ? "immature" : "" })), { format: fmt.int })];
      const shadow = answer.shadowPolicyDisagreements.length === 0
        ? empty("No disagreement counted. With a shadow decision policy (INSIGHTD_DECISION_POLICY_SHADOW), evaluations on which it would answer otherwise are counted here.")
        : table("Shadow decision policy disagreements", ["Rule of the shadow's answer", "Shadow action", "Action in force", "Count"],
            answer.shadowPolicyDisagreements.map((d) => [d.rule, d.shadowAction, d.action, fmt.int(d.count)]), { numeric: [3] });
      body.replaceChildren(scope,
        el("section", { class: "card" }, el("h3", {}, "Rule hits"), rules),
        el("section", { class: "card" }, el("h3", {}, "Shadow policy disagreements"), shadow));
    } catch (error) { if (!stopped) failed(error); }
    if (!stopped) timer = setTimeout(refresh, 10000);
  }
  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
