// A thread's run strip (status, duration, models, tokens, errors of each run, newest first,
// paged with /runs) and its usage panel (totals, by model, by caller, the running run).
import { api, button, el, formatInt, formatMs, formatTime, shortId, tag } from "./lib.js";

const BUCKET_FIELDS = [
  ["calls", "calls"], ["input_tokens", "input"], ["output_tokens", "output"],
  ["total_tokens", "total"], ["cache_read_tokens", "cache read"],
  ["reasoning_tokens", "reasoning"],
];

function runChip(run) {
  const chip = el("a", "run-chip " + run.status);
  chip.href = "#run-" + encodeURIComponent(run.run_id);
  chip.dataset.run = run.run_id;
  chip.dataset.status = run.status;
  chip.dataset.durationMs = String(run.duration_ms ?? "");
  chip.dataset.totalTokens = String((run.usage || {}).total_tokens ?? 0);
  const head = el("div", "chip-head");
  head.append(el("span", "chip-status", run.status),
    el("span", "chip-id", shortId(run.run_id)));
  const usage = run.usage || {};
  const lines = [
    el("div", "chip-line chip-duration", formatMs(run.duration_ms)),
    el("div", "chip-line chip-models", (run.models || []).join(", ") || "no model call"),
    el("div", "chip-line chip-tokens", formatInt(usage.total_tokens || 0) + " tokens · " +
      formatInt(run.llm_calls || 0) + (run.llm_calls === 1 ? " call" : " calls")),
  ];
  chip.append(head, ...lines);
  if (run.error_type || run.error) {
    const error = el("div", "chip-line chip-error", (run.error_type || "error") + ": " +
      (run.error || ""));
    chip.append(error);
  }
  chip.title = formatTime(run.started_at) + (run.first_human ? "\n" + run.first_human : "");
  return chip;
}

export class RunStrip {
  constructor(base) {
    this.base = base;
    this.node = el("section", "run-strip");
    this.list = el("div", "run-chips");
    this.more = button("small", "older runs", () => this.loadOlder());
    this.more.hidden = true;
    const title = el("div", "panel-title", "Runs");
    this.node.append(title, this.list, this.more);
    this.next = null;
  }

  // The newest page; again (live), it updates the runs shown in place and puts new ones
  // first, keeping the older pages already loaded.
  async load() {
    const page = await api(this.base + "/runs", { limit: 20 });
    const first = this.list.children.length === 0;
    const shown = new Map([...this.list.children].map((chip) => [chip.dataset.run, chip]));
    const fresh = [];
    for (const run of page.runs) {
      const chip = runChip(run);
      const old = shown.get(run.run_id);
      if (old) old.replaceWith(chip);
      else fresh.push(chip);
    }
    this.list.prepend(...fresh);
    if (first) {
      this.next = page.has_more ? page.next_before_seq : null;
      this.more.hidden = this.next === null;
    }
  }

  async loadOlder() {
    if (this.next === null) return;
    const page = await api(this.base + "/runs", { limit: 20, before_seq: this.next });
    this.list.append(...page.runs.map(runChip));
    this.next = page.has_more ? page.next_before_seq : null;
    this.more.hidden = this.next === null;
  }
}

function bucketTable(title, buckets) {
  const names = Object.keys(buckets || {});
  const table = el("table", "usage-table");
  const head = el("tr");
  head.append(el("th", null, title));
  for (const [, label] of BUCKET_FIELDS) head.append(el("th", null, label));
  const body = el("tbody");
  for (const name of names) {
    const row = el("tr");
    row.dataset.name = name;
    row.append(el("td", "usage-name", name));
    for (const [key] of BUCKET_FIELDS) row.append(el("td", "num", formatInt(buckets[name][key] || 0)));
    body.append(row);
  }
  const thead = el("thead");
  thead.append(head);
  table.append(thead, body);
  return table;
}

export class UsagePanel {
  constructor(base) {
    this.base = base;
    this.node = el("section", "usage-panel");
  }

  async load() {
    const usage = await api(this.base + "/usage");
    const totals = usage.totals || {};
    const title = el("div", "panel-title");
    title.append(el("span", null, "Usage"), el("span", "muted",
      " · " + formatInt(usage.run_count) + " runs"));
    const figures = el("div", "usage-totals");
    for (const [key, label] of BUCKET_FIELDS) {
      const figure = el("div", "usage-figure");
      figure.dataset.key = key;
      figure.append(el("span", "usage-value", formatInt(totals[key] || 0)),
        el("span", "usage-label", label));
      figures.append(figure);
    }
    const parts = [title, figures];
    if (usage.active_run) {
      const active = el("div", "usage-active");
      const link = el("a", null, "run " + shortId(usage.active_run.run_id));
      link.href = "#run-" + encodeURIComponent(usage.active_run.run_id);
      const tokens = (usage.active_run.usage || {}).total_tokens || 0;
      active.append(tag("running", "status running"), document.createTextNode(" "), link,
        document.createTextNode(" · " + formatInt(tokens) + " tokens so far"));
      parts.push(active);
    }
    const details = el("details", "usage-details");
    details.open = Boolean(this.node.querySelector(".usage-details[open]")); // kept live
    details.append(el("summary", null, "by model and by caller"),
      bucketTable("model", usage.by_model), bucketTable("caller", usage.by_caller));
    parts.push(details);
    this.node.replaceChildren(...parts);
  }
}
