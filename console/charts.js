// Charts as inline SVG drawn here (no library): horizontal bars with optional 95 % intervals.
const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * Bars for `rows` [{label, value, low?, high?, className?, note?}], value on a 0..max scale;
 * an interval is drawn as a whisker. `format` writes a value for people.
 */
export function barChart(title, rows, { max, format = String, description } = {}) {
  const scale = max ?? Math.max(1, ...rows.map((r) => r.high ?? r.value ?? 0));
  const labelWidth = labelsWidth(rows), barWidth = 360, valueWidth = 150, rowHeight = 26;
  const width = labelWidth + barWidth + valueWidth;
  const height = rows.length * rowHeight + 28;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart",
                             "aria-label": `${title}${description ? ". " + description : ""}` });
  chart.append(svg("title", {}, title));
  // Axis: 0, half, full.
  for (const fraction of [0, 0.5, 1]) {
    const x = labelWidth + fraction * barWidth;
    chart.append(svg("line", { x1: x, x2: x, y1: 4, y2: height - 20, class: "grid" }));
    chart.append(svg("text", { x, y: height - 6, class: "axis", "text-anchor": "middle" }, format(fraction * scale)));
  }
  rows.forEach((row, i) => {
    const y = 6 + i * rowHeight;
    chart.append(svg("text", { x: labelWidth - 8, y: y + 14, class: "label", "text-anchor": "end" }, row.label));
    if (row.value === null || row.value === undefined) {
      chart.append(svg("text", { x: labelWidth + 4, y: y + 14, class: "none" }, row.note || "no sample"));
      return;
    }
    const w = Math.max(1, (row.value / scale) * barWidth);
    chart.append(svg("rect", { x: labelWidth, y: y + 3, width: w, height: rowHeight - 10,
                               class: `bar ${row.className || ""}`.trim() }));
    if (row.low !== undefined && row.high !== undefined && row.low !== null && row.high !== null) {
      const x1 = labelWidth + (row.low / scale) * barWidth, x2 = labelWidth + (row.high / scale) * barWidth;
      const mid = y + 3 + (rowHeight - 10) / 2;
      chart.append(svg("line", { x1, x2, y1: mid, y2: mid, class: "whisker" }));
      chart.append(svg("line", { x1, x2: x1, y1: mid - 6, y2: mid + 6, class: "whisker" }));
      chart.append(svg("line", { x1: x2, x2, y1: mid - 6, y2: mid + 6, class: "whisker" }));
    }
    chart.append(svg("text", { x: labelWidth + barWidth + 8, y: y + 14, class: "value" },
                     format(row.value) + (row.note ? ` ${row.note}` : "")));
  });
  return figured(title, chart);
}

/** One stacked bar per row: parts [{name, value, className}], with a legend. */
export function stackedChart(title, rows, parts, { format = String } = {}) {
  const labelWidth = labelsWidth(rows), barWidth = 420, rowHeight = 26;
  const width = labelWidth + barWidth + 90;
  const height = rows.length * rowHeight + 34;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart", "aria-label": title });
  chart.append(svg("title", {}, title));
  rows.forEach((row, i) => {
    const y = 6 + i * rowHeight;
    const total = parts.reduce((sum, p) => sum + (row.values[p.name] || 0), 0);
    chart.append(svg("text", { x: labelWidth - 8, y: y + 14, class: "label", "text-anchor": "end" }, row.label));
    let x = labelWidth;
    for (const part of parts) {
      const v = row.values[part.name] || 0;
      if (!total || !v) continue;
      const w = (v / total) * barWidth;
      const rect = svg("rect", { x, y: y + 3, width: w, height: rowHeight - 10, class: `bar ${part.className}` });
      rect.append(svg("title", {}, `${part.name}: ${format(v)}`));
      chart.append(rect);
      x += w;
    }
    chart.append(svg("text", { x: labelWidth + barWidth + 8, y: y + 14, class: "value" }, format(total)));
  });
  let lx = labelWidth;
  for (const part of parts) {
    chart.append(svg("rect", { x: lx, y: height - 18, width: 12, height: 12, class: `bar ${part.className}` }));
    chart.append(svg("text", { x: lx + 16, y: height - 8, class: "axis" }, part.name));
    lx += 110;
  }
  return figured(title, chart);
}

/** Room for the longest row label (about 7 units a character at the charts' label size), at least 190. */
function labelsWidth(rows) {
  return Math.max(190, 16 + 7 * Math.max(0, ...rows.map((row) => String(row.label).length)));
}

/** A chart in a figure, its title as the caption. */
function figured(title, chart) {
  const figure = document.createElement("figure");
  figure.className = "chart-figure";
  const caption = document.createElement("figcaption");
  caption.textContent = title;
  figure.append(caption, chart);
  return figure;
}
