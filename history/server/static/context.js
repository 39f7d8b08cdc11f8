// "Context": the exact input of one model call, in a drawer over the page. Each message says
// where it came from (the journaled message, a summary, a request-only edit, the request
// only); the compactions and removals that shaped the input are marked where they did; the
// token count says whether the provider reported it or it is approximate.
import {
  api, button, contentText, el, folded, formatInt, roleLabel, shortId, tag, threadPath,
} from "./lib.js";
import { originalsSection } from "./markers.js";

const ORIGINS = {
  state: ["journaled", "The thread's message, as journaled."],
  summary: ["summary", "A summary a compaction put into the state."],
  edited: ["edited for this request", "This request had another version of the journaled message."],
  added: ["request only", "In the request only: system prompt, injected, or a subagent's own."],
  unresolved: ["cannot rebuild", "The journal cannot rebuild this message exactly."],
};

let drawer = null;

function ensureDrawer(onClose) {
  if (!drawer) {
    drawer = el("aside", "drawer");
    drawer.id = "context-drawer";
    drawer.setAttribute("aria-label", "Model call context");
    document.body.append(drawer);
  }
  drawer.onClose = onClose;
  drawer.hidden = false;
  document.body.classList.add("with-drawer");
  return drawer;
}

export function closeContext() {
  if (!drawer) return;
  drawer.hidden = true;
  drawer.replaceChildren();
  document.body.classList.remove("with-drawer");
}

function tokensLine(body) {
  const line = el("div", "ctx-tokens");
  const tokens = body.tokens;
  if (tokens.source === "provider") {
    line.append(el("strong", "ctx-count", formatInt(tokens.count) + " input tokens"),
      el("span", "ctx-source", " — reported by the provider"),
      el("span", "muted", " (approximate count: " + formatInt(tokens.approximate) + ")"));
  } else {
    line.append(el("strong", "ctx-count", "≈ " + formatInt(tokens.count) + " tokens"),
      el("span", "ctx-source", " — approximate (about 4 characters a token; the provider " +
        "reported no input tokens for this call)"));
  }
  line.dataset.source = tokens.source;
  line.dataset.count = String(tokens.count);
  return line;
}

function markerRow(threadId, marker) {
  const row = el("li", "ctx-marker " + marker.kind);
  const card = el("details", "condensed" + (marker.kind === "removal" ? " removed" : ""));
  const summary = el("summary");
  const verb = marker.kind === "summary" ? " condensed into the summary below" : " removed here";
  summary.append(el("span", "condensed-title",
    marker.count + (marker.count === 1 ? " message" : " messages") + verb));
  const where = el("a", "condensed-range", "marker #" + marker.seq);
  where.href = "#seq-" + marker.seq;
  summary.append(where);
  const originals = originalsSection(threadId, marker.seq);
  card.append(summary, originals);
  card.addEventListener("toggle", () => {
    if (card.open) originals.load();
  });
  row.append(card);
  return row;
}

async function journaledVersion(threadId, seq, into) {
  const page = await api(threadPath(threadId) + "/events", { after_seq: seq - 1, limit: 1 });
  const event = page.events[0];
  const data = event && event.content && event.content.data ? event.content.data : {};
  into.replaceChildren(el("div", "muted", "Journaled at #" + seq + ":"),
    el("pre", null, contentText(data.content)));
}

