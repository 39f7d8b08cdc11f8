// One thread: the timeline (newest page first, older pages by scrolling back, a window around
// a deep-linked seq with newer pages below it), search, the hidden-message toggle, the
// tokens-per-call sparkline, and live updates over the stream.
import {
  api, button, contentText, debounce, el, folded, formatBytes, formatInt, formatTime,
  followStream, shortId, tag, threadPath,
} from "./lib.js";
import { markerCard } from "./markers.js";
import { RunStrip, UsagePanel } from "./panels.js";
import { Search } from "./search.js";
import { sparkline } from "./spark.js";

const TIMELINE_TYPES = [
  "message.human", "message.ai", "message.tool", "message.system", "message.remove",
  "middleware:summarize",
];
const LIVE_TYPES = [
  ...TIMELINE_TYPES, "run.start", "run.end", "run.error", "run.cancel", "run.interrupt",
  "run.resume", "llm.end", "llm.error",
];
const SERIES_CALLS = 300;

function whoLabel(item) {
  const base = item.type === "human" ? "Human" : item.type === "system" ? "System" : "AI";
  const caller = item.caller;
  if (!caller || caller === "user" || caller === "agent") return base;
  return base + " · " + caller;
}

function seqLink(item) {
  const link = el("a", "seq", "#" + item.seq);
  link.href = "#seq-" + item.seq;
  link.title = "seq " + item.seq + " · run " + item.run_id;
  return link;
}

