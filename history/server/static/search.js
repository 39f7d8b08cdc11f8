// Search within a thread: hits newest first (/search), each linking to the message in the
// conversation or to the span in its run; "further back" continues where the scan stopped.
import { api, button, el, tag } from "./lib.js";

function renderHit(hit) {
  const row = el("li", "hit");
  const link = el("a", "hit-link");
  const isMessage = hit.event_type.startsWith("message.");
  link.href = isMessage ? "#seq-" + hit.seq
    : "#run-" + encodeURIComponent(hit.run_id) + "/seq-" + hit.seq;
  link.append(el("span", "hit-where", "#" + hit.seq + " · " + hit.event_type + " · " +
    hit.fields.join(", ")));
  const text = el("span", "hit-excerpt");
  const start = hit.match_start;
  const end = start + hit.match_length;
  text.append(document.createTextNode(hit.excerpt.slice(0, start)),
    el("mark", null, hit.excerpt.slice(start, end)),
    document.createTextNode(hit.excerpt.slice(end)));
  link.append(text);
  if (hit.hidden) link.append(tag("hidden", "muted"));
  row.append(link);
  return row;
}

export class Search {
  constructor(base) {
    this.base = base;
    this.node = el("div", "search-results");
    this.node.hidden = true;
  }

  // The first page of hits for `query` (before null), or the next one further back.
  async search(query, before = null) {
    if (!query) {
      this.node.hidden = true;
      return;
    }
    const body = await api(this.base + "/search", { q: query, before_seq: before, limit: 50 });
    if (before === null) this.node.replaceChildren();
    let list = this.node.querySelector("ol.hits");
    if (!list) {
      const head = el("div", "hits-head");
      head.append(el("strong", null, "Results for "), el("span", "query", query),
        button("close small", "×", () => { this.node.hidden = true; }));
      list = el("ol", "hits");
      this.node.append(head, list);
    }
    for (const hit of body.hits) list.append(renderHit(hit));
    this.node.querySelector(".hits-more")?.remove();
    if (body.has_more) {
      const label = "Search further back (seq < " + body.next_before_seq + ")";
      const more = button("hits-more small", label, () => {
        this.search(query, body.next_before_seq).catch((e) => {
          more.textContent = "Could not search: " + e.message;
        });
      });
      this.node.append(more);
    } else if (!list.children.length) {
      list.append(el("li", "hit none", "No match in this thread."));
    }
    this.node.hidden = false;
  }
}
