// Numbers and times for people (Intl): the browser's language, grouped digits.
const locale = navigator.language || "en";
const integer = new Intl.NumberFormat(locale, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(locale, { maximumFractionDigits: 2 });
const percent = new Intl.NumberFormat(locale, { style: "percent", maximumFractionDigits: 1 });
const dateTime = new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "medium" });

export const fmt = {
  int: (n) => (n === null || n === undefined ? "–" : integer.format(n)),
  num: (n) => (n === null || n === undefined ? "–" : decimal.format(n)),
  pct: (n) => (n === null || n === undefined ? "–" : percent.format(n)),
  time: (iso) => (iso ? dateTime.format(new Date(iso)) : "never"),
  rate: (n) => `${decimal.format(n)}/s`,
};

/** An element with text and attributes; children may be nodes or strings. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/**
 * A table with a caption, plain-text headers and rows of cells (nodes or text). Each cell carries
 * its header as data-label: on a narrow screen the stylesheet shows every row as a card of
 * "header: value" lines instead of a table wider than the screen.
 */
export function table(caption, headers, rows, { numeric = [] } = {}) {
  return el("div", { class: "table-wrap" },
    el("table", {},
      el("caption", {}, caption),
      el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { scope: "col", class: numeric.includes(i) ? "num" : null }, h)))),
      el("tbody", {}, rows.map((row) => el("tr", row.attributes || {},
        (row.cells || row).map((cell, i) => i === 0
          ? el("th", { scope: "row", "data-label": headers[i] }, cell)
          : el("td", { class: numeric.includes(i) ? "num" : null, "data-label": headers[i] }, cell)))))));
}

/** A message for a list with nothing in it, saying what would fill it. */
export function empty(text) { return el("p", { class: "empty" }, text); }
