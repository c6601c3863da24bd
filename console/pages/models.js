// Models: the versions served (current, shadows, withdrawn) and the performance report of the
// feedback loop (docs/operations.md "Model performance") as tables and charts; immature periods are
// marked.
import { api } from "../api.js";
import { el, fmt, table, empty } from "../format.js";
import { failed } from "../app.js";
import { barChart, stackedChart } from "../charts.js";

const day = (date) => date.toISOString().slice(0, 10);
const CATEGORIES = ["payment", "account", "resourceUse", "communication", "other"];

export function modelsPage(root) {
  let stopped = false;
  const versions = el("div", { id: "model-versions" }, el("p", {}, "Loading…"));
  const report = el("div", { id: "model-report" });
  const today = new Date();
  const from = el("input", { id: "from", type: "date", required: true, value: day(new Date(today - 29 * 86400000)) });
  const to = el("input", { id: "to", type: "date", required: true, value: day(today) });
  const category = el("select", { id: "category" }, el("option", { value: "" }, "every category"),
    CATEGORIES.map((c) => el("option", { value: c }, c)));
  const form = el("form", { class: "report-form", onsubmit: (e) => { e.preventDefault(); load(); } },
    el("div", { class: "field" }, el("label", { for: "from" }, "From"), from),
    el("div", { class: "field" }, el("label", { for: "to" }, "To (at most 92 days)"), to),
    el("div", { class: "field" }, el("label", { for: "category" }, "Category"), category),
    el("button", { type: "submit" }, "Show report"));
  root.append(el("h2", {}, "Models"),
    el("section", { class: "card" }, el("h3", {}, "Versions"), versions),
    el("section", { class: "card" }, el("h3", {}, "Performance"),
      el("p", { class: "lead" }, "Per model version and category, over the evaluations of the period. Precision and recall carry 95 % Wilson intervals; fraud labels arrive late, so figures over evaluations younger than the maturity period are marked immature."),
      form, report));

  (async () => {
    try {
      const answer = await api("/admin/v1/models");
      if (stopped) return;
      versions.replaceChildren(answer.versions.length === 0
        ? empty("No model is loaded. Put a model directory in INSIGHTD_MODELS_DIR and reload the daemon (SIGHUP).")
        : table("Model versions loaded", ["Version", "Status", "Current", "Shadow", "Trees", "Features"],
            answer.versions.map((v) => [v.version, v.status, v.current ? "current" : "–", v.shadow ? "shadow" : "–",
                                        fmt.int(v.trees), fmt.int(v.features)]), { numeric: [4, 5] }));
    } catch (error) { failed(error); }
  })();

  async function load() {
    if (!form.reportValidity()) return;
    // The key's own environment: an admin key reads no other (docs/api.md "Admin API").
    const query = new URLSearchParams({ from: from.value, to: to.value });
    if (category.value) query.set("category", category.value);
    report.replaceChildren(el("p", {}, "Loading…"));
    try {
      const answer = await api(`/admin/v1/model-performance?${query}`);
      if (!stopped) render(answer);
    } catch (error) {
      report.replaceChildren();
      failed(error);
    }
  }

  function interval(p) {
    if (p.value === null) return `– (no sample)`;
    return `${fmt.pct(p.value)} [${fmt.pct(p.interval.low)}–${fmt.pct(p.interval.high)}] of ${fmt.int(p.sample)}`;
  }

  function render(answer) {
    const rows = answer.versions;
    if (rows.length === 0) {
      report.replaceChildren(empty(`No evaluations in ${answer.environment} from ${answer.from} to ${answer.to}. Choose another period.`));
      return;
    }
    // A shadow version is scored beside the current one and never answered (INSIGHTD_MODEL_SHADOW).
    const name = (r) => `${r.modelVersion}${r.role === "shadow" ? " (shadow)" : ""} · ${r.category}`;
    // Drift: the population stability index of the version's scores against its reference.
    // Above 0.2 the scores have shifted from the reference (docs/operations.md, "Drift").
    const drift = (r) => (r.psi && r.psi.value !== null && r.psi.value !== undefined
      ? el("span", { class: r.psi.value > 0.2 ? "badge warn" : "badge" }, `${fmt.num(r.psi.value)}${r.psi.value > 0.2 ? " (shifted)" : ""}`)
      : "no reference");
    const maturity = el("p", { class: answer.mature ? "mature" : "immature-note" }, answer.mature
      ? `Every evaluation of the period is older than ${fmt.int(answer.maturityDays)} days: figures are mature.`
      : `Immature: evaluations after ${fmt.time(answer.matureBefore)} may still receive fraud labels (maturity ${fmt.int(answer.maturityDays)} days). Read precision and recall as provisional.`);
    const summary = table(`Performance ${answer.from} to ${answer.to} (${answer.environment})`,
      ["Version · category", "Evaluations", "Unknown", "Medium", "High", "Labelled fraud", "Precision (medium or high)",
       "Recall (medium or high)", "Mature share"],
      rows.map((r) => {
        const fraud = r.labelled.confirmedFraud;
        const immature = r.matureShare < 1;
        return { attributes: { class: immature ? "immature" : null }, cells: [
          name(r), fmt.int(r.evaluations), fmt.int(r.values.unknown), fmt.int(r.values.medium), fmt.int(r.values.high),
          fmt.int((fraud.unknown || 0) + (fraud.medium || 0) + (fraud.high || 0)),
          interval(r.precision.mediumOrHigh), interval(r.recall.mediumOrHigh),
          el("span", { class: immature ? "badge warn" : "badge" }, `${fmt.pct(r.matureShare)}${immature ? " (immature)" : ""}`),
        ] };
      }), { numeric: [1, 2, 3, 4, 5] });
    const proportion = (label, p, immature) => ({
      label, value: p.value, low: p.interval && p.interval.low, high: p.interval && p.interval.high,
      className: immature ? "immature" : "", note: p.value === null ? "no sample" : `(n = ${fmt.int(p.sample)})`,
    });
    const charts = el("div", { class: "charts" },
      stackedChart("Values answered per version and category", rows.map((r) => ({ label: name(r), values: r.values })),
        [{ name: "unknown", className: "v-unknown" }, { name: "medium", className: "v-medium" }, { name: "high", className: "v-high" }],
        { format: fmt.int }),
      barChart("Precision of medium or high, with 95 % Wilson intervals", rows.map((r) => proportion(name(r), r.precision.mediumOrHigh, r.matureShare < 1)),
        { max: 1, format: fmt.pct, description: "Hatched bars: immature." }),
      barChart("Recall of confirmed fraud at medium or high, with 95 % Wilson intervals", rows.map((r) => proportion(name(r), r.recall.mediumOrHigh, r.matureShare < 1)),
        { max: 1, format: fmt.pct }),
      barChart("Precision and recall of high", rows.flatMap((r) => [
        proportion(`${name(r)} precision`, r.precision.high, r.matureShare < 1),
        proportion(`${name(r)} recall`, r.recall.high, r.matureShare < 1)]), { max: 1, format: fmt.pct }));
    const drifts = table("Drift of each version's scores against its reference (PSI: below 0.1 stable, above 0.2 shifted)",
      ["Version · category", "PSI", "Scores"],
      rows.map((r) => [name(r), drift(r), fmt.int(r.psi ? r.psi.sample : null)]), { numeric: [2] });
    // The same per capture kit (interaction.source), where callers name theirs: a kit version
    // whose flagged share or PSI stands apart from its platform's others moved the scores.
    const kits = rows.flatMap((r) => r.bySource.map((k) => {
      const flagged = k.evaluations ? (k.values.medium + k.values.high) / k.evaluations : null;
      return [name(r), k.platform === null ? "no source" : `${k.platform} · ${k.kit} ${k.kitVersion}`, fmt.int(k.evaluations),
              flagged === null ? "–" : fmt.pct(flagged), drift(k)];
    }));
    const byKit = kits.length === 0 ? [] : [table("By capture kit (PSI of a web kit against the web profile's reference)",
      ["Version · category", "Capture kit", "Evaluations", "Medium or high", "PSI"], kits, { numeric: [2, 3] })];
    report.replaceChildren(maturity, summary, drifts, ...byKit, charts);
  }

  load();
  return { stop() { stopped = true; } };
}
