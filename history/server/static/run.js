// A run: its header (status, duration, models, tokens, errors) and its span tree as a
// waterfall drawn to scale (node steps, model and tool calls, a subagent under the tool that
// ran it), a details panel for the selected span, live updates over the run's stream.
import {
  api, button, debounce, el, followStream, formatInt, formatMs, formatTime, tag, threadPath,
} from "./lib.js";

const GLYPH = { run: "▣", node: "◆", subagent: "◈", model: "✦", tool: "⚙", event: "•" };

function niceStep(total) {
  const rough = total / 5;
  const power = Math.pow(10, Math.floor(Math.log10(rough || 1)));
  for (const factor of [1, 2, 5, 10]) {
    if (rough <= factor * power) return factor * power;
  }
  return 10 * power;
}

function usageText(usage) {
  if (!usage) return "";
  return "in " + formatInt(usage.input_tokens) + " · out " + formatInt(usage.output_tokens);
}

function stat(label, value) {
  const item = el("div", "stat");
  item.append(el("span", "stat-label", label), el("span", "stat-value", value));
  return item;
}

export class RunView {
  constructor(threadId, runId, go, setLive) {
    this.threadId = threadId;
    this.runId = runId;
    this.base = threadPath(threadId);
    this.go = go;
    this.setLive = setLive;
    this.collapsed = new Set();
    this.selected = null;
    this.node = el("div", "run-view");
    this.refresh = debounce(() => this.load(), 300);
  }

  async open(selectSeq) {
    await this.load();
    if (selectSeq !== null && selectSeq !== undefined) this.selectSeq(selectSeq);
    if (this.body.status === "running") {
      // from the seq the spans were read at: an event written since (before the stream
      // connects) still refreshes the view
      this.stopStream = followStream(this.base, this.body.last_seq ?? null, { run_id: this.runId },
        () => this.refresh(), this.setLive);
    }
  }

  close() {
    if (this.stopStream) this.stopStream();
  }

  async load() {
    const body = await api(this.base + "/spans", { run_id: this.runId });
    this.body = body;
    this.byId = new Map(body.spans.map((s) => [s.id, s]));
    this.children = new Map();
    for (const span of body.spans) {
      if (!span.parent) continue;
      if (!this.children.has(span.parent)) this.children.set(span.parent, []);
      this.children.get(span.parent).push(span);
    }
    for (const list of this.children.values()) {
      list.sort((a, b) => a.start_ms - b.start_ms || a.seq - b.seq);
    }
    this.render();
    if (body.status !== "running" && this.stopStream) {
      this.stopStream();
      this.stopStream = null;
      this.setLive("off", "run " + body.status);
    }
  }

  render() {
    const body = this.body;
    const back = el("a", "back", "← conversation");
    back.href = "#";
    const title = el("h1", "page-title");
    title.append(el("span", null, "Run "), el("span", "mono", body.run_id),
      tag(body.status, "status " + body.status));
    const stats = el("div", "stats");
    stats.append(
      stat("started", formatTime(body.started_at)),
      stat("duration", formatMs(body.duration_ms)),
      stat("models", body.models.join(", ") || "–"),
      stat("tokens", formatInt(body.usage.total_tokens) + " (" + usageText(body.usage) + ")"),
      stat("model calls", formatInt(body.llm_calls)),
      stat("tool calls", formatInt(body.tool_calls)),
      stat("errors", formatInt(body.errors)),
    );
    const parts = [back, title, stats];
    if (body.error) {
      const error = el("div", "run-error");
      error.append(el("strong", null, (body.error_type || "Error") + ": "),
        el("span", null, body.error));
      parts.push(error);
    }
    if (body.truncated || body.size_limited) {
      parts.push(el("p", "notice warn", "This run has more spans than one answer holds: " +
        "the first " + (body.spans.length - 1) + " are shown."));
    }
    this.details = el("div", "wf-details");
    parts.push(this.waterfall(), this.details);
    this.node.replaceChildren(...parts);
    if (this.selected && this.byId.has(this.selected)) this.select(this.selected);
  }

  total() {
    let total = this.body.duration_ms || 0;
    for (const span of this.body.spans) {
      total = Math.max(total, span.end_ms || 0, span.start_ms || 0);
    }
    return total || 1;
  }

  waterfall() {
    const box = el("div", "waterfall");
    const total = this.total();
    const axis = el("div", "wf-axis");
    axis.append(el("div", "wf-label", "span"));
    const ticks = el("div", "wf-track wf-ticks");
    const step = niceStep(total);
    for (let at = 0; at <= total + 1e-9; at += step) {
      const mark = el("span", "wf-tick", formatMs(at));
      mark.style.left = (at / total) * 100 + "%";
      ticks.append(mark);
    }
    axis.append(ticks);
    const rows = el("ol", "wf-rows");
    const root = this.body.spans[0];
    const walk = (span, depth) => {
      rows.append(this.row(span, depth, total));
      if (this.collapsed.has(span.id)) return;
      for (const child of this.children.get(span.id) || []) walk(child, depth + 1);
    };
    walk(root, 0);
    box.append(axis, rows);
    return box;
  }

