// The messages a compaction or removal took out of the state, fetched from the journal on
// demand (/markers/<seq>/messages), page by page.
import { api, button, contentText, el, roleLabel, shortId, tag, threadPath } from "./lib.js";

function originalRow(item) {
  const row = el("li", "original " + item.type);
  const head = el("div", "original-head");
  const seq = el("a", "seq", "#" + item.seq);
  seq.href = "#seq-" + item.seq;
  head.append(el("span", "who", roleLabel(item.type)), seq, el("span", "run", "run " + shortId(item.run_id)));
  if (item.truncated) head.append(tag("truncated", "warn"));
  row.append(head);
  const text = contentText(item.content);
  if (text) row.append(el("div", "text", text));
  for (const call of item.tool_calls || []) {
    row.append(el("div", "original-call", "→ " + (call.name || "?") + " " +
      JSON.stringify(call.args === undefined ? {} : call.args)));
  }
  if (item.type === "tool") {
    row.append(el("div", "original-call", "← " + (item.name || "?") +
      (item.status ? " · " + item.status : "")));
  }
  return row;
}

// An element listing the originals of the marker at `seq`; loads when `load()` is called.
export function originalsSection(threadId, seq) {
  const section = el("div", "originals");
  const title = el("div", "originals-title", "Original messages");
  const list = el("ol", "originals-list");
  const more = button("load-more small", "More originals");
  more.hidden = true;
  section.append(title, list, more);
  let after = null;
  let loaded = false;

  async function page() {
    const body = await api(threadPath(threadId) + "/markers/" + seq + "/messages", {
      limit: 50,
      after_seq: after,
    });
    for (const item of body.items) list.append(originalRow(item));
    if (after === null) {
      for (const earlier of body.earlier_summaries || []) {
        const row = el("li", "original summary");
        const link = el("a", "seq", "#" + earlier.seq);
        link.href = "#seq-" + earlier.seq;
        row.append(el("span", "who", "earlier summary "), link,
          el("div", "text", earlier.summary || ""));
        list.append(row);
      }
      const found = body.items.length + (body.earlier_summaries || []).length;
      if (!body.has_more && found === 0) {
        list.append(el("li", "original none", "None of them was journaled in this thread."));
      }
    }
    title.textContent = "Original messages (" + body.message_ids.length + ")";
    after = body.next_after_seq;
    more.hidden = !body.has_more;
  }

  more.addEventListener("click", () => page().catch((e) => list.append(el("li", "error", e.message))));
  section.load = () => {
    if (loaded) return Promise.resolve();
    loaded = true;
    return page().catch((e) => {
      loaded = false;
      list.append(el("li", "error", "Could not load: " + e.message));
    });
  };
  return section;
}

// A marker card: "N messages <verb>", expanding to its text and the original messages.
export function markerCard(threadId, item) {
  const summaryKind = item.type === "summary_marker";
  const count = summaryKind ? item.replaced_count : item.removed_count;
  const first = summaryKind ? item.first_replaced_seq : item.first_removed_seq;
  const last = summaryKind ? item.last_replaced_seq : item.last_removed_seq;
  const verb = summaryKind ? "condensed" : "removed";
  const row = el("li", "item marker");
  const card = el("details", summaryKind ? "condensed" : "condensed removed");
  const summary = el("summary");
  summary.append(el("span", "condensed-title",
    count + (count === 1 ? " message " : " messages ") + verb));
  if (first !== null && first !== undefined) {
    summary.append(el("span", "condensed-range", "seq " + first + "–" + last));
  }
  let text;
  if (summaryKind) text = item.summary || "(no summary text)";
  else {
    const ids = (item.removed_message_ids || []).join(", ");
    text = ids ? "Removed: " + ids : "(no ids)";
  }
  const originals = originalsSection(threadId, item.seq);
  card.append(summary, el("div", "summary-text", text), originals);
  card.addEventListener("toggle", () => {
    if (card.open) originals.load();
  });
  row.append(card);
  return row;
}
