// The console's shell: sign-in, the page router (#callers, #models, #velocity, #health),
// the confirmation dialog and the notice line. Every value shown comes from the admin API.
import { api, session, explain, ApiError } from "./api.js";
import { callersPage } from "./pages/callers.js";
import { modelsPage } from "./pages/models.js";
import { velocityPage } from "./pages/velocity.js";
import { healthPage } from "./pages/health.js";
import { el } from "./format.js";

// A Map, not an object: a route is whatever follows '#', and an object would answer
// "constructor" or "__proto__" with what every object inherits.
const pages = new Map([["callers", callersPage], ["models", modelsPage], ["velocity", velocityPage], ["health", healthPage]]);
const $ = (id) => document.getElementById(id);
let current = null;  // the page shown: { stop() }

/** Shows a result or an error in the notice line (read out by screen readers). */
export function notify(text, kind = "ok") {
  const notice = $("notice");
  notice.textContent = text;
  notice.className = `notice ${kind}`;
  notice.hidden = false;
}

/** Asks before a change; resolves to true when the person confirms. */
export function confirmAction(title, text, confirmLabel) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = confirmLabel;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    $("confirm-cancel").focus();
  });
}

/** A call failed: a revoked or wrong key signs out; anything else is shown. */
export function failed(error) {
  if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
    signOut(explain(error));
  } else {
    notify(explain(error), "error");
  }
}

function showSignIn(message) {
  if (current) { current.stop(); current = null; }
  $("nav").hidden = true;
  $("session").hidden = true;
  $("page").hidden = true;
  $("page").replaceChildren();
  $("sign-in").hidden = false;
  const error = $("sign-in-error");
  error.textContent = message || "";
  error.hidden = !message;
  $("api-key").value = "";
  $("api-key").focus();
}

function signOut(message) {
  session.forget();
  $("notice").hidden = true;
  showSignIn(message);
}

/** The view of a route that is no page: says so and links to the pages. */
function notFoundPage(root) {
  root.append(el("h2", {}, "Page not found"),
    el("p", { id: "not-found" }, "There is no such page in the console. Choose one: ",
      ...[...pages.keys()].flatMap((name, i) => [i ? ", " : "", el("a", { href: `#${name}` }, name)]), "."));
  return { stop() {} };
}

function route() {
  if (!session.key) return showSignIn();
  const name = location.hash.slice(1) || "callers";
  const page = pages.get(name) || notFoundPage;
  if (current) current.stop();
  $("notice").hidden = true;  // a result belongs to the page it was shown on
  $("sign-in").hidden = true;
  $("nav").hidden = false;
  $("session").hidden = false;
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.page === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const root = $("page");
  root.hidden = false;
  root.replaceChildren();
  current = page(root);
}

async function signIn(event) {
  event.preventDefault();
  const key = $("api-key").value.trim();
  if (!key) return;
  try {
    // Any admin read proves the key; health is the smallest.
    await api("/admin/v1/health", { key });
  } catch (error) {
    return showSignIn(explain(error));
  }
  session.key = key;
  $("who").textContent = `Signed in with key ${key.split("_")[1] || "?"}`;
  $("notice").hidden = true;
  if (!location.hash) location.hash = "#callers";
  route();
}

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => signOut("Signed out. The key was forgotten."));
  window.addEventListener("hashchange", route);
  if (session.key) $("who").textContent = `Signed in with key ${session.key.split("_")[1] || "?"}`;
  route();
});
