// runjournal web viewer: the thread list at "/" and a thread at "/threads/<id>".
//
// A thread page's fragment says what it shows: "" the conversation (newest first),
// "#seq-42" the conversation around seq 42, "#run-<run id>" a run's span waterfall
// ("#run-<id>/seq-42" with the span holding seq 42 selected), "#context-42" the input of the
// model call at seq 42 over the conversation. Every stored text is rendered as text
// (textContent), never as markup; see lib.js for authentication.
import {
  ROOT, api, captureToken, el, formatTime, HttpError, TOKEN_KEY,
} from "./lib.js";
import { closeContext, openContext } from "./context.js";
import { RunView } from "./run.js";
import { ThreadView } from "./thread.js";

const app = document.getElementById("app");
const crumb = document.getElementById("crumb");
const live = document.getElementById("live");

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

function setLive(state, text) {
  live.hidden = false;
  live.className = "live " + state;
  live.textContent = text;
}

// ---- the thread list -------------------------------------------------------------------

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

// ---- a thread: conversation, runs, contexts --------------------------------------------

// A seq the API takes (1 .. 2**53 - 1), else null: a link past it opens the conversation.
function seqOf(digits) {
  const seq = Number(digits);
  return Number.isSafeInteger(seq) && seq >= 1 ? seq : null;
}

function parseFragment(hash) {
  let match = /^#seq-(\d+)$/.exec(hash);
  if (match && seqOf(match[1]) !== null) return { view: "thread", seq: seqOf(match[1]) };
  match = /^#context-(\d+)$/.exec(hash);
  if (match && seqOf(match[1]) !== null) return { view: "thread", context: seqOf(match[1]) };
  match = /^#run-([^/]+)(?:\/seq-(\d+))?$/.exec(hash);
  if (match) {
    try {
      return { view: "run", runId: decodeURIComponent(match[1]),
        seq: match[2] ? seqOf(match[2]) : null };
    } catch (_) { /* a malformed escape: the conversation */ }
  }
  return { view: "thread" };
}

function threadPage(threadId) {
  let thread = null;
  let run = null;
  let opened = false;
  let savedScroll = null;
  let previousHash = "";

  // Programmatic navigation: a history entry, no native scroll to the fragment.
  function go(hash) {
    previousHash = location.hash;
    history.pushState(null, "", hash === "#" ? location.pathname + location.search : hash);
    render().catch(showError);
  }

  function closeDrawer() {
    const back = previousHash && !previousHash.startsWith("#context-") ? previousHash : "";
    history.replaceState(null, "", location.pathname + location.search + back);
    closeContext();
    render().catch(showError);
  }

  async function showThread(target) {
    if (run) {
      run.close();
      run = null;
    }
    if (!thread) thread = new ThreadView(threadId, go, setLive);
    if (!thread.node.isConnected) app.replaceChildren(thread.node);
    if (!opened) {
      opened = true;
      await thread.open(target === undefined ? null : target);
      // marks for devtools and scripts/bench_viewer.py: the first page is in the DOM, then
      // the frame after it (painted)
      performance.mark("runjournal:first-page");
      requestAnimationFrame(() => requestAnimationFrame(() => {
        performance.mark("runjournal:first-paint");
      }));
      app.dataset.ready = "thread";
      if (target !== undefined) await thread.showSeq(target);
    } else if (target !== undefined) {
      await thread.showSeq(target);
    } else if (savedScroll !== null) {
      document.scrollingElement.scrollTop = savedScroll;
    }
    savedScroll = null;
  }

  async function render() {
    const where = parseFragment(location.hash);
    if (where.view === "run") {
      closeContext();
      if (thread && thread.node.isConnected) savedScroll = document.scrollingElement.scrollTop;
      if (run && run.runId === where.runId) {
        if (where.seq !== null) run.selectSeq(where.seq);
        return;
      }
      if (run) run.close();
      run = new RunView(threadId, where.runId, go, setLive);
      app.replaceChildren(run.node);
      document.scrollingElement.scrollTop = 0;
      try {
        await run.open(where.seq);
      } catch (error) {
        if (!(error instanceof HttpError && error.status === 404)) throw error;
        const back = el("a", "back", "← conversation");
        back.href = "#";
        run.node.replaceChildren(back, el("p", "notice error", error.message));
      }
      app.dataset.ready = "run";
      return;
    }
    if (where.context !== undefined) {
      if (!run) await showThread(undefined);
      await openContext(threadId, where.context, closeDrawer);
      app.dataset.ready = "context";
      return;
    }
    closeContext();
    await showThread(where.seq);
  }

  crumb.textContent = threadId;
  document.title = threadId + " · runjournal";
  // popstate: the back button, and links to a fragment (hashchange would come second)
  window.addEventListener("popstate", () => render().catch(showError));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && document.body.classList.contains("with-drawer")) closeDrawer();
  });
  return render();
}

// ---- routing ---------------------------------------------------------------------------

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
  const page = threadId !== null ? threadPage(threadId) : showThreads();
  page.catch(showError);
}

route();
