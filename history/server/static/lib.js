// Shared helpers of the runjournal viewer: DOM building (text only), the API client, formats,
// and the live stream reader.
//
// Safety: every stored text reaches the page through textContent or an SVG text node, never
// innerHTML. With a token-protected server, the token comes from the URL fragment
// (#token=..., never sent to the server) or a prompt, lives in sessionStorage, and is sent as
// "Authorization: Bearer" on every request, the live stream included (read with fetch,
// because EventSource cannot set headers).

export const TOKEN_KEY = "runjournal.token";
// Where the app is mounted ("" at the server root, "/journal" under app.mount("/journal")).
export const ROOT = document.documentElement.dataset.root || "";
const SVG_NS = "http://www.w3.org/2000/svg";

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

export function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  return node;
}

export function button(className, text, onClick) {
  const node = el("button", className, text);
  node.type = "button";
  if (onClick) node.addEventListener("click", onClick);
  return node;
}

export function captureToken() {
  const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
}

export function authHeaders(extra) {
  const headers = Object.assign({}, extra || {});
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = "Bearer " + token;
  return headers;
}

export class HttpError extends Error {
  constructor(status, detail) {
    super(detail || "HTTP " + status);
    this.status = status;
  }
}

export function apiUrl(path, params) {
  const url = new URL(ROOT + path, location.origin);
  for (const [key, value] of Object.entries(params || {})) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      url.searchParams.append(key, String(item));
    }
  }
  return url;
}

export async function api(path, params) {
  const response = await fetch(apiUrl(path, params), {
    headers: authHeaders({ Accept: "application/json" }),
  });
  if (!response.ok) {
    let detail = "";
    try {
      const body = await response.json();
      detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    } catch (_) { /* not JSON */ }
    throw new HttpError(response.status, detail);
  }
  return response.json();
}

export function threadPath(threadId) {
  return "/api/threads/" + encodeURIComponent(threadId);
}

export function threadPage(threadId) {
  return ROOT + "/threads/" + encodeURIComponent(threadId);
}

export function formatTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString();
}

export function formatInt(value) {
  return typeof value === "number" ? value.toLocaleString("en-US") : "–";
}

export function formatMs(ms) {
  if (typeof ms !== "number") return "–";
  if (ms < 1) return ms.toFixed(2) + " ms";
  if (ms < 1000) return ms.toFixed(ms < 10 ? 1 : 0) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(2) + " s";
  const minutes = Math.floor(ms / 60000);
  return minutes + " min " + Math.round((ms % 60000) / 1000) + " s";
}

export function formatBytes(bytes) {
  if (typeof bytes !== "number") return "";
  if (bytes < 1024) return bytes + " B";
  if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
  return (bytes / 1024 / 1024).toFixed(1) + " MB";
}

// A run id short enough for a label: its last 8 characters (time-ordered ids share a prefix).
export function shortId(id) {
  return String(id).slice(-8);
}

const ROLES = { human: "Human", ai: "AI", system: "System", tool: "Tool" };
export function roleLabel(type) {
  return ROLES[type] || type || "?";
}

// The text of a message content: a string, text blocks joined, anything else as JSON.
export function contentText(content) {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((block) => {
        if (typeof block === "string") return block;
        if (block && block.type === "text" && typeof block.text === "string") return block.text;
        return JSON.stringify(block, null, 2);
      })
      .join("\n");
  }
  return JSON.stringify(content, null, 2);
}

export function folded(className, title, body) {
  const details = el("details", className);
  details.append(el("summary", null, title), el("pre", null, body));
  return details;
}

export function tag(text, className) {
  return el("span", "tag " + (className || ""), text);
}

// Calls fn at most once per `wait` ms, and once more after the last call of a burst.
export function debounce(fn, wait) {
  let timer = null;
  let running = null;
  let again = false;
  function fire() {
    timer = null;
    if (running) {
      again = true;
      return;
    }
    running = Promise.resolve()
      .then(fn)
      .catch(() => { again = true; })
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          schedule();
        }
      });
  }
  function schedule() {
    if (timer === null) timer = setTimeout(fire, wait);
  }
  return schedule;
}

// ---- the live stream -------------------------------------------------------------------

// Follows /stream of `base` (an /api/threads/<id> path) from `afterSeq` (null: from now on),
// with `filters`
// (category, event_type, run_id). Calls onEvent(type, seq) for every event; reconnects with
// Last-Event-ID (no gap, no duplicate). `setLive(state, text)` shows the connection. Returns
// a function that stops following.
export function followStream(base, afterSeq, filters, onEvent, setLive) {
  let lastEventId = null;
  let delay = 1000;
  let stopped = false;
  let controller = null;

  function handle(block) {
    let id = null;
    let type = "message";
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id") id = value;
      else if (field === "event") type = value;
    }
    if (type === "thread_deleted") return "deleted";
    if (id !== null) {
      lastEventId = id;
      onEvent(type, Number(id));
    }
    return null;
  }

  async function connect() {
    const headers = authHeaders({ Accept: "text/event-stream" });
    const params = Object.assign({}, filters || {});
    if (lastEventId !== null) headers["Last-Event-ID"] = lastEventId;
    else if (afterSeq !== null) params.after_seq = afterSeq;
    controller = new AbortController();
    const response = await fetch(apiUrl(base + "/stream", params), {
      headers: headers,
      signal: controller.signal,
    });
    if (!response.ok) throw new HttpError(response.status);
    setLive("on", "live");
    delay = 1000;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return "ended";
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (handle(block) === "deleted") return "deleted";
      }
    }
  }

  async function run() {
    while (!stopped) {
      let outcome;
      try {
        outcome = await connect();
      } catch (error) {
        if (stopped) return;
        if (error instanceof HttpError && (error.status === 401 || error.status === 404)) {
          setLive("off", error.status === 404 ? "thread deleted" : "not authorised");
          return;
        }
        outcome = "error";
      }
      if (outcome === "deleted") {
        setLive("off", "thread deleted");
        return;
      }
      if (stopped) return;
      setLive("wait", "reconnecting…");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }

  run();
  return () => {
    stopped = true;
    if (controller) controller.abort();
  };
}
