// The session viewer's page script: hand-written, no framework, no build step.
//
// Invariant: everything that comes from a log is untrusted model output. It reaches the DOM
// only as text (createTextNode / textContent), never through innerHTML, attribute names, URLs
// or styles, so no markup in a log can become an element or a script. The server's
// Content-Security-Policy (script-src 'self') is the second wall.
//
// The page lists the workspace's sessions (GET /api/sessions, polled) and shows the one named
// by the location hash as a timeline, following its log: GET /api/sessions/<id>/lines?from=<n>
// pages through the log by byte offset, then polls for lines appended since (a turn running
// in another process appears without a reload).
"use strict";

const POLL_MS = 1000;
const LIST_POLL_MS = 3000;
const TEXT_SHOWN = 20000;
const DIFF_CELLS = 4000000;

/** An element with a class and children (strings become text nodes). */
function h(tag, className, ...children) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    el.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return el;
}

/** Text of any value, cut to TEXT_SHOWN characters with a note. */
function shown(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2) ?? String(value);
  if (text.length <= TEXT_SHOWN) return text;
  return `${text.slice(0, TEXT_SHOWN)}\n… (${text.length - TEXT_SHOWN} more characters not shown)`;
}

function timeOf(ms) {
  return typeof ms === "number" ? new Date(ms).toLocaleTimeString() : "";
}

function textOf(blocks) {
  if (!Array.isArray(blocks)) return shown(blocks);
  return shown(blocks.map((b) => (b && b.type === "text" && typeof b.text === "string" ? b.text : JSON.stringify(b))).join("\n"));
}

function usageLine(usage) {
  if (!usage || typeof usage !== "object") return null;
  const parts = [`in ${usage.inputTokens ?? "?"}`, `out ${usage.outputTokens ?? "?"}`];
  if (usage.reasoningTokens !== undefined) parts.push(`reasoning ${usage.reasoningTokens}`);
  if (usage.cacheHitTokens !== undefined) parts.push(`cache hit ${usage.cacheHitTokens}`);
  if (usage.cacheMissTokens !== undefined) parts.push(`cache miss ${usage.cacheMissTokens}`);
  if (typeof usage.costUsd === "number") parts.push(`$${usage.costUsd.toFixed(6)}`);
  return h("div", "usage", `tokens: ${parts.join(" · ")}`);
}

// --- diffs of edits --------------------------------------------------------------------------

/** A line diff (longest common subsequence): [op, line] with op " ", "-" or "+". */
function lineDiff(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  if (a.length * b.length > DIFF_CELLS) return [...a.map((l) => ["-", l]), ...b.map((l) => ["+", l])];
  const n = a.length;
  const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) out.push([" ", a[i++]]), j++;
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(["-", a[i++]]);
    else out.push(["+", b[j++]]);
  }
  while (i < n) out.push(["-", a[i++]]);
  while (j < m) out.push(["+", b[j++]]);
  return out;
}

/** The diff an edit_file or write_file call makes, from its arguments; null for other tools. */
function editDiff(name, args) {
  if (!args || typeof args !== "object") return null;
  let ops;
  if (name === "edit_file" && typeof args.oldText === "string" && typeof args.newText === "string") ops = lineDiff(shown(args.oldText), shown(args.newText));
  else if (name === "write_file" && typeof args.content === "string") ops = shown(args.content).split("\n").map((l) => ["+", l]);
  else return null;
  const pre = h("pre", "diff");
  for (const [op, line] of ops) pre.append(h("span", op === "+" ? "add" : op === "-" ? "del" : "ctx", `${op} ${line}`));
  const title = `${name === "write_file" ? "write" : "edit"} ${typeof args.path === "string" ? args.path : ""}${args.replaceAll ? " (every occurrence)" : ""}`;
  return h("div", "diff-box", h("div", "diff-title", title), pre);
}

// --- the timeline -----------------------------------------------------------------------------

let view = null; // { id, generation, cursor, calls: Map<callId, element>, list: <ol> }
let generation = 0;

function card(event, kind, title, ...body) {
  const li = h("li", `event ${kind}`, h("div", "event-head", h("span", "kind", title), h("span", "time", timeOf(event.time))), ...body);
  li.dataset.type = typeof event.type === "string" ? event.type : "";
  if (typeof event.seq === "number") li.dataset.seq = String(event.seq);
  return li;
}

function toolCallElement(block) {
  const result = h("div", "tool-result pending", "running…");
  const el = h(
    "div",
    "tool-call",
    h("div", "tool-name", `tool call: ${String(block.name)}`, h("span", "call-id", ` ${String(block.id ?? "")}`)),
    editDiff(block.name, block.arguments),
    h("details", "args", h("summary", null, "arguments"), h("pre", null, shown(block.rawArguments ?? block.arguments ?? {}))),
    result,
  );
  el.dataset.type = "tool-call";
  if (typeof block.id === "string") view.calls.set(block.id, result);
  return el;
}

