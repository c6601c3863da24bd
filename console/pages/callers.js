// Callers: every caller of the admin's tenant with its live rate-limit state, refreshed every
// few seconds; a caller's detail with its recent throttling, quota change, reset and key revocation.
import { api } from "../api.js";
import { el, fmt, table, empty } from "../format.js";
import { notify, confirmAction, failed } from "../app.js";

const REFRESH_MS = 3000;

export function callersPage(root) {
  let selected = null;   // callerId whose detail is open
  let latest = [];       // the last answer's entries
  let timer = null;
  let stopped = false;

  const updated = el("p", { class: "updated", "aria-live": "off" }, "Loading…");
  const list = el("div", { id: "callers-list" });
  const detail = el("section", { id: "caller-detail", class: "card", "aria-labelledby": "detail-title", hidden: true });
  root.append(
    el("div", { class: "page-head" }, el("h2", {}, "Callers"), updated),
    el("p", { class: "lead" }, "Every caller of your tenant with its rate limit now. Penalties follow overdue consumption reports (docs/rate-limits.md)."),
    list, detail);

  function penaltyText(rl) {
    return rl.penalty.step === 0 ? "none" : `step ${fmt.int(rl.penalty.step)} of ${fmt.int(rl.penalty.maxStep)}`;
  }

  function row({ caller, rateLimit: rl }) {
    const throttled = rl.penalty.step > 0;
    return {
      attributes: { "data-caller-id": caller.callerId, class: throttled ? "penalised" : null },
      cells: [
        el("button", { type: "button", class: "link", "aria-label": `Details of ${caller.name}`,
                       onclick: () => open(caller.callerId) }, caller.name),
        caller.environment,
        caller.roles.join(", "),
        fmt.rate(caller.rate),
        fmt.int(caller.burst),
        `${fmt.int(rl.tokens)} of ${fmt.int(rl.effectiveBurst)}`,
        el("span", { class: throttled ? "badge warn" : "badge" }, penaltyText(rl)),
        throttled ? rl.penalty.why : "–",
        el("span", { class: rl.window.overdue > rl.window.overdueAllowance ? "overdue strong" : "overdue" }, fmt.int(rl.window.overdue)),
        fmt.int(rl.window.pending),
        el("button", { type: "button", "aria-label": `Reset ${caller.name}`, onclick: () => reset(caller) }, "Reset"),
      ],
    };
  }

  function renderList() {
    if (!latest.length) {
      list.replaceChildren(empty("This tenant has no callers yet. Create one on the daemon's host: insightctl callers create --name NAME --roles evaluate --environment sandbox"));
      return;
    }
    list.replaceChildren(table("Callers and their rate limits",
      ["Name", "Environment", "Roles", "Rate", "Burst", "Bucket now", "Penalty", "Why", "Overdue", "Pending", "Action"],
      latest.map(row), { numeric: [3, 4, 5, 8, 9] }));
  }

  async function refresh() {
    try {
      const answer = await api("/admin/v1/rate-limits");
      if (stopped) return;
      latest = answer.callers;
      renderList();
      updated.textContent = `Updated ${fmt.time(new Date().toISOString())}; refreshed every ${REFRESH_MS / 1000} s.`;
      if (selected) renderStatus();
    } catch (error) {
      if (!stopped) failed(error);
    }
    if (!stopped) timer = setTimeout(refresh, REFRESH_MS);
  }

  function entry(id) { return latest.find((e) => e.caller.callerId === id); }

  // The detail: a status part re-drawn on each refresh, and forms drawn once.
  const status = el("div", { id: "caller-status" });
  const keys = el("div", { id: "caller-keys" });
  const rateInput = el("input", { id: "rate-input", type: "number", min: "0.001", max: "1000000", step: "any", required: true });
  const burstInput = el("input", { id: "burst-input", type: "number", min: "1", max: "1000000", step: "1", required: true });
  const quotaForm = el("form", { class: "quota-form", onsubmit: (e) => { e.preventDefault(); changeQuota(); } },
    el("div", { class: "field" }, el("label", { for: "rate-input" }, "Rate (evaluations per second)"), rateInput),
    el("div", { class: "field" }, el("label", { for: "burst-input" }, "Burst"), burstInput),
    el("button", { type: "submit" }, "Change rate and burst"));
  const title = el("h3", { id: "detail-title", tabindex: "-1" });
  detail.append(
    el("div", { class: "page-head" }, title, el("button", { type: "button", onclick: close }, "Close details")),
    status, el("h4", {}, "Rate and burst"), quotaForm, el("h4", {}, "Keys"), keys);

  function renderStatus() {
    const e = entry(selected);
    if (!e) { status.replaceChildren(empty("This caller is no longer listed.")); return; }
    const rl = e.rateLimit, t = rl.throttled, w = rl.window;
    status.replaceChildren(
      el("dl", { class: "facts" },
        el("dt", {}, "Effective rate"), el("dd", {}, `${fmt.rate(rl.effectiveRate)} (configured ${fmt.rate(rl.policy.rate)})`),
        el("dt", {}, "Penalty"), el("dd", {}, `${penaltyText(rl)} — ${rl.penalty.why}`),
        el("dt", {}, "Recent throttling"), el("dd", { id: "recent-throttling" },
          t.count === 0 ? "Not throttled since the last reset."
            : `${fmt.int(t.count)} requests refused; last ${fmt.time(t.lastThrottledAt)} (${t.lastReason || "rate"})`),
        el("dt", {}, "Reports in the window"), el("dd", {},
          `${fmt.int(w.evaluations)} evaluations: ${fmt.int(w.onTime)} on time, ${fmt.int(w.late)} late, ` +
          `${fmt.int(w.overdue)} overdue (allowance ${fmt.int(w.overdueAllowance)}), ${fmt.int(w.pending)} pending`),
        el("dt", {}, "Counted at"), el("dd", {}, fmt.time(w.countedAt))));
  }

  async function loadKeys() {
    try {
      const answer = await api(`/admin/v1/callers/${encodeURIComponent(selected)}/keys`);
      keys.replaceChildren(answer.keys.length === 0 ? empty("This caller has no keys.") :
        table("Keys of this caller", ["Key id", "Created", "Revoked", "Action"], answer.keys.map((k) => [
          k.keyId, fmt.time(k.createdAt), k.revokedAt ? fmt.time(k.revokedAt) : "no",
          k.revokedAt ? "–" : el("button", { type: "button", onclick: () => revoke(k.keyId) }, "Revoke"),
        ])));
    } catch (error) { failed(error); }
  }

  function open(id) {
    selected = id;
    const e = entry(id);
    title.textContent = `Caller ${e.caller.name}`;
    rateInput.value = e.caller.rate;
    burstInput.value = e.caller.burst;
    renderStatus();
    detail.hidden = false;
    keys.replaceChildren(el("p", {}, "Loading keys…"));
    loadKeys();
    title.focus();
  }

  function close() { selected = null; detail.hidden = true; }

  async function reset(caller) {
    if (!await confirmAction("Reset rate limit", `Reset the rate limit of ${caller.name}? Its penalty is cleared and its overdue reports so far forgiven; its bucket is not refilled, it refills at the caller's rate.`, "Reset")) return;
    try {
      const state = await api(`/admin/v1/callers/${encodeURIComponent(caller.callerId)}/rate-limit/reset`, { method: "POST" });
      notify(`${caller.name} was reset: penalty ${penaltyText(state)}, ${fmt.int(state.tokens)} tokens in the bucket.`);
      clearTimeout(timer); refresh();
    } catch (error) { failed(error); }
  }

  async function changeQuota() {
    const e = entry(selected);
    const rate = Number(rateInput.value), burst = Number(burstInput.value);
    if (!quotaForm.reportValidity()) return;
    if (!await confirmAction("Change rate and burst", `Set ${e.caller.name} to ${fmt.rate(rate)} with a burst of ${fmt.int(burst)}?`, "Change")) return;
    try {
      const caller = await api(`/admin/v1/callers/${encodeURIComponent(selected)}`, { method: "PATCH", body: { rate, burst } });
      notify(`${caller.name} now has a rate of ${fmt.rate(caller.rate)} and a burst of ${fmt.int(caller.burst)} (in effect within seconds).`);
      clearTimeout(timer); refresh();
    } catch (error) { failed(error); }
  }

  async function revoke(keyId) {
    const e = entry(selected);
    if (!await confirmAction("Revoke key", `Revoke key ${keyId} of ${e.caller.name}? Requests with it are refused within seconds; this cannot be undone.`, "Revoke")) return;
    try {
      const key = await api(`/admin/v1/callers/${encodeURIComponent(selected)}/keys/${encodeURIComponent(keyId)}/revoke`, { method: "POST" });
      notify(`Key ${key.keyId} of ${e.caller.name} is revoked (${fmt.time(key.revokedAt)}).`);
      loadKeys();
    } catch (error) { failed(error); }
  }

  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