export class ThreadView {
  constructor(threadId, go, setLive) {
    this.threadId = threadId;
    this.base = threadPath(threadId);
    this.go = go;
    this.setLive = setLive;
    const params = new URLSearchParams(location.search);
    this.pageSize = Math.min(Math.max(parseInt(params.get("limit") || "30", 10) || 30, 1), 1000);
    this.includeHidden = params.get("hidden") === "1";
    this.callsByMessage = new Map();
    this.node = el("div", "thread-view");
    this.buildHeader();
    this.older = button("load-older", "Load older messages", () => this.loadOlder().catch(this.fail));
    this.newer = button("load-newer", "Load newer messages", () => this.loadNewer().catch(this.fail));
    this.empty = el("p", "notice", "No messages in this thread yet.");
    this.list = el("ol", "timeline");
    this.node.append(this.older, this.empty, this.list, this.newer);
    this.fail = (error) => this.notice("Could not load: " + error.message);
    this.refreshTimeline = debounce(() => this.loadNewest(), 150);
    this.refreshCalls = debounce(() => this.loadCalls(), 400);
    this.refreshRuns = debounce(() => this.strip.load(), 400);
    this.refreshUsage = debounce(() => this.usage.load(), 400);
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        if (entry.target === this.older) this.loadOlder().catch(this.fail);
        if (entry.target === this.newer) this.loadNewer().catch(this.fail);
      }
    });
  }

  notice(text) {
    this.status.textContent = text;
    this.status.hidden = !text;
  }

  // ---- header: title, search, hidden toggle, sparkline ---------------------------------

  buildHeader() {
    const header = el("section", "thread-head");
    const tools = el("div", "toolbar");
    const form = el("form", "search");
    this.searchInput = el("input");
    this.searchInput.type = "search";
    this.searchInput.name = "q";
    this.searchInput.placeholder = "Search this thread";
    this.searchInput.maxLength = 200;
    const go = el("button", null, "Search");
    go.type = "submit";
    form.append(this.searchInput, go);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.searcher.search(this.searchInput.value).catch(this.fail);
    });
    const toggle = el("label", "hidden-toggle");
    this.hiddenBox = el("input");
    this.hiddenBox.type = "checkbox";
    this.hiddenBox.id = "show-hidden";
    this.hiddenBox.checked = this.includeHidden;
    this.hiddenBox.addEventListener("change", () => this.setHidden(this.hiddenBox.checked));
    toggle.append(this.hiddenBox, document.createTextNode(" show hidden messages"));
    tools.append(form, toggle);
    this.spark = el("div", "spark-panel");
    this.searcher = new Search(this.base);
    this.status = el("p", "notice error");
    this.status.hidden = true;
    this.usage = new UsagePanel(this.base);
    this.strip = new RunStrip(this.base);
    this.panels = el("div", "panels");
    this.panels.append(this.usage.node, this.spark);
    header.append(tools, this.panels, this.strip.node, this.searcher.node, this.status);
    this.node.append(header);
  }

  setHidden(on) {
    this.includeHidden = on;
    const url = new URL(location.href);
    if (on) url.searchParams.set("hidden", "1");
    else url.searchParams.delete("hidden");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
    this.openTimeline(null).catch(this.fail);
  }

  // ---- timeline items ------------------------------------------------------------------

  renderMessage(item) {
    const row = el("li", "item " + item.type);
    const bubble = el("div", "bubble");
    const line = el("div", "meta");
    line.append(el("span", "who", whoLabel(item)));
    if (item.hidden) line.append(tag("hidden", "muted"));
    line.append(el("span", "when", formatTime(item.created_at)), seqLink(item));
    bubble.append(line);
    const text = contentText(item.content);
    if (text) bubble.append(el("div", "text", text));
    for (const call of item.tool_calls || []) {
      const args = JSON.stringify(call.args === undefined ? {} : call.args, null, 2);
      bubble.append(folded("tool-call", "Tool call · " + (call.name || "?"), args));
    }
    if (item.type === "ai") {
      const actions = el("div", "item-actions");
      const context = button("ctx-btn", "context", () => this.go("#context-" + item.seq));
      context.title = "What the model saw when it wrote this";
      const run = el("a", "run-btn", "run " + shortId(item.run_id) + " ›");
      run.href = "#run-" + encodeURIComponent(item.run_id);
      actions.append(context, el("span", "tokens"), run);
      bubble.append(actions);
    }
    if (item.hidden) row.classList.add("is-hidden");
    row.append(bubble);
    return row;
  }

  renderTool(item) {
    const row = el("li", "item tool" + (item.status === "error" ? " failed" : ""));
    const status = item.status ? " · " + item.status : "";
    const details = folded("tool-result", "Tool result · " + (item.name || "?") + status,
      contentText(item.content));
    details.querySelector("summary").append(seqLink(item));
    row.append(details);
    return row;
  }

  renderItem(item) {
    let node;
    if (item.type === "summary_marker" || item.type === "removal_marker") {
      node = markerCard(this.threadId, item);
    } else if (item.type === "tool") node = this.renderTool(item);
    else node = this.renderMessage(item);
    node.id = "seq-" + item.seq;
    node.dataset.seq = String(item.seq);
    node.dataset.id = String(item.id);
    node.dataset.run = String(item.run_id);
    if (item.type === "ai") this.fillTokens(node);
    return node;
  }

  // The first item of each run gets a divider with a link to the run (recomputed after every
  // insertion, since an older page can change which item starts a run).
  markRuns() {
    let previous = null;
    for (const node of this.list.children) {
      const starts = previous !== null && node.dataset.run !== previous;
      node.classList.toggle("run-start", starts);
      let link = node.querySelector(":scope > a.run-link");
      if (starts && !link) {
        link = el("a", "run-link", "run " + shortId(node.dataset.run) + " ›");
        link.href = "#run-" + encodeURIComponent(node.dataset.run);
        node.prepend(link);
      } else if (!starts && link) link.remove();
      previous = node.dataset.run;
    }
  }

  fillTokens(node) {
    const call = this.callsByMessage.get(node.dataset.id);
    const badge = node.querySelector(".tokens");
    if (!call || !badge) return;
    badge.textContent = "in " + formatInt(call.input_tokens) + " · out " +
      formatInt(call.output_tokens) + " tokens";
    badge.title = (call.model || "") + " · " + (call.caller || "");
  }

  // ---- paging --------------------------------------------------------------------------

  history(params) {
    const query = Object.assign({}, params);
    if (this.includeHidden) query.include_hidden = true;
    return api(this.base + "/history", query);
  }

  resetList() {
    this.list.replaceChildren();
    this.shown = new Set();
    this.nextBefore = null;
    this.newestSeq = 0;
    this.atHead = true;
    this.loadingOlder = false;
    this.olderAgain = false;
    this.loadingNewer = false;
    this.generation = (this.generation || 0) + 1;
  }

  insert(items, atTop) {
    const fragment = document.createDocumentFragment();
    const added = [];
    for (const item of items) {
      if (this.shown.has(item.seq)) continue;
      this.shown.add(item.seq);
      this.newestSeq = Math.max(this.newestSeq, item.seq);
      fragment.append(this.renderItem(item));
      added.push(item.seq);
    }
    if (atTop) this.list.prepend(fragment);
    else this.list.append(fragment);
    this.markRuns();
    this.empty.hidden = this.shown.size > 0;
    if (added.length) this.markTruncated(Math.min(...added), Math.max(...added));
  }

  updateControls() {
    this.older.hidden = this.nextBefore === null;
    this.newer.hidden = this.atHead;
  }

  // Open the timeline at the head (target null) or around seq `target`.
  async openTimeline(target) {
    this.resetList();
    const generation = this.generation;
    if (target === null) {
      const page = await this.history({ limit: this.pageSize });
      if (generation !== this.generation) return;
      this.insert(page.items, false);
      this.nextBefore = page.has_more ? page.next_before_seq : null;
      this.updateControls();
      document.scrollingElement.scrollTop = document.scrollingElement.scrollHeight;
      return;
    }
    const half = Math.max(1, Math.ceil(this.pageSize / 2));
    const page = await this.history({ limit: half, before_seq: target + 1 });
    if (generation !== this.generation) return;
    this.insert(page.items, false);
    this.nextBefore = page.has_more ? page.next_before_seq : null;
    this.newestSeq = Math.max(this.newestSeq, target);
    this.atHead = false;
    await this.loadNewer();
    this.updateControls();
  }

  async loadOlder() {
    if (this.nextBefore === null) return;
    if (this.loadingOlder) {
      this.olderAgain = true;
      return;
    }
    const generation = this.generation;
    this.loadingOlder = true;
    this.olderAgain = false;
    this.older.disabled = true;
    try {
      const page = await this.history({ limit: this.pageSize, before_seq: this.nextBefore });
      if (generation !== this.generation) return;
      const scroller = document.scrollingElement;
      const fromBottom = scroller.scrollHeight - scroller.scrollTop;
      this.insert(page.items, true);
      scroller.scrollTop = scroller.scrollHeight - fromBottom; // keep the reader's place
      this.nextBefore = page.has_more ? page.next_before_seq : null;
      this.updateControls();
    } finally {
      this.loadingOlder = false;
      this.older.disabled = false;
    }
    // The observer only reports changes: if the control is still on screen, read on.
    const wanted = this.olderAgain || this.older.getBoundingClientRect().bottom > 0;
    if (this.nextBefore !== null && wanted && this.node.isConnected) {
      setTimeout(() => this.loadOlder().catch(this.fail), 50);
    }
  }

  // Below a deep-linked window: the next timeline events after the newest shown (their seqs
  // from /events), then the timeline items up to the last of them.
  async loadNewer() {
    if (this.atHead || this.loadingNewer) return;
    const generation = this.generation;
    this.loadingNewer = true;
    this.newer.disabled = true;
    try {
      const events = await api(this.base + "/events", {
        after_seq: this.newestSeq, limit: this.pageSize, event_type: TIMELINE_TYPES,
      });
      if (generation !== this.generation) return;
      if (events.events.length > 0) {
        const last = events.events[events.events.length - 1].seq;
        const page = await this.history({ limit: this.pageSize, before_seq: last + 1 });
        if (generation !== this.generation) return;
        const floor = this.newestSeq;
        this.insert(page.items.filter((item) => item.seq > floor), false);
        this.newestSeq = Math.max(this.newestSeq, last);
      }
      if (!events.has_more) this.atHead = true;
      this.updateControls();
    } finally {
      this.loadingNewer = false;
      this.newer.disabled = false;
    }
    // As for older pages: while the control stays on screen, read on.
    const rect = this.newer.getBoundingClientRect();
    if (!this.atHead && rect.top < window.innerHeight && this.node.isConnected) {
      setTimeout(() => this.loadNewer().catch(this.fail), 50);
    }
  }

  // At the head, live: read back from the newest page until the items already shown.
  async loadNewest() {
    if (!this.atHead) {
      this.updateControls();
      return;
    }
    const generation = this.generation;
    const collected = [];
    let before = null;
    for (;;) {
      const page = await this.history({ limit: this.pageSize, before_seq: before });
      if (generation !== this.generation) return;
      const fresh = page.items.filter((item) => item.seq > this.newestSeq);
      collected.unshift(...fresh);
      if (fresh.length < page.items.length || !page.has_more) break;
      before = page.next_before_seq;
    }
    const scroller = document.scrollingElement;
    const atBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
    this.insert(collected, false);
    if (atBottom) scroller.scrollTop = scroller.scrollHeight;
  }

  async markTruncated(first, last) {
    try {
      const body = await api(this.base + "/truncated", {
        after_seq: first - 1, before_seq: last + 1,
      });
      for (const event of body.events) {
        const node = document.getElementById("seq-" + event.seq);
        if (!node || node.querySelector(".tag.truncated")) continue;
        const size = event.original_bytes ? " · was " + formatBytes(event.original_bytes) : "";
        const mark = tag("truncated" + size, "warn truncated");
        mark.title = "The store cut this event to its size cap.";
        const meta = node.querySelector(".meta") || node.querySelector("summary");
        (meta || node).append(mark);
      }
    } catch (_) { /* marks are an extra: the timeline stands without them */ }
  }

  // ---- deep links ----------------------------------------------------------------------

  async showSeq(seq) {
    let node = this.itemAtOrBefore(seq);
    if (!node || Number(node.dataset.seq) !== seq && !this.covers(seq)) {
      await this.openTimeline(seq);
      node = this.itemAtOrBefore(seq);
    }
    for (const old of this.list.querySelectorAll(".item.target")) old.classList.remove("target");
    if (node) {
      node.classList.add("target");
      node.scrollIntoView({ block: "center" });
    }
  }

  covers(seq) {
    const seqs = [...this.shown];
    return seqs.length > 0 && Math.min(...seqs) <= seq && seq <= this.newestSeq;
  }

  itemAtOrBefore(seq) {
    let best = null;
    for (const node of this.list.children) {
      if (Number(node.dataset.seq) <= seq) best = node;
    }
    return best;
  }

  // ---- the per-call token series -------------------------------------------------------

  async loadCalls() {
    const body = await api(this.base + "/calls", { limit: SERIES_CALLS });
    this.callsByMessage.clear();
    for (const call of body.calls) {
      if (call.message_id) this.callsByMessage.set(call.message_id, call);
    }
    for (const node of this.list.querySelectorAll(".item.ai")) this.fillTokens(node);
    this.spark.replaceChildren(sparkline(body, (seq) => this.go("#context-" + seq)));
    if (!performance.getEntriesByName("runjournal:calls").length) {
      performance.mark("runjournal:calls");
    }
  }

  // ---- life cycle ----------------------------------------------------------------------

  async open(target) {
    await this.openTimeline(target);
    this.observer.observe(this.older);
    this.observer.observe(this.newer);
    // the panels come after the first page: it never waits for them
    this.loadCalls().catch(() => { /* the sparkline is an extra */ });
    this.usage.load().catch(() => { this.usage.node.hidden = true; });
    this.strip.load().catch(() => { this.strip.node.hidden = true; });
    // At the head, from the newest item shown (nothing is missed); below a deep-linked
    // window, from now on (the window reads older events itself).
    const from = this.atHead ? this.newestSeq : null;
    this.stopStream = followStream(this.base, from, { event_type: LIVE_TYPES },
      (type) => this.onEvent(type), this.setLive);
  }

  onEvent(type) {
    if (type.startsWith("message.") || type.startsWith("middleware:")) this.refreshTimeline();
    if (type.startsWith("llm.")) {
      this.refreshCalls();
      this.refreshUsage();
      this.refreshRuns(); // a running run's tokens and calls
    }
    if (type.startsWith("run.")) {
      this.refreshRuns();
      this.refreshUsage();
    }
  }

  close() {
    if (this.stopStream) this.stopStream();
    this.observer.disconnect();
  }
}