function fillResult(target, data) {
  target.className = `tool-result${data.isError ? " error" : ""}`;
  target.replaceChildren(
    h("div", "result-head", `${data.isError ? "error" : "result"}${typeof data.durationMs === "number" ? ` · ${data.durationMs} ms` : ""}`),
    h("pre", null, textOf(data.content)),
  );
}

function generic(event) {
  const kind = typeof event.type === "string" && event.type.startsWith("hook/") ? "hook" : "other";
  return card(event, kind, String(event.type), h("pre", null, shown(event.data ?? event)));
}

/** The element(s) of one event; unknown types are shown generically, so new events appear too. */
function render(event) {
  const d = event.data && typeof event.data === "object" ? event.data : {};
  switch (event.type) {
    case "user/message":
      return card(event, "user", "user", h("div", "text", textOf(d.content)));
    case "turn/start":
      return card(event, "turn", `turn ${d.turn} started`);
    case "step/start":
      return card(event, "step", `step ${d.step}`);
    case "assistant/message": {
      const parts = [];
      for (const block of Array.isArray(d.content) ? d.content : []) {
        if (!block || typeof block !== "object") continue;
        if (block.type === "reasoning") parts.push(h("details", "reasoning", h("summary", null, "reasoning"), h("div", "text", shown(block.text))));
        else if (block.type === "text") parts.push(h("div", "text", shown(block.text)));
        else if (block.type === "tool-call") parts.push(toolCallElement(block));
        else parts.push(h("pre", null, shown(block)));
      }
      return card(event, "assistant", `assistant · step ${d.step} · ${d.finishReason}`, ...parts, usageLine(d.usage));
    }
    case "tool/result": {
      const target = view.calls.get(d.callId);
      if (target) {
        fillResult(target, d);
        return null;
      }
      const orphan = h("div", "tool-result");
      fillResult(orphan, d);
      return card(event, "tool", `tool result: ${String(d.name)}`, orphan);
    }
    case "tool/request":
      return card(event, "approval", `client tool asked: ${String(d.name)}`, h("pre", null, shown(d.arguments ?? {})));
    case "permission/request":
      return card(event, "approval", `approval asked: ${String(d.name)}`, editDiff(d.name, d.arguments), h("pre", null, shown(d.arguments ?? {})));
    case "permission/decision":
      return card(event, `approval ${d.decision === "allow" ? "allowed" : "denied"}`, `approval: ${String(d.decision)}`, d.message ? h("div", "text", shown(d.message)) : null);
    case "context/compacted":
      return card(
        event,
        "compaction",
        `compacted (${String(d.trigger)}): ${d.tokensBefore} → ${d.tokensAfter} tokens`,
        h("details", null, h("summary", null, "summary"), h("div", "text", shown(d.summary))),
      );
    case "turn/end": {
      const reason = d.reason && typeof d.reason === "object" ? d.reason : {};
      return card(
        event,
        `turn-end ${reason.kind === "completed" ? "ok" : "bad"}`,
        `turn ${d.turn} ended: ${String(reason.kind)}`,
        reason.message ? h("div", "text", shown(reason.message)) : null,
        d.output !== undefined ? h("pre", null, shown(d.output)) : null,
        usageLine(d.usage),
      );
    }
    case "user/steer":
      return card(event, "user", "user (steering the turn)", h("div", "text", textOf(d.content)));
    case "hook/request":
      return card(event, "hook", `hook asked: ${String(d.hook)}`, h("pre", null, shown(d)));
    case "hook/decision":
      return card(event, "hook", `hook ${d.skipped !== undefined ? "skipped" : "answered"}: ${String(d.hook)}`, h("pre", null, shown(d)));
    case "checkpoint": {
      const uncovered = Array.isArray(d.uncovered) && d.uncovered.length ? h("div", "text", `not covered: ${d.uncovered.map(String).join(", ")}`) : null;
      const what = d.rewind !== undefined ? `checkpoint of the rewind to before turn ${d.rewind} (turn ${d.turn})` : `checkpoint of turn ${d.turn}`;
      return card(event, "turn", `${what} (${String(d.kind)}): ${d.files} file(s)`, uncovered);
    }
    case "checkpoint/skipped":
      return card(event, "damaged", `checkpoint of turn ${d.turn} skipped: ${shown(d.reason)}`, h("pre", null, shown(d.paths ?? [])));
    case "session/rewound":
      return card(event, "compaction", `rewound to before turn ${d.turn}`);
    case "viewer/unparsable":
      return card(event, "damaged", `unreadable line (${String(d.why)}, ${d.bytes} bytes)`, h("pre", null, shown(d.text)));
    case "viewer/oversized":
      return card(event, "damaged", `${String(d.type ?? "a line")} of ${d.bytes} bytes: too large to show`);
    default:
      return generic(event);
  }
}

