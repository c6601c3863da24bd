// The admin API, called with the key signed in with (sessionStorage: this tab only).
const KEY = "insightd.adminKey";

export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  set key(value) { sessionStorage.setItem(KEY, value); },
  forget() { sessionStorage.removeItem(KEY); },
};

/** An answer other than 2xx: the problem's status, code and detail (RFC 9457). */
export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail || `The daemon answered ${status}.`);
    this.status = status;
    this.code = code;
  }
}

/** Calls the admin API; resolves to the parsed JSON, rejects with ApiError. */
export async function api(path, { method = "GET", body, key = session.key } = {}) {
  const headers = { "Accept": "application/json" };
  if (key) headers["Authorization"] = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body),
                                   cache: "no-store", credentials: "omit" });
  } catch {
    throw new ApiError(0, "unreachable", "The daemon cannot be reached. Check that insightd is running, then retry.");
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) {
    throw new ApiError(response.status, data && data.code, data && data.detail);
  }
  return data;
}

/** What a person should read for an error, and what to do about it. */
export function explain(error) {
  if (!(error instanceof ApiError)) return `Something went wrong in the console: ${error.message}. Reload the page.`;
  switch (error.status) {
    case 0: return error.message;
    case 401: return "This key is not accepted: it is unknown, mistyped or revoked. Sign in again with a valid admin key.";
    case 403: return "This key is valid but lacks the admin role. Sign in with a key created with --roles admin.";
    case 404: return `Not found: ${error.message} It may have been removed; refresh the list.`;
    case 429: return `Too many requests: ${error.message} Wait a moment and retry.`;
    default:
      if (error.status >= 500) return `The daemon could not answer (${error.status}): ${error.message} Retry in a moment; if it persists, see Health and the daemon's log.`;
      return `The daemon refused this (${error.status}): ${error.message}`;
  }
}
