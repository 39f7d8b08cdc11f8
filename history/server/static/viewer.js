// runjournal web viewer: the thread list at "/" and a thread's timeline at "/threads/<id>".
//
// Safety: every stored text reaches the page through textContent, never innerHTML. With a
// token-protected server, the token comes from the URL fragment (#token=..., never sent to the
// server) or a prompt, lives in sessionStorage, and is sent as "Authorization: Bearer" on every
// request, the live stream included (read with fetch, because EventSource cannot set headers).
"use strict";

(() => {
  const TOKEN_KEY = "runjournal.token";
  const STREAM_CATEGORIES = ["message", "middleware"];
  const app = document.getElementById("app");
  const crumb = document.getElementById("crumb");
  const live = document.getElementById("live");
  // Where the app is mounted ("" at the server root, "/journal" under app.mount("/journal")).
  const ROOT = document.documentElement.dataset.root || "";

  // ---- helpers -------------------------------------------------------------------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function captureToken() {
    const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (match) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
  }

  function authHeaders(extra) {
    const headers = Object.assign({}, extra || {});
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    return headers;
  }

  class HttpError extends Error {
    constructor(status, detail) {
      super(detail || "HTTP " + status);
      this.status = status;
    }
  }

  function apiUrl(path, params) {
    const url = new URL(ROOT + path, location.origin);
    for (const [key, value] of Object.entries(params || {})) {
      if (value === undefined || value === null) continue;
      for (const item of Array.isArray(value) ? value : [value]) {
        url.searchParams.append(key, String(item));
      }
    }
    return url;
  }

  async function api(path, params) {
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

  function threadPath(threadId) {
    return "/api/threads/" + encodeURIComponent(threadId);
  }

  function formatTime(iso) {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? "" : date.toLocaleString();
  }

  function showNotice(text, className) {
    app.replaceChildren(el("p", "notice " + (className || ""), text));
  }

  function showError(error) {
    if (error instanceof HttpError && error.status === 401) {
      askToken();
    } else if (error instanceof HttpError && error.status === 404) {
      showNotice("This thread has no events (unknown or deleted).", "error");
    } else {
      showNotice("Could not load: " + error.message, "error");
    }
  }

  function askToken() {
    const form = el("form", "token-form");
    const label = el("label", null, "This journal needs an access token");
    const input = el("input");
    input.type = "password";
    input.name = "token";
    input.autocomplete = "off";
    input.required = true;
    const button = el("button", null, "Open");
    button.type = "submit";
    label.append(input);
    form.append(label, button);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value);
      location.reload();
    });
    app.replaceChildren(form);
    input.focus();
  }

  // ---- the thread list -----------------------------------------------------------------

  async function showThreads() {
    crumb.textContent = "threads";
    document.title = "Threads · runjournal";
    const list = el("ul", "threads");
    const more = el("button", "load-more", "More threads");
    more.type = "button";
    more.hidden = true;
    let offset = 0;
    async function loadPage() {
      const page = await api("/api/threads", { limit: 50, offset: offset });
      for (const thread of page.threads) {
        const item = el("li", "thread");
        const link = el("a", "thread-link", thread.thread_id);
        link.href = ROOT + "/threads/" + encodeURIComponent(thread.thread_id);
        const meta = el(
          "span",
          "thread-meta",
          `${thread.event_count} events · ${thread.run_count} run${thread.run_count === 1 ? "" : "s"}` +
            ` · last activity ${formatTime(thread.last_event_at)}`,
        );
        item.append(link, meta);
        list.append(item);
      }
      offset += page.threads.length;
      more.hidden = !page.has_more;
      return page;
    }
    const first = await loadPage();
    if (first.threads.length === 0) {
      showNotice("No journaled threads yet.");
      return;
    }
    more.addEventListener("click", () => loadPage().catch(showError));
    app.replaceChildren(el("h1", "page-title", "Threads"), list, more);
  }

  // ---- timeline items ------------------------------------------------------------------

  function contentText(content) {
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

  function meta(label, item) {
    const line = el("div", "meta");
    line.append(el("span", "who", label), el("span", "when", formatTime(item.created_at)));
    const seq = el("span", "seq", "#" + item.seq);
    seq.title = "seq " + item.seq + " · run " + item.run_id;
    line.append(seq);
    return line;
  }

  function folded(className, title, body) {
    const details = el("details", className);
    details.append(el("summary", null, title), el("pre", null, body));
    return details;
  }

  function renderMessage(item) {
    const row = el("li", "item " + item.type);
    const bubble = el("div", "bubble");
    bubble.append(meta(item.type === "human" ? "Human" : "AI", item));
    const text = contentText(item.content);
    if (text) bubble.append(el("div", "text", text));
    for (const call of item.tool_calls || []) {
      const args = JSON.stringify(call.args === undefined ? {} : call.args, null, 2);
      bubble.append(folded("tool-call", "Tool call · " + (call.name || "?"), args));
    }
    row.append(bubble);
    return row;
  }

  function renderTool(item) {
    const row = el("li", "item tool" + (item.status === "error" ? " failed" : ""));
    const status = item.status ? " · " + item.status : "";
    const details = folded("tool-result", "Tool result · " + (item.name || "?") + status,
      contentText(item.content));
    row.append(details);
    return row;
  }

  // A marker: a card titled "N messages <verb>" that expands to its text.
  function markerCard(className, count, verb, first, last, text) {
    const row = el("li", "item marker");
    const card = el("details", className);
    const summary = el("summary");
    summary.append(el("span", "condensed-title",
      count + (count === 1 ? " message " : " messages ") + verb));
    if (first !== null && first !== undefined) {
      summary.append(el("span", "condensed-range", "seq " + first + "–" + last));
    }
    card.append(summary, el("div", "summary-text", text));
    row.append(card);
    return row;
  }

  function renderMarker(item) {
    return markerCard("condensed", item.replaced_count, "condensed", item.first_replaced_seq,
      item.last_replaced_seq, item.summary || "(no summary text)");
  }

  function renderRemoval(item) {
    const ids = (item.removed_message_ids || []).join(", ");
    return markerCard("condensed removed", item.removed_count, "removed",
      item.first_removed_seq, item.last_removed_seq, ids ? "Removed: " + ids : "(no ids)");
  }

  function renderItem(item) {
    let node;
    if (item.type === "summary_marker") node = renderMarker(item);
    else if (item.type === "removal_marker") node = renderRemoval(item);
    else if (item.type === "tool") node = renderTool(item);
    else node = renderMessage(item);
    node.dataset.seq = String(item.seq);
    node.dataset.id = String(item.id);
    node.dataset.run = String(item.run_id);
    return node;
  }

  // The first item of each run gets a divider labelled with the run (recomputed after every
  // insertion, since an older page can change which item starts a run).
  function markRuns(list) {
    let previous = null;
    for (const node of list.children) {
      const starts = previous !== null && node.dataset.run !== previous;
      node.classList.toggle("run-start", starts);
      if (starts) node.dataset.runLabel = "run " + node.dataset.run.slice(0, 8);
      previous = node.dataset.run;
    }
  }

  // ---- one thread ----------------------------------------------------------------------

  function setLive(state, text) {
    live.hidden = false;
    live.className = "live " + state;
    live.textContent = text;
  }

  async function showThread(threadId) {
    const params = new URLSearchParams(location.search);
    const pageSize = Math.min(Math.max(parseInt(params.get("limit") || "30", 10) || 30, 1), 1000);
    crumb.textContent = threadId;
    document.title = threadId + " · runjournal";
    const base = threadPath(threadId);
    const list = el("ol", "timeline");
    const older = el("button", "load-older", "Load older messages");
    older.type = "button";
    older.hidden = true;
    const empty = el("p", "notice", "No messages in this thread yet.");
    const shown = new Set();
    let nextBefore = null;
    let newestSeq = 0;
    let loadingOlder = false;

    function insert(items, atTop) {
      const fragment = document.createDocumentFragment();
      for (const item of items) {
        if (shown.has(item.seq)) continue;
        shown.add(item.seq);
        newestSeq = Math.max(newestSeq, item.seq);
        fragment.append(renderItem(item));
      }
      if (atTop) list.prepend(fragment);
      else list.append(fragment);
      markRuns(list);
      empty.hidden = shown.size > 0;
    }

    let olderAgain = false; // asked for while a page was loading: the observer won't ask twice
    async function loadOlder() {
      if (nextBefore === null) return;
      if (loadingOlder) {
        olderAgain = true;
        return;
      }
      loadingOlder = true;
      olderAgain = false;
      older.disabled = true;
      try {
        const page = await api(base + "/history", { limit: pageSize, before_seq: nextBefore });
        const scroller = document.scrollingElement;
        const fromBottom = scroller.scrollHeight - scroller.scrollTop;
        insert(page.items, true);
        scroller.scrollTop = scroller.scrollHeight - fromBottom; // keep the reader's place
        nextBefore = page.has_more ? page.next_before_seq : null;
        older.hidden = nextBefore === null;
      } finally {
        loadingOlder = false;
        older.disabled = false;
      }
      // The observer only reports changes: if the control is still on screen, read on.
      const wanted = olderAgain || older.getBoundingClientRect().bottom > 0;
      if (nextBefore !== null && wanted) {
        setTimeout(() => loadOlder().catch(showError), 50);
      }
    }

    async function loadNewer() {
      const collected = [];
      let before = null;
      for (;;) {
        const page = await api(base + "/history", { limit: pageSize, before_seq: before });
        const fresh = page.items.filter((item) => item.seq > newestSeq);
        collected.unshift(...fresh);
        if (fresh.length < page.items.length || !page.has_more) break;
        before = page.next_before_seq;
      }
      const scroller = document.scrollingElement;
      const atBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
      insert(collected, false);
      if (atBottom) scroller.scrollTop = scroller.scrollHeight;
    }

    const first = await api(base + "/history", { limit: pageSize });
    insert(first.items, false);
    nextBefore = first.has_more ? first.next_before_seq : null;
    older.hidden = nextBefore === null;
    older.addEventListener("click", () => loadOlder().catch(showError));
    app.replaceChildren(older, empty, list);
    document.scrollingElement.scrollTop = document.scrollingElement.scrollHeight;

    // Scrolling to the top loads the previous page.
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) loadOlder().catch(showError);
    });
    observer.observe(older);

    followStream(base, newestSeq, loadNewer);
  }

  // ---- the live stream -----------------------------------------------------------------

  function followStream(base, afterSeq, onEvents) {
    let lastEventId = null;
    let refreshing = null;
    let again = false;
    let delay = 1000;

    function refresh() {
      if (refreshing) {
        again = true;
        return;
      }
      refreshing = onEvents()
        .catch(() => { again = true; })
        .finally(() => {
          refreshing = null;
          if (again) {
            again = false;
            setTimeout(refresh, 200);
          }
        });
    }

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
        refresh();
      }
      return null;
    }

    async function connect() {
      const headers = authHeaders({ Accept: "text/event-stream" });
      const params = { category: STREAM_CATEGORIES };
      if (lastEventId !== null) headers["Last-Event-ID"] = lastEventId;
      else params.after_seq = afterSeq;
      const response = await fetch(apiUrl(base + "/stream", params), { headers: headers });
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
      for (;;) {
        let outcome;
        try {
          outcome = await connect();
        } catch (error) {
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
        setLive("wait", "reconnecting…");
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 15000);
      }
    }

    run();
  }

  // ---- routing -------------------------------------------------------------------------

  function route() {
    captureToken();
    const path = location.pathname.slice(ROOT.length);
    const match = /^\/threads\/(.+)$/.exec(path);
    let threadId = null;
    if (match) {
      try {
        threadId = decodeURIComponent(match[1]);
      } catch (_) { // a stray "%" typed into the address bar
        crumb.textContent = "threads";
        showNotice("This address does not name a thread: its %-escapes are malformed.", "error");
        return;
      }
    }
    const page = threadId !== null ? showThread(threadId) : showThreads();
    page.catch(showError);
  }

  route();
})();