function setStatus(text) {
  document.getElementById("status").textContent = text;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Follows session `id`'s log: from its tail ("tail": the last few MiB), or from `from` (0: all of it). */
async function follow(id, from = "tail") {
  const mine = ++generation;
  const timeline = document.getElementById("timeline");
  timeline.replaceChildren();
  document.getElementById("session-head").replaceChildren(h("h2", null, id));
  view = { id, cursor: from, calls: new Map() };
  while (mine === generation) {
    let page;
    try {
      const response = await fetch(`/api/sessions/${encodeURIComponent(id)}/lines?from=${view.cursor}`, { cache: "no-store" });
      if (mine !== generation) return;
      if (response.status === 409) {
        timeline.replaceChildren();
        view = { id, cursor: 0, calls: new Map() };
        continue;
      }
      if (!response.ok) {
        setStatus(response.status === 404 ? "no such session (deleted?)" : `error ${response.status}`);
        await sleep(POLL_MS * 3);
        continue;
      }
      page = await response.json();
    } catch (error) {
      setStatus(`cannot reach the viewer: ${error}`);
      await sleep(POLL_MS * 3);
      continue;
    }
    if (mine !== generation) return;
    if (page.header) {
      // Like each event's card (render, in its try below): String() of a log's value can throw
      // (an object whose toString is no function), and that must not stop the timeline.
      const head = document.getElementById("session-head");
      try {
        const hd = page.header;
        head.replaceChildren(
          h("h2", null, String(hd.sessionId)),
          h("div", "meta", `${String(hd.provider)} / ${String(hd.model)} · created ${new Date(hd.createdAt).toLocaleString()}`),
        );
      } catch (error) {
        head.replaceChildren(h("h2", null, id), h("div", "meta", `cannot show this session's header: ${error}`));
      }
    }
    if (page.skipped) {
      const all = h("button", null, "show them");
      all.addEventListener("click", () => follow(id, 0));
      timeline.append(h("li", "event damaged", `${(page.skipped / 1048576).toFixed(1)} MiB of earlier events are not shown. `, all));
    }
    for (const event of page.events) {
      let el;
      try {
        el = render(event);
      } catch (error) {
        el = card(event, "damaged", `cannot show ${String(event.type)}: ${error}`);
      }
      if (el) timeline.append(el);
    }
    view.cursor = page.next;
    setStatus(`following the log · ${timeline.children.length} entries · checked ${new Date().toLocaleTimeString()}`);
    if (!page.more) await sleep(POLL_MS);
  }
}

// --- the session list -------------------------------------------------------------------------

function selected() {
  try {
    return decodeURIComponent(location.hash.slice(1));
  } catch {
    return ""; // a hand-typed hash that is no encoding: no session
  }
}

async function refreshList() {
  let data;
  try {
    const response = await fetch("/api/sessions", { cache: "no-store" });
    data = await response.json();
  } catch {
    return;
  }
  document.getElementById("workspace").textContent = `${data.workspace} (logs in ${data.sessionRoot})`;
  const list = document.getElementById("sessions");
  const current = selected();
  list.replaceChildren(
    ...data.sessions.map((s) => {
      const link = h("a", null, h("span", "title", s.title || "(no prompt yet)"), h("span", "sub", `${s.sessionId} · ${s.turns} turn(s) · ${new Date(s.updatedAt).toLocaleString()}${s.parentSessionId ? ` · ${s.origin === "fork" ? "fork" : "subagent"} of ${s.parentSessionId}` : ""}`));
      link.href = `#${encodeURIComponent(s.sessionId)}`;
      const li = h("li", s.sessionId === current ? "session selected" : "session", link);
      li.dataset.sessionId = s.sessionId;
      return li;
    }),
  );
  if (data.sessions.length === 0) list.append(h("li", "empty", "no sessions in this workspace yet"));
  document.getElementById("problems").textContent = data.problems.length ? `not listed: ${data.problems.join("; ")}` : "";
}

function onHash() {
  const id = selected();
  for (const li of document.querySelectorAll("#sessions li.session")) li.classList.toggle("selected", li.dataset.sessionId === id);
  if (id) follow(id);
}

async function listLoop() {
  for (;;) {
    try {
      await refreshList();
    } catch (error) {
      // A list this page cannot show must not end the polling: the next one may be fine.
      setStatus(`cannot show the session list: ${error}`);
    }
    await sleep(LIST_POLL_MS);
  }
}

window.addEventListener("hashchange", onHash);
listLoop();
onHash();
