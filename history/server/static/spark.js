// The tokens-per-call sparkline: one bar per ended model call (input tokens, to scale), the
// newest page of the thread's calls; a click opens that call's context.
import { button, el, formatInt, svg } from "./lib.js";

const HEIGHT = 44;
const BAR = 6;

function callerKind(caller) {
  if (!caller || caller === "agent") return "agent";
  if (caller.startsWith("subagent:")) return "subagent";
  if (caller.startsWith("middleware:")) return "middleware";
  return "other";
}

export function sparkline(page, onPick) {
  const panel = el("div", "spark");
  const calls = page.calls;
  const title = el("div", "spark-title");
  if (calls.length === 0) {
    title.textContent = "No model calls yet.";
    panel.append(title);
    return panel;
  }
  const max = Math.max(1, ...calls.map((c) => c.input_tokens));
  const total = calls.reduce((sum, c) => sum + c.total_tokens, 0);
  const last = calls[calls.length - 1];
  title.append(
    el("strong", null, "Tokens per call"),
    el("span", "spark-stat", (page.has_more ? "last " : "") + calls.length + " calls · " +
      formatInt(total) + " tokens · max input " + formatInt(max) + " · last input " +
      formatInt(last.input_tokens)),
  );
  const width = calls.length * BAR;
  const chart = svg("svg", {
    class: "spark-chart",
    viewBox: "0 0 " + width + " " + HEIGHT,
    preserveAspectRatio: "none",
    role: "img",
  });
  calls.forEach((call, index) => {
    const height = Math.max(1, (call.input_tokens / max) * (HEIGHT - 2));
    const bar = svg("rect", {
      x: index * BAR + 0.5,
      y: HEIGHT - height,
      width: BAR - 1,
      height: height,
      class: "spark-bar " + callerKind(call.caller) + (call.status === "error" ? " error" : ""),
      "data-seq": call.seq,
    });
    const tip = svg("title");
    tip.textContent = "#" + call.seq + " · " + (call.model || "?") + " · " +
      (call.caller || "?") + "\ninput " + formatInt(call.input_tokens) + " · output " +
      formatInt(call.output_tokens) + " · total " + formatInt(call.total_tokens) +
      (call.cache_read_tokens ? " · cache read " + formatInt(call.cache_read_tokens) : "");
    bar.append(tip);
    bar.addEventListener("click", () => onPick(call.seq));
    chart.append(bar);
  });
  const legend = el("div", "spark-legend");
  for (const kind of ["agent", "subagent", "middleware"]) {
    if (calls.some((c) => callerKind(c.caller) === kind)) {
      legend.append(el("span", "key " + kind, kind));
    }
  }
  const open = button("small", "context of the last call", () => onPick(last.seq));
  legend.append(open);
  panel.append(title, chart, legend);
  return panel;
}