function messageRow(threadId, row) {
  const item = el("li", "ctx-msg " + (row.type || "unknown") + " origin-" + row.origin);
  item.dataset.index = String(row.index);
  item.dataset.origin = row.origin;
  const head = el("div", "ctx-head");
  const [label, help] = ORIGINS[row.origin] || [row.origin, ""];
  const origin = tag(label, "origin " + row.origin);
  origin.title = help;
  head.append(el("span", "ctx-index", String(row.index)), el("span", "who", roleLabel(row.type)),
    origin);
  if (row.seq) {
    const link = el("a", "seq", "#" + row.seq);
    link.href = "#seq-" + row.seq;
    head.append(link);
  }
  if (row.truncated) head.append(tag("truncated", "warn"));
  const kwargs = row.message && row.message.data ? row.message.data.additional_kwargs : null;
  if (kwargs && kwargs.hide_from_ui) {
    const hidden = tag("hidden in the conversation", "muted hidden");
    hidden.title = "added with hide_from_ui: the model saw it, the conversation view hides it";
    head.append(hidden);
  }
  item.append(head);
  if (row.origin === "unresolved") {
    item.append(el("div", "ctx-problem", "Not rebuildable: " + (row.reason || "unknown")));
    return item;
  }
  const data = row.message && row.message.data ? row.message.data : {};
  const text = contentText(data.content);
  item.append(el("div", "text ctx-text", text));
  for (const call of data.tool_calls || []) {
    item.append(folded("tool-call", "Tool call · " + (call.name || "?"),
      JSON.stringify(call.args === undefined ? {} : call.args, null, 2)));
  }
  if (row.type === "tool") {
    item.append(el("div", "muted", "result of " + (data.name || "?") + " · " +
      (data.tool_call_id || "") + (data.status === "error" ? " · error" : "")));
  }
  if (row.origin === "edited") {
    const original = el("div", "ctx-original");
    const show = button("small", "journaled version #" + row.original_seq, () => {
      show.disabled = true;
      journaledVersion(threadId, row.original_seq, original).catch((e) => {
        original.textContent = "Could not load: " + e.message;
      });
    });
    item.append(show, original);
  }
  return item;
}

function render(threadId, body, list) {
  const byIndex = new Map();
  for (const marker of body.markers) {
    if (!byIndex.has(marker.before_index)) byIndex.set(marker.before_index, []);
    byIndex.get(marker.before_index).push(marker);
  }
  for (const row of body.messages) {
    for (const marker of byIndex.get(row.index) || []) list.append(markerRow(threadId, marker));
    list.append(messageRow(threadId, row));
  }
  if (body.next_offset === null) {
    for (const marker of byIndex.get(body.message_count) || []) {
      list.append(markerRow(threadId, marker));
    }
  }
}

// Opens the drawer with the context of the model call at `seq` (an llm.start, llm.end, or
// the message.ai it produced).
export async function openContext(threadId, seq, onClose) {
  const box = ensureDrawer(onClose);
  const head = el("div", "drawer-head");
  const title = el("h2", null, "Context");
  head.append(title, button("close", "Close", () => (box.onClose || closeContext)()));
  const content = el("div", "drawer-body");
  content.append(el("p", "notice", "Loading…"));
  box.replaceChildren(head, content);
  let body;
  try {
    body = await api(threadPath(threadId) + "/context/" + seq, { limit: 200 });
  } catch (error) {
    content.replaceChildren(el("p", "notice error", "No context: " + error.message));
    return;
  }
  title.textContent = "Context of model call #" + body.seq;
  const info = el("div", "ctx-info");
  info.append(el("span", "ctx-model", body.model || "unknown model"),
    el("span", null, " · " + (body.caller || "?")));
  const run = el("a", "run-btn", "run " + shortId(body.run_id) + " ›");
  run.href = "#run-" + encodeURIComponent(body.run_id) + "/seq-" + body.seq;
  info.append(document.createTextNode(" · "), run);
  info.append(tag(body.exact ? "exact input" : "not exact", body.exact ? "ok" : "warn"));
  if (!body.agent_call) info.append(tag("not an agent call", "muted"));
  if (body.status !== "ok") info.append(tag(body.status, body.status === "error" ? "error" : "muted"));
  const count = el("div", "ctx-count-line muted", body.message_count + " messages" +
    (body.markers.length ? " · " + body.markers.length + " marker(s)" : ""));
  const list = el("ol", "ctx-messages");
  render(threadId, body, list);
  content.replaceChildren(info, tokensLine(body), count, list);
  let next = body.next_offset;
  if (next !== null) {
    const more = button("load-more", "More messages", async () => {
      more.disabled = true;
      const page = await api(threadPath(threadId) + "/context/" + seq,
        { offset: next, limit: 200 });
      render(threadId, page, list);
      next = page.next_offset;
      more.disabled = false;
      more.hidden = next === null;
    });
    content.append(more);
  }
}