  row(span, depth, total) {
    const row = el("li", "wf-row " + span.kind + " " + span.status);
    row.dataset.span = span.id;
    row.dataset.kind = span.kind;
    row.dataset.status = span.status;
    row.dataset.seq = String(span.seq);
    const label = el("div", "wf-label");
    label.style.paddingLeft = 6 + depth * 14 + "px";
    const kids = this.children.get(span.id) || [];
    if (kids.length) {
      const caret = button("caret", this.collapsed.has(span.id) ? "▸" : "▾", (event) => {
        event.stopPropagation();
        if (this.collapsed.has(span.id)) this.collapsed.delete(span.id);
        else this.collapsed.add(span.id);
        this.render();
      });
      label.append(caret);
    } else label.append(el("span", "caret-space"));
    label.append(el("span", "glyph", GLYPH[span.kind] || "·"), el("span", "wf-name", span.name));
    const meta = [];
    if (span.kind !== "event") meta.push(formatMs(span.duration_ms));
    if (span.usage && span.kind === "model") meta.push(formatInt(span.usage.total_tokens) + " tok");
    label.append(el("span", "wf-meta", meta.join(" · ")));
    if (span.status === "error") label.append(tag("error", "error"));
    const track = el("div", "wf-track");
    const start = span.start_ms || 0;
    const end = span.end_ms === null || span.end_ms === undefined ? total : span.end_ms;
    const bar = el("div", span.kind === "event" ? "wf-mark" : "wf-bar");
    bar.style.left = (start / total) * 100 + "%";
    if (span.kind !== "event") bar.style.width = (Math.max(0, end - start) / total) * 100 + "%";
    bar.title = span.name + " · " + formatMs(span.duration_ms);
    track.append(bar);
    row.append(label, track);
    row.addEventListener("click", () => this.select(span.id));
    return row;
  }

  selectSeq(seq) {
    // the innermost span whose events hold seq
    let best = null;
    for (const span of this.body.spans) {
      const last = span.end_seq === null ? Infinity : span.end_seq;
      if (span.seq <= seq && seq <= last) best = span;
    }
    if (best) this.select(best.id);
  }

  select(id) {
    const span = this.byId.get(id);
    if (!span) return;
    this.selected = id;
    for (const row of this.node.querySelectorAll(".wf-row.selected")) row.classList.remove("selected");
    const row = this.node.querySelector('.wf-row[data-span="' + CSS.escape(id) + '"]');
    if (row) {
      row.classList.add("selected");
      row.scrollIntoView({ block: "nearest" });
    }
    const box = this.details;
    const head = el("div", "wf-details-head");
    head.append(el("span", "glyph", GLYPH[span.kind] || "·"), el("strong", null, span.name),
      tag(span.kind, "muted"), tag(span.status, "status " + span.status));
    const facts = el("dl", "facts");
    const fact = (name, value) => {
      if (value === null || value === undefined || value === "") return;
      facts.append(el("dt", null, name), el("dd", null, value));
    };
    fact("caller", span.caller);
    fact("node", span.node === null ? null : span.node + (span.step !== null ? " (step " + span.step + ")" : ""));
    fact("model", span.model);
    if (span.request_model && span.request_model !== span.model) fact("requested model", span.request_model);
    fact("start", "+" + formatMs(span.start_ms));
    fact("duration", formatMs(span.duration_ms));
    fact("seq", "#" + span.seq + (span.end_seq && span.end_seq !== span.seq ? " – #" + span.end_seq : ""));
    if (span.usage) {
      fact("tokens", formatInt(span.usage.total_tokens) + " (" + usageText(span.usage) +
        (span.usage.cache_read_tokens ? " · cache read " + formatInt(span.usage.cache_read_tokens) : "") +
        (span.usage.reasoning_tokens ? " · reasoning " + formatInt(span.usage.reasoning_tokens) : "") + ")");
    }
    fact("messages in", span.message_count);
    fact("tool call id", span.tool_call_id);
    const parts = [head, facts];
    if (span.error) {
      parts.push(el("div", "wf-error-title", span.error_type || "error"), el("pre", "wf-error", span.error));
    }
    for (const [name, text] of [["input (last message)", span.input], ["arguments", span.args],
      ["output", span.output]]) {
      if (text) parts.push(el("div", "wf-field", name), el("pre", null, text));
    }
    if (span.truncated) parts.push(el("p", "notice warn", "The store cut one of this span's events to its size cap."));
    if (span.kind === "model" && span.context) {
      parts.push(button("ctx-btn", "context — what the model saw", () => this.go("#context-" + span.seq)));
    }
    box.replaceChildren(...parts);
  }
}
