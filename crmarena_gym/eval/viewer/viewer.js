// The crmarena-gym trajectory viewer: runs and experiments, per-task tables, episode lists, transcripts,
// comparisons and the solved-by table. Documents come from the viewer server (/api/..., which filters,
// sorts and pages long lists) or, in a saved copy, from data.js and the chunks beside it (loaded as they
// are needed, and filtered, sorted and paged here as the server would). Every text from a run is put in
// the page as text, never as HTML.
"use strict";

const STATIC = window.CRM_VIEWER_DATA || null;
const POLL_MS = 2000;
const PAGE_SIZES = [25, 50, 100, 200];
const COLUMN_PAGE = 12;
const app = document.getElementById("app");

// -- small helpers ---------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "value") el.value = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const enc = encodeURIComponent;
const fmt = (value, digits = 3) => (value === null || value === undefined ? "–" : Number(value).toFixed(digits));
const money = (value) => (value === null || value === undefined ? "unpriced" : `$${Number(value).toFixed(4)}`);
const ci = (pair) => (pair ? `[${fmt(pair[0])}, ${fmt(pair[1])}]` : "–");
const quote = (value) => (value === null || value === undefined ? "–" : String(value));
const seconds = (value) => (value === null || value === undefined ? "–" : value < 10 ? `${Number(value).toFixed(2)} s` : `${Number(value).toFixed(1)} s`);
const episodeHref = (run, idx, trial, q) => `#/episode/${enc(run)}/${idx}/${trial}${q ? `?q=${enc(q)}` : ""}`;
const compareHref = (idx, a, b) => `#/compare/${idx}?runs=${enc(a.run)},${enc(b.run)}&trials=${a.trial},${b.trial}`;

function message(text, kind) {
  return h("div", { class: kind === "note" ? "message note" : "message", role: "alert" }, text);
}

function num(value, digits) {
  return h("td", { class: "num" }, digits === undefined ? quote(value) : fmt(value, digits));
}

function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "" && !(Array.isArray(p[1]) && !p[1].length))
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

// The gold as a cell says it: an answer, an unanswerable instance (None is right), or not recorded.
function goldText(e) {
  if (e.gold_state === "unanswerable") return h("span", { class: "unanswerable", title: "the instance has no answer: submitting None is right" }, "unanswerable (None)");
  if (e.gold_state === "unrecorded") return h("span", { class: "muted", title: "the record does not hold the gold answer" }, "not recorded");
  return quote(e.gold);
}

function copyButton(text) {
  const button = h("button", { type: "button", class: "copy" }, "copy");
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "copied";
    } catch (err) {
      button.textContent = "select the text to copy it";
    }
  });
  return button;
}

// -- documents: from the server, or from a saved copy's chunks ---------------------------------------

async function get(path) {
  if (STATIC) return staticGet(path);
  let response;
  try {
    response = await fetch(path, { cache: "no-store" });
  } catch (err) {
    throw new Error(`the viewer server cannot be reached (${err.message}); is crmarena-gym view still running?`);
  }
  let body;
  try {
    body = await response.json();
  } catch (err) {
    throw new Error(`the server answered ${response.status} without a JSON document`);
  }
  if (!response.ok) throw new Error(body.error || `the server answered ${response.status}`);
  return body;
}

const chunks = new Map();
const waiting = new Map();
window.CRM_VIEWER_CHUNK = (name, value) => {
  const resolve = waiting.get(name);
  waiting.delete(name);
  if (resolve) resolve(value);
};

function loadChunk(name) {
  if (!chunks.has(name)) {
    chunks.set(name, new Promise((resolve, reject) => {
      waiting.set(name, resolve);
      const script = h("script", { src: name });
      script.addEventListener("error", () => {
        chunks.delete(name);
        reject(new Error(`this copy of the viewer lacks ${name}: copy the whole directory`));
      });
      document.head.append(script);
    }));
  }
  return chunks.get(name);
}

// The last entry of a sorted list of [key..., chunk] whose key is not after the one sought.
function chunkFor(list, key) {
  let found = null;
  for (const entry of list) {
    const first = entry.slice(0, key.length);
    if (compareKeys(first, key) <= 0) found = entry[entry.length - 1];
    else break;
  }
  return found;
}

function compareKeys(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

class ApiError extends Error {}

async function staticGet(target) {
  const [path, query] = target.split("?");
  const params = Object.fromEntries(new URLSearchParams(query || ""));
  const parts = path.replace(/^\/+/, "").split("/").map(decodeURIComponent);
  const docs = STATIC.documents;
  if (Object.prototype.hasOwnProperty.call(docs, path)) return docs[path];
  if (parts[1] === "runs" && parts.length >= 4) {
    const run = STATIC.runs[parts[2]];
    if (!run) throw new ApiError(`no run '${parts[2]}' in this copy of the viewer`);
    if (parts.length === 4 && parts[3] === "episodes") {
      const whole = async (names) => (await Promise.all(names.map(loadChunk))).flat();
      const briefs = await whole(run.episodes);
      const search = (params.q || "").trim() ? await whole(run.search) : null;
      return queryEpisodes(parts[2], briefs, search, params);
    }
    if (parts.length === 6 && parts[3] === "episodes") {
      const key = [Number(parts[4]), Number(parts[5])];
      const name = chunkFor(run.details, key);
      const chunk = name ? await loadChunk(name) : {};
      const doc = chunk[`${key[0]}/${key[1]}`];
      if (!doc) throw new ApiError(`run '${parts[2]}' has no episode idx ${parts[4]}, trial ${parts[5]}`);
      return doc;
    }
  }
  if (parts[1] === "instances" && parts.length === 2) {
    const matrix = (await Promise.all(STATIC.matrix.map(loadChunk))).flat();
    return queryInstances(matrix, docs["/api/runs"].runs, params);
  }
  if (parts[1] === "instances" && parts.length === 3) {
    const name = chunkFor(STATIC.instances, [Number(parts[2])]);
    const doc = name ? (await loadChunk(name))[String(Number(parts[2]))] : null;
    if (!doc) throw new ApiError(`no run of this viewer has an episode of instance ${parts[2]}`);
    return doc;
  }
  throw new ApiError(`this copy of the viewer has no document ${target}`);
}

// As the server's _query_episodes (crmarena_gym/eval/_viewer.py): the same filters, order and page.
const EPISODE_KEYS = {
  idx: (e) => e.idx, trial: (e) => e.trial, task: (e) => e.abbrev, reward: (e) => e.reward, end: (e) => e.end_reason,
  turns: (e) => e.turns, tokens: (e) => e.tokens, cost: (e) => e.cost, errors: (e) => e.error_codes.length,
  dropout: (e) => e.dropout_hits, seconds: (e) => e.seconds,
};

function sortRows(rows, key, descending) {
  const value = (r) => { const v = key(r); return v === undefined ? null : v; };
  const having = rows.filter((r) => value(r) !== null);
  const lacking = rows.filter((r) => value(r) === null);
  having.sort((a, b) => { const x = value(a); const y = value(b); const c = x < y ? -1 : x > y ? 1 : 0; return descending ? -c : c; });
  return having.concat(lacking);
}

function hitIn(fields, needle) {
  for (const [name, text] of fields) {
    const at = text.toLowerCase().indexOf(needle);
    if (at >= 0) {
      const end = at + needle.length;
      return {
        field: name,
        before: (at > 40 ? "…" : "") + text.slice(Math.max(0, at - 40), at),
        match: text.slice(at, end),
        after: text.slice(end, end + 60) + (text.length > end + 60 ? "…" : ""),
      };
    }
  }
  return null;
}

function intParam(params, name) {
  const text = params[name] || "";
  return text === "" ? null : Number(text);
}

function queryEpisodes(run, briefs, search, params) {
  const sort = params.sort || "idx";
  if (!EPISODE_KEYS[sort]) throw new ApiError(`an episode list sorts by one of ${Object.keys(EPISODE_KEYS).join(", ")}, not '${sort}'`);
  const descending = params.order === "desc";
  const offset = intParam(params, "offset") || 0;
  const limit = intParam(params, "limit");
  const minTurns = intParam(params, "min_turns");
  const maxTurns = intParam(params, "max_turns");
  const { task, outcome, end, code } = params;
  const needle = (params.q || "").trim().toLowerCase();
  let rows = [];
  briefs.forEach((brief, i) => {
    if (task && brief.abbrev !== task) return;
    if ((outcome === "success" && !brief.success) || (outcome === "failure" && brief.success)) return;
    const reward = Number(brief.reward || 0);
    if (outcome === "partial" && !(reward > 0 && reward < 1)) return;
    if (end && brief.end_reason !== end) return;
    if (code === "any" && !brief.error_codes.length) return;
    if (code === "dropout" && !brief.dropout_hits) return;
    if (code && code !== "any" && code !== "dropout" && !brief.error_codes.includes(code)) return;
    const turns = brief.turns || 0;
    if ((minTurns !== null && turns < minTurns) || (maxTurns !== null && turns > maxTurns)) return;
    if (needle) {
      const hit = hitIn(search[i], needle);
      if (!hit) return;
      brief = { ...brief, hit };
    }
    rows.push(brief);
  });
  rows = sortRows(rows, EPISODE_KEYS[sort], descending);
  const uniq = (values) => [...new Set(values)].sort();
  return {
    run, total: briefs.length, matched: rows.length, offset, limit, sort, order: descending ? "desc" : "asc",
    episodes: limit === null ? rows.slice(offset) : rows.slice(offset, offset + limit),
    facets: {
      tasks: uniq(briefs.map((b) => b.abbrev).filter((v) => v !== null)),
      end_reasons: uniq(briefs.map((b) => b.end_reason).filter((v) => v !== null).map(String)),
      error_codes: uniq(briefs.flatMap((b) => b.error_codes)),
    },
  };
}

// As the server's _query_instances: a page of instances by a page of (grouped) columns.
function queryInstances(matrix, runs, params) {
  const by = params.by || "run";
  const sort = params.sort || "idx";
  const descending = params.order === "desc";
  const offset = intParam(params, "offset") || 0;
  const limit = intParam(params, "limit");
  const colsOffset = intParam(params, "cols_offset") || 0;
  const colsLimit = intParam(params, "cols_limit");
  const { task, show, sweep, policy } = params;
  const readable = runs.filter((r) => !r.error);
  const columns = new Map();
  for (const r of readable) {
    if ((sweep && r.columns.sweep !== sweep) || (policy && r.columns.policy !== policy)) continue;
    const key = r.columns[by];
    if (!columns.has(key)) columns.set(key, []);
    columns.get(key).push(r.id);
  }
  let rows = [];
  for (const row of matrix) {
    if (task && row.abbrev !== task) continue;
    const cells = [...columns.values()].map((members) => {
      const played = members.filter((run) => row.runs[run]).map((run) => [run, row.runs[run]]);
      if (!played.length) return null;
      return {
        successes: played.reduce((s, [, c]) => s + c[0], 0), trials: played.reduce((s, [, c]) => s + c[1], 0),
        runs: played.length, open: [played[0][0], played[0][1][2]],
      };
    });
    const playedBy = cells.filter((c) => c !== null).length;
    if (!playedBy) continue;
    const solvedBy = cells.filter((c) => c !== null && c.successes).length;
    if ((show === "differ" && !(solvedBy > 0 && solvedBy < playedBy)) || (show === "unsolved" && solvedBy)
      || (show === "solved" && solvedBy < playedBy)) continue;
    rows.push({ idx: row.idx, abbrev: row.abbrev, cells, solved_by: solvedBy, played_by: playedBy });
  }
  const keys = { idx: (r) => r.idx, task: (r) => r.abbrev, solved_by: (r) => r.solved_by };
  rows = sortRows(rows, keys[sort] || keys.idx, descending);
  const colEnd = colsLimit === null ? undefined : colsOffset + colsLimit;
  const names = [...columns.keys()];
  const page = limit === null ? rows.slice(offset) : rows.slice(offset, offset + limit);
  const uniq = (values) => [...new Set(values)].sort();
  return {
    by, columns: names.slice(colsOffset, colEnd).map((name) => ({ id: name, runs: columns.get(name) })),
    total_columns: names.length, cols_offset: colsOffset, cols_limit: colsLimit,
    rows: page.map((r) => ({ ...r, cells: r.cells.slice(colsOffset, colEnd) })),
    total: matrix.length, matched: rows.length, offset, limit, sort, order: descending ? "desc" : "asc",
    facets: {
      tasks: uniq(matrix.map((r) => r.abbrev).filter((v) => v !== null)),
      sweeps: uniq(readable.map((r) => r.columns.sweep)), policies: uniq(readable.map((r) => r.columns.policy)),
    },
  };
}

window.crmViewerGet = get; // for tests: the documents this page reads, from the server or the saved copy

// -- highlighting ----------------------------------------------------------------------------------

const SOQL_KEYWORDS = new Set(("SELECT FROM WHERE AND OR NOT IN INCLUDES EXCLUDES LIKE ORDER BY GROUP HAVING LIMIT OFFSET "
  + "ASC DESC NULLS FIRST LAST WITH TYPEOF WHEN THEN ELSE END USING SCOPE FIND RETURNING ALL FIELDS NAME EMAIL "
  + "PHONE SIDEBAR UPDATE TRACKING VIEWSTAT FOR VIEW REFERENCE ROLLUP CUBE DATA CATEGORY AT ABOVE BELOW "
  + "ABOVE_OR_BELOW SECURITY_ENFORCED DIVISION SNIPPET HIGHLIGHT METADATA NETWORK SPELL_CORRECTION PRICEBOOKID").split(" "));
const DATE_LITERAL = /^(TODAY|YESTERDAY|TOMORROW|(LAST|THIS|NEXT)_[A-Z_]+|(LAST|NEXT)_N_[A-Z_]+|N_[A-Z_]+_AGO)$/i;
const SOQL_TOKEN = /(\s+)|('(?:[^'\\]|\\.)*'?)|(\{(?:[^}\\]|\\.)*\}?)|(\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?)|(\d+(?:\.\d+)?)|([A-Za-z_][A-Za-z0-9_.]*(?::\d+)?)|([=<>!]+|[(),:*])|(.)/gy;

function span(cls, text) {
  return cls ? h("span", { class: cls }, text) : document.createTextNode(text);
}

// A SOQL or SOSL query as spans: keywords, strings and search terms, dates, numbers, functions.
function highlightQuery(text) {
  const out = document.createDocumentFragment();
  SOQL_TOKEN.lastIndex = 0;
  let m;
  while (SOQL_TOKEN.lastIndex < text.length && (m = SOQL_TOKEN.exec(text))) {
    const [all, ws, str, term, date, number, word, op] = m;
    let cls = null;
    if (ws) cls = null;
    else if (str) cls = "tok-str";
    else if (term) cls = "tok-term";
    else if (date || number) cls = "tok-num";
    else if (word) {
      const bare = word.split(":")[0];
      if (SOQL_KEYWORDS.has(word.toUpperCase())) cls = "tok-kw";
      else if (DATE_LITERAL.test(bare)) cls = "tok-lit";
      else if (/^(true|false|null)$/i.test(word)) cls = "tok-lit";
      else if (text[SOQL_TOKEN.lastIndex] === "(") cls = "tok-fn";
      else cls = "tok-field";
    } else if (op) cls = "tok-op";
    out.append(span(cls, all));
  }
  return out;
}

const LITERAL_TOKEN = /(\s+)|("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false|null|True|False|None)\b|([{}\[\](),:])|([A-Za-z_][A-Za-z0-9_]*)|(.)/gy;

// A JSON or Python-literal value as spans, knowing where each value sits (keys and indices from the top),
// so that a value a wrapper changed is marked, and where a cut-short result was cut.
//   marks.path: the changed value's path; marks.field: a field name whose values are all marked (an old
//   record that names only the field); marks.kept: the top-level list kept only its first N items.
function highlightLiteral(text, marks) {
  marks = marks || {};
  const out = document.createDocumentFragment();
  const stack = []; // {kind: "obj"|"arr", key, index, expectKey}
  const pathHere = () => stack.map((f) => (f.kind === "arr" ? f.index : f.key));
  const samePath = (a, b) => a.length === b.length && a.every((x, i) => String(x) === String(b[i]));
  let lastKeySpan = null;
  LITERAL_TOKEN.lastIndex = 0;
  let m;
  const markValue = (el) => {
    const path = pathHere();
    const hitPath = marks.path && samePath(path, marks.path);
    const hitField = !marks.path && marks.field !== undefined && marks.field !== null && path.length && String(path[path.length - 1]) === String(marks.field);
    if (hitPath || hitField) {
      el.classList.add("corrupted");
      el.title = hitPath ? "ToolResultDropout changed this value" : `ToolResultDropout changed one value of field ${marks.field} (which one is not recorded)`;
    }
  };
  while (LITERAL_TOKEN.lastIndex < text.length && (m = LITERAL_TOKEN.exec(text))) {
    const [all, ws, str, number, literal, punct, word] = m;
    const top = stack[stack.length - 1];
    if (ws) { out.append(all); continue; }
    if (punct) {
      if (punct === "{" || punct === "[" || punct === "(") {
        stack.push({ kind: punct === "{" ? "obj" : "arr", key: null, index: 0, expectKey: punct === "{" });
      } else if (punct === "}" || punct === "]" || punct === ")") {
        if (stack.length === 1 && marks.kept !== undefined && marks.kept !== null) {
          out.append(h("span", { class: "cut", title: "ToolResultDropout cut the result short here" }, ` ✂ cut after ${marks.kept} `));
        }
        stack.pop();
      } else if (punct === ",") {
        if (top && top.kind === "arr") top.index += 1;
        if (top && top.kind === "obj") top.expectKey = true;
      } else if (punct === ":" && top && top.kind === "obj") {
        top.expectKey = false;
      }
      out.append(span("tok-punct", all));
      continue;
    }
    if (str && top && top.kind === "obj" && top.expectKey) {
      top.key = str.slice(1, -1);
      lastKeySpan = span("tok-key", all);
      out.append(lastKeySpan);
      continue;
    }
    if (number && top && top.kind === "obj" && top.expectKey) { // a dict keyed by numbers
      top.key = number;
      out.append(span("tok-key", all));
      continue;
    }
    const el = h("span", { class: str ? "tok-str" : number ? "tok-num" : literal ? "tok-lit" : word ? "tok-word" : "" }, all);
    if (str || number || literal) markValue(el);
    out.append(el);
  }
  return out;
}

// Observations: a short prefix ("Salesforce instance output:"), then a literal when there is one.
function highlightObservation(text, dropout) {
  const start = text.search(/[\[{]/);
  const marks = {};
  if (dropout && dropout.mode === "corrupt") {
    if (Array.isArray(dropout.path) && dropout.path.length) marks.path = dropout.path;
    else if (dropout.changed !== null && dropout.changed !== undefined) marks.field = dropout.changed;
  }
  if (dropout && dropout.mode === "truncate") marks.kept = dropout.kept;
  if (start < 0 || start > 80 || text.length > 400000) return document.createTextNode(text);
  const out = document.createDocumentFragment();
  out.append(text.slice(0, start), highlightLiteral(text.slice(start), marks));
  return out;
}

// JSON laid out for reading: objects one key a line, lists of plain values on one (wrapping) line.
function layout(value, indent = "") {
  const inner = indent + "  ";
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    if (value.every((v) => v === null || typeof v !== "object")) return `[${value.map((v) => JSON.stringify(v)).join(", ")}]`;
    return `[\n${value.map((v) => inner + layout(v, inner)).join(",\n")}\n${indent}]`;
  }
  if (value && typeof value === "object") {
    const keys = Object.keys(value);
    if (!keys.length) return "{}";
    return `{\n${keys.map((k) => `${inner}${JSON.stringify(k)}: ${layout(value[k], inner)}`).join(",\n")}\n${indent}}`;
  }
  return JSON.stringify(value);
}

// Wrap every occurrence of needle (case-insensitive) under root in <mark class="hit">, across the spans
// highlighting made. Returns how many there were.
function markHits(root, needle) {
  needle = (needle || "").trim().toLowerCase();
  if (!needle) return 0;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  let text = "";
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    nodes.push([node, text.length]);
    text += node.data;
  }
  const lower = text.toLowerCase();
  const ranges = [];
  for (let at = lower.indexOf(needle); at >= 0; at = lower.indexOf(needle, at + needle.length)) ranges.push([at, at + needle.length]);
  // Wrap from the end so that earlier offsets stay valid.
  for (let r = ranges.length - 1; r >= 0; r--) {
    const [from, to] = ranges[r];
    for (let n = nodes.length - 1; n >= 0; n--) {
      const [node, start] = nodes[n];
      const end = start + node.data.length;
      if (end <= from || start >= to) continue;
      const a = Math.max(from, start) - start;
      const b = Math.min(to, end) - start;
      const range = document.createRange();
      range.setStart(node, a);
      range.setEnd(node, b);
      const mark = h("mark", { class: "hit" });
      range.surroundContents(mark);
      // the node now holds only the text before the mark; what follows is a new node
      const after = mark.nextSibling;
      if (after && after.nodeType === Node.TEXT_NODE) nodes.splice(n + 1, 0, [after, start + b]);
    }
  }
  return ranges.length;
}

// -- routing ---------------------------------------------------------------------------------------

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || "") };
}

function setParams(params) {
  const { parts } = route();
  const query = params.toString();
  history.replaceState(null, "", `#/${parts.map(enc).join("/")}${query ? "?" + query : ""}`);
}

let renderCount = 0;
async function render() {
  const mine = ++renderCount;
  const { parts, params } = route();
  const openKeys = [...app.querySelectorAll("details[open][data-key]")].map((d) => d.dataset.key);
  const closedKeys = [...app.querySelectorAll("details:not([open])[data-key]")].map((d) => d.dataset.key);
  const focused = document.activeElement && document.activeElement.id ? document.activeElement.id : null;
  const scroll = window.scrollY;
  let view;
  try {
    if (parts.length === 0) view = await runsPage(params);
    else if (parts[0] === "run" && parts.length === 2) view = await runPage(parts[1], params);
    else if (parts[0] === "episode" && parts.length === 4) view = await episodePage(parts[1], parts[2], parts[3], params);
    else if (parts[0] === "compare" && parts.length === 2) view = await comparePage(parts[1], params);
    else if (parts[0] === "instances") view = await instancesPage(params);
    else if (parts[0] === "instance" && parts.length === 2) view = await instancePage(parts[1]);
    else view = message(`There is no page ${location.hash}: go back to the runs.`);
  } catch (err) {
    view = message(err.message);
  }
  if (mine !== renderCount) return; // a later render took over
  app.replaceChildren(view);
  for (const key of openKeys) {
    const el = app.querySelector(`details[data-key="${CSS.escape(key)}"]`);
    if (el) el.open = true;
  }
  for (const key of closedKeys) {
    const el = app.querySelector(`details[data-key="${CSS.escape(key)}"]`);
    if (el) el.open = false;
  }
  if (focused) {
    const el = document.getElementById(focused);
    if (el) el.focus();
  }
  window.scrollTo(0, scroll);
  document.body.dataset.page = parts[0] || "runs";
  document.body.dataset.rendered = String(mine);
  if (mine === 1) document.body.dataset.firstPaint = String(Math.round(performance.now())); // since the page began loading
}

// -- shared pieces: problems, tables, pagers, sortable headers ---------------------------------------

function problems(run) {
  const out = [];
  if (run.error) out.push(message(`${run.name}: ${run.error}`));
  for (const p of run.problems || []) out.push(message(`${run.name}: ${p}`, "note"));
  return out;
}

function allProblems(runs) {
  const out = runs.flatMap(problems);
  if (out.length <= 6) return out;
  return h("details", { "data-key": "problems", class: "problems" },
    h("summary", { class: "bad" }, `${out.length} messages about ${runs.filter((r) => r.error || (r.problems || []).length).length} runs`), out);
}

function passKText(passK) {
  if (!passK) return "–";
  return Object.entries(passK).map(([k, v]) => `^${k} ${fmt(v)}`).join(", ");
}

function taskTable(table, onTask) {
  const rows = Object.entries(table || {});
  if (!rows.length) return h("p", { class: "muted" }, "No finished episode yet.");
  const ks = [...new Set(rows.flatMap(([, r]) => Object.keys(r.pass_k)))].sort((a, b) => a - b);
  return h("table", { class: "tasks" },
    h("thead", {}, h("tr", {}, h("th", {}, "task"), h("th", { class: "num" }, "instances"),
      h("th", { class: "num" }, "episodes"), h("th", { class: "num" }, "accuracy"), h("th", {}, "95% interval"),
      ks.map((k) => h("th", { class: "num" }, `pass^${k}`)), h("th", { class: "num" }, "turns"),
      h("th", { class: "num" }, "tokens"), h("th", { class: "num" }, "cost/episode"), h("th", { class: "num" }, "errors"))),
    h("tbody", {}, rows.map(([task, r]) => h("tr", { "data-task": task },
      h("td", {}, onTask && task !== "all" ? h("a", { href: onTask(task) }, task) : task),
      num(r.instances), num(r.episodes), num(r.accuracy, 3), h("td", {}, ci(r.accuracy_ci)),
      ks.map((k) => num(r.pass_k[k], 3)), num(r.turns, 1), num(Math.round(r.tokens)), h("td", { class: "num" }, money(r.cost)),
      num(r.errors)))));
}

// A pager: "rows a-b of n", previous/next and the page size. onPage(offset, limit).
function pager(id, offset, limit, matched, onPage) {
  const last = Math.max(0, Math.ceil(matched / limit) - 1);
  const page = Math.floor(offset / limit);
  const size = h("select", { id: `${id}-size`, "aria-label": "rows per page" }, PAGE_SIZES.map((n) => h("option", { value: n }, `${n} a page`)));
  size.value = String(limit);
  size.addEventListener("change", () => onPage(0, Number(size.value)));
  const go = (p) => h("button", { type: "button", disabled: p < 0 || p > last || p === page, onclick: () => onPage(p * limit, limit) });
  const first = go(0); first.textContent = "« first";
  const prev = go(page - 1); prev.textContent = "‹ previous";
  const next = go(page + 1); next.textContent = "next ›";
  const end = go(last); end.textContent = "last »";
  const shown = matched ? `${(offset + 1).toLocaleString()}–${Math.min(offset + limit, matched).toLocaleString()} of ${matched.toLocaleString()}` : "none";
  return h("div", { class: "pager", id }, first, prev, h("span", { class: "where" }, shown, ` · page ${page + 1} of ${last + 1}`), next, end, size);
}

// A header cell that sorts by key: a click sorts ascending, a second click descending.
function sortHeader(label, key, state, onSort, cls) {
  const active = state.sort === key;
  const arrow = active ? (state.order === "desc" ? " ▼" : " ▲") : "";
  const th = h("th", { class: `sortable${cls ? " " + cls : ""}`, "data-sort": key, "aria-sort": active ? (state.order === "desc" ? "descending" : "ascending") : "none" },
    h("button", { type: "button", class: "sort", title: `sort by ${label}` }, label, arrow));
  th.querySelector("button").addEventListener("click", () => onSort(key, active && state.order !== "desc" ? "desc" : "asc"));
  return th;
}

// -- the runs and experiments ----------------------------------------------------------------------

function accuracyCell(run, showInterval) {
  if (!run) return h("td", { class: "muted" }, "–");
  if (run.error) return h("td", { class: "bad", title: run.error }, "unreadable");
  if (run.accuracy === null) return h("td", { class: "muted" }, "no episode yet");
  const [low, high] = run.accuracy_ci || [run.accuracy, run.accuracy];
  // Positions set through the style object: the page's policy refuses style attributes.
  const range = h("span", { class: "range" });
  range.style.left = `${low * 100}%`;
  range.style.width = `${Math.max(0.5, (high - low) * 100)}%`;
  const point = h("span", { class: "point" });
  point.style.left = `${run.accuracy * 100}%`;
  const bar = h("span", { class: "interval", title: `95% interval ${ci(run.accuracy_ci)}` }, range, point);
  return h("td", { class: "num acc", "data-run": run.id },
    h("a", { href: `#/run/${enc(run.id)}` }, fmt(run.accuracy)), showInterval ? [" ", h("span", { class: "muted small" }, ci(run.accuracy_ci))] : null, bar,
    run.expected_episodes && !run.complete ? h("span", { class: "warn small", title: `${run.episodes} of ${run.expected_episodes} episodes` }, " (partial)") : null);
}

// One experiment: a note per skipped policy, then per sweep a table of settings (rows) by policies (columns).
function experimentView(exp, byId) {
  const skipped = new Map();
  for (const c of exp.cells) {
    if (c.status === "skipped" || c.status === "stopped" || c.status === "not playable") {
      const key = `${c.policy}\u0000${c.status}\u0000${(c.reason || "").replace(/^an earlier cell of .* stopped: /, "")}`;
      skipped.set(key, (skipped.get(key) || 0) + 1);
    }
  }
  const notes = [...skipped.entries()].map(([key, n]) => {
    const [policy, status, reason] = key.split("\u0000");
    return message(`${policy}: ${n} cell${n > 1 ? "s" : ""} ${status}${reason ? `: ${reason}` : ""}`, "note");
  });
  const sweeps = exp.sweeps.length ? exp.sweeps : [...new Set(exp.cells.map((c) => c.sweep))];
  const policies = exp.policies.length ? exp.policies : [...new Set(exp.cells.map((c) => c.policy))];
  const done = exp.cells.filter((c) => c.status === "done").length;
  return h("section", { class: "experiment", "data-experiment": exp.id },
    h("h2", {}, `Experiment ${exp.name}`),
    h("p", { class: "muted" }, `${exp.cells.length} cells (${done} done) in ${exp.path}`,
      Object.keys(exp.selection).length ? ` · ${Object.entries(exp.selection).map(([k, v]) => `${k} ${v}`).join(", ")}` : "",
      " · run it again (it resumes): ", h("code", {}, `crmarena-gym experiment SPEC.toml --out ${exp.path}`)),
    exp.problem ? message(exp.problem, "note") : null,
    notes,
    sweeps.map((sweep) => {
      const cells = exp.cells.filter((c) => c.sweep === sweep);
      const settings = [...new Set(cells.map((c) => c.setting))];
      const shownPolicies = policies.filter((p) => cells.some((c) => c.policy === p && c.status !== "skipped"));
      const hidden = policies.length - shownPolicies.length;
      return h("details", { open: true, "data-key": `sweep-${exp.id}-${sweep}`, class: "sweep" },
        h("summary", {}, `Sweep ${sweep}`, h("span", { class: "muted" }, ` · ${settings.length} settings × ${shownPolicies.length} policies${hidden ? ` (${hidden} skipped: see the notes above)` : ""}`)),
        h("table", { class: "pivot", "data-sweep": sweep },
          h("thead", {}, h("tr", {}, h("th", {}, "setting"), shownPolicies.map((p) => h("th", {}, p)))),
          h("tbody", {}, settings.map((setting) => h("tr", { "data-setting": setting },
            h("th", { class: "setting" }, setting),
            shownPolicies.map((p) => {
              const cell = cells.find((c) => c.setting === setting && c.policy === p);
              if (!cell) return h("td", { class: "muted" }, "–");
              if (cell.run && byId.has(cell.run)) return accuracyCell(byId.get(cell.run), false);
              return h("td", { class: "status", title: cell.reason || "" }, cell.status || "not run yet");
            }))))));
    }));
}

const RUN_COLUMNS = [
  ["run", "run", (r) => r.name], ["policy", "policy", (r) => r.group.policy || r.policy || ""], ["sweep", "sweep", (r) => r.group.sweep || ""],
  ["setting", "setting", (r) => r.group.setting || ""], ["episodes", "episodes", (r) => r.episodes],
  ["accuracy", "accuracy", (r) => r.accuracy], ["errors", "errors", (r) => r.errors], ["turns", "turns", (r) => r.turns],
];

function runsTable(runs, params) {
  const state = { sort: params.get("sort") || "", order: params.get("order") || "asc", q: params.get("runs_q") || "",
    offset: Number(params.get("offset") || 0), limit: Number(params.get("limit") || 50) };
  const grouped = runs.some((r) => r.group.sweep);
  const body = h("tbody", {});
  const head = h("thead", {});
  const pagerBox = h("div", {});
  const count = h("span", { class: "muted", id: "runs-count" });
  const search = h("input", { type: "search", id: "runs-filter", placeholder: "run, policy, sweep, setting, wrapper…", value: state.q });
  const draw = () => {
    const needle = state.q.trim().toLowerCase();
    let shown = runs.filter((r) => !needle || [r.name, r.policy, r.group.sweep, r.group.setting, (r.wrappers || []).join(" ")]
      .some((v) => v && String(v).toLowerCase().includes(needle)));
    const column = RUN_COLUMNS.find((c) => c[1] === state.sort);
    if (column) shown = sortRows(shown, column[2], state.order === "desc");
    const page = shown.slice(state.offset, state.offset + state.limit);
    const onSort = (key, order) => { state.sort = key; state.order = order; state.offset = 0; draw(); };
    head.replaceChildren(h("tr", {},
      RUN_COLUMNS.filter((c) => grouped || !["sweep", "setting"].includes(c[1])).map(([label, key]) => sortHeader(label, key, state, onSort, ["episodes", "accuracy", "errors", "turns"].includes(key) ? "num" : "")),
      h("th", {}, "95% interval"), h("th", {}, "pass^k"), h("th", {}, "wrappers"), h("th", {}, "")));
    body.replaceChildren(...page.map((r) => h("tr", { "data-run": r.id },
      h("td", {}, r.error ? r.name : h("a", { href: `#/run/${enc(r.id)}` }, r.name)),
      h("td", { title: r.policy || "" }, [quote(r.group.policy || r.policy), r.framework ? ` (${r.framework})` : ""]),
      grouped ? [h("td", {}, quote(r.group.sweep)), h("td", {}, quote(r.group.setting))] : null,
      h("td", { class: "num" }, r.expected_episodes ? `${r.episodes} of ${r.expected_episodes}` : r.episodes,
        r.expected_episodes && !r.complete ? h("span", { class: "warn" }, " (running or stopped)") : ""),
      h("td", { class: "num accuracy" }, fmt(r.accuracy)), num(r.errors), num(r.turns, 1), h("td", {}, ci(r.accuracy_ci)),
      h("td", { class: "small" }, passKText(r.pass_k)),
      h("td", { class: "small" }, (r.wrappers || []).join(", ") || (r.wrappers_inferred ? `${r.wrappers_inferred.join(", ")} (inferred)` : "–")),
      h("td", {}, r.error ? h("span", { class: "bad" }, "unreadable") : h("a", { href: `#/run/${enc(r.id)}` }, "episodes")))));
    count.textContent = `${shown.length} of ${runs.length} runs`;
    pagerBox.replaceChildren(shown.length > PAGE_SIZES[0] ? pager("runs-pager", state.offset, state.limit, shown.length, (offset, limit) => { state.offset = offset; state.limit = limit; draw(); }) : "");
    const p = new URLSearchParams();
    if (state.sort) { p.set("sort", state.sort); p.set("order", state.order); }
    if (state.q) p.set("runs_q", state.q);
    if (state.offset) p.set("offset", state.offset);
    if (state.limit !== 50) p.set("limit", state.limit);
    setParams(p);
  };
  search.addEventListener("input", () => { state.q = search.value; state.offset = 0; draw(); });
  draw();
  return [h("div", { class: "filters" }, h("label", { for: "runs-filter" }, "filter the runs", search), count),
    h("table", { id: "runs" }, head, body), pagerBox];
}

async function runsPage(params) {
  const { runs, experiments } = await get("/api/runs");
  const byId = new Map(runs.map((r) => [r.id, r]));
  const few = runs.length <= 4 ? await Promise.all(runs.filter((r) => !r.error).map((r) => get(`/api/runs/${enc(r.id)}`))) : [];
  return h("div", {},
    h("h1", {}, runs.length === 1 ? "Run" : `Runs (${runs.length})`),
    allProblems(runs),
    (experiments || []).map((e) => experimentView(e, byId)),
    h("h2", {}, experiments && experiments.length ? "Every cell as a run" : "Runs"),
    runsTable(runs, params),
    runs.length > 1 ? h("p", {}, h("a", { href: "#/instances" }, "Which run solved each instance"), " · compare two runs on one instance from there.") : null,
    few.map((d) => [h("h2", {}, `Run ${d.name}: per task`), taskTable(d.table, (task) => `#/run/${enc(d.id)}?task=${enc(task)}`)]));
}

// -- one run: its table and its episodes, a page at a time -------------------------------------------

const FILTERS = ["task", "outcome", "end", "code", "min_turns", "max_turns", "q"];

function episodeRow(runId, e, q, showTime) {
  const row = h("tr", { "data-idx": e.idx, "data-trial": e.trial, class: "episode" },
    h("td", { class: "num" }, h("a", { href: episodeHref(runId, e.idx, e.trial, q) }, e.idx)), num(e.trial),
    h("td", {}, quote(e.abbrev)),
    h("td", { class: "num " + (e.success ? "ok" : "bad") }, fmt(e.reward, 2)),
    h("td", {}, quote(e.end_reason)), num(e.turns),
    h("td", {}, e.error_codes.map((c) => h("span", { class: "code" }, c)), e.dropout_hits ? h("span", { class: "effect" }, `dropout ×${e.dropout_hits}`) : ""),
    h("td", { class: "answer" }, quote(e.submitted)), h("td", { class: "gold" }, goldText(e)),
    h("td", { class: "num" }, e.tokens ? e.tokens.toLocaleString() : "–"),
    showTime ? h("td", { class: "num" }, seconds(e.seconds)) : null,
    h("td", {}, h("a", { href: episodeHref(runId, e.idx, e.trial, q) }, "open"), " · ",
      h("a", { href: `#/compare/${e.idx}?runs=${enc(runId)}&trials=${e.trial}` }, "compare")));
  if (!e.hit) return [row];
  const hit = h("tr", { class: "hit-row" }, h("td", { colspan: showTime ? 12 : 11 },
    h("span", { class: "muted" }, `${e.hit.field}: `), h("code", {}, e.hit.before, h("mark", { class: "hit" }, e.hit.match), e.hit.after)));
  return [row, hit];
}

async function runPage(runId, params) {
  const state = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || ""]));
  state.sort = params.get("sort") || "idx";
  state.order = params.get("order") || "asc";
  state.offset = Number(params.get("offset") || 0);
  state.limit = Number(params.get("limit") || 50);
  const query = () => {
    const p = new URLSearchParams();
    for (const k of FILTERS) if (state[k]) p.set(k, state[k]);
    if (state.sort !== "idx" || state.order !== "asc") { p.set("sort", state.sort); p.set("order", state.order); }
    if (state.offset) p.set("offset", state.offset);
    if (state.limit !== 50) p.set("limit", state.limit);
    return p;
  };
  const listPath = () => { const p = query(); p.set("offset", state.offset); p.set("limit", state.limit); p.set("sort", state.sort); p.set("order", state.order); return `/api/runs/${enc(runId)}/episodes?${p}`; };
  const [run, first] = await Promise.all([get(`/api/runs/${enc(runId)}`), get(listPath())]);
  const meta = run.metadata || {};
  const settings = meta.policy_settings ? JSON.stringify(meta.policy_settings) : null;
  const head = h("thead", {});
  const tbody = h("tbody", {});
  const count = h("span", { id: "count", class: "muted", "aria-live": "polite" });
  const pagerTop = h("div", {});
  const pagerBottom = h("div", {});
  const facets = first.facets;
  let showTime = false;
  let sequence = 0;
  const draw = (list) => {
    showTime = showTime || list.episodes.some((e) => e.seconds !== null && e.seconds !== undefined);
    const onSort = (key, order) => { state.sort = key; state.order = order; state.offset = 0; refresh(); };
    const cols = [["idx", "idx", "num"], ["trial", "trial", "num"], ["task", "task"], ["reward", "reward", "num"], ["end", "end"], ["turns", "turns", "num"],
      ["errors", "errors"], [null, "submitted"], [null, "gold"], ["tokens", "tokens", "num"], ...(showTime ? [["seconds", "time", "num"]] : []), [null, ""]];
    head.replaceChildren(h("tr", {}, cols.map(([key, label, cls]) => (key ? sortHeader(label, key, state, onSort, cls) : h("th", {}, label)))));
    tbody.replaceChildren(...list.episodes.flatMap((e) => episodeRow(runId, e, state.q, showTime)));
    count.textContent = `${list.matched.toLocaleString()} of ${list.total.toLocaleString()} episodes`;
    const onPage = (offset, limit) => { state.offset = offset; state.limit = limit; refresh(); };
    pagerTop.replaceChildren(pager("pager", list.offset, state.limit, list.matched, onPage));
    pagerBottom.replaceChildren(list.matched > 10 ? pager("pager-bottom", list.offset, state.limit, list.matched, onPage) : "");
    setParams(query());
  };
  const refresh = async () => {
    const mine = ++sequence;
    document.body.dataset.loading = "1";
    try {
      const list = await get(listPath());
      if (mine === sequence) draw(list);
    } catch (err) {
      if (mine === sequence) tbody.replaceChildren(h("tr", {}, h("td", { colspan: 12 }, message(err.message))));
    } finally {
      if (mine === sequence) delete document.body.dataset.loading;
    }
  };
  let typing = null;
  const control = (key, label, element, delay) => {
    element.id = `filter-${key}`;
    element.value = state[key];
    const apply = () => { if (state[key] === element.value) return; state[key] = element.value; state.offset = 0; refresh(); };
    element.addEventListener("change", apply);
    element.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(apply, delay || 0); });
    return h("label", { for: element.id }, label, element);
  };
  const select = (options) => h("select", {}, options.map(([v, t]) => h("option", { value: v }, t)));
  const form = h("div", { class: "filters" },
    control("task", "task", select([["", "all"], ...facets.tasks.map((t) => [t, t])])),
    control("outcome", "outcome", select([["", "all"], ["success", "solved (reward 1)"], ["failure", "failed"], ["partial", "partial F1"]])),
    control("end", "end reason", select([["", "all"], ...facets.end_reasons.map((t) => [t, t])])),
    control("code", "error code", select([["", "all"], ["any", "any error"], ["dropout", "a dropped or corrupted result"], ...facets.error_codes.map((t) => [t, t])])),
    control("min_turns", "turns ≥", h("input", { type: "number", min: 0 }), 300),
    control("max_turns", "turns ≤", h("input", { type: "number", min: 0 }), 300),
    control("q", "search queries, calls and answers", h("input", { type: "search", placeholder: "SELECT, get_cases, an id…" }), 250),
    count);
  const group = run.group || {};
  const view = h("div", {},
    h("h1", {}, `Run ${run.name}`),
    problems(run),
    facts([["directory", run.path], ["experiment cell", group.sweep ? `sweep ${group.sweep} · policy ${group.policy} · setting ${group.setting}` : null],
      ["policy", [quote(run.policy), run.framework ? ` (${run.framework})` : ""]],
      ["policy settings", settings], ["env", run.env_id], ["env arguments", run.env_kwargs ? JSON.stringify(run.env_kwargs) : null],
      ["wrappers", (run.wrappers || []).join(", ") || (run.wrappers_inferred ? `${run.wrappers_inferred.join(", ")} (inferred from the steps: the file does not record them)` : "none")],
      ["trials", run.trials],
      ["episodes", run.expected_episodes ? `${run.episodes} of ${run.expected_episodes}${run.complete ? "" : " (running or stopped)"}` : run.episodes],
      ["accuracy", run.accuracy === null ? null : `${fmt(run.accuracy)} (95% interval ${ci(run.accuracy_ci)}), pass^k ${passKText(run.pass_k)}`],
      ["run it again", run.command ? [h("code", { class: "command" }, run.command), " ", copyButton(run.command)]
        : group.experiment ? "run the experiment again with its spec (it resumes: finished cells are kept)" : null]]),
    h("h2", {}, "Per task"),
    taskTable(run.table, (task) => `#/run/${enc(runId)}?task=${enc(task)}`),
    h("h2", {}, "Episodes"),
    form, pagerTop,
    h("table", { id: "episodes" }, head, tbody),
    pagerBottom);
  draw(first);
  return view;
}

// -- one episode -----------------------------------------------------------------------------------

function codeBlock(cls, text, highlight) {
  const pre = h("pre", { class: cls });
  pre.append(highlight ? highlight(text) : text);
  return pre;
}

// A long text folded: highlighted only when opened (a transcript of large results opens fast).
function foldedBlock(title, cls, text, highlight, key) {
  const details = h("details", { "data-key": key }, h("summary", {}, title));
  const fill = () => { if (details.open && details.childElementCount === 1) details.append(codeBlock(cls, text, highlight)); };
  details.addEventListener("toggle", fill);
  queueMicrotask(fill); // a fold reopened by render() fills itself
  return details;
}

// A conversation's turn: the agent's message to the user, then the user's reply (with what it revealed).
function userTurn(step) {
  const u = step.user;
  return h("div", { class: "conversation" },
    h("div", { class: "agent-turn" }, h("span", { class: "kind" }, "agent → user"), " ", h("span", { class: "said" }, quote(u.message))),
    h("div", { class: "user-turn" }, h("span", { class: "kind" }, "user"), " ", h("span", { class: "said" }, quote(u.reply)),
      u.revealed.length ? h("span", { class: "muted" }, ` (revealed: ${u.revealed.join(", ")})`) : null));
}

function conversationFacts(e) {
  const c = e.conversation;
  if (!c) return null;
  const usage = (c.user_summary || {}).usage;
  return facts([["user", c.user], ["revealed", c.revealed.length ? c.revealed.join(", ") : "nothing"],
    ["user turns", c.user_turns], ["conversation ended by", c.end],
    ["user's model calls", usage ? `${usage.calls} calls, ${usage.prompt_tokens + usage.completion_tokens} tokens, ${money(usage.cost)}` : null]]);
}

function parsedAction(step, key) {
  const p = step.parsed || {};
  if (p.kind === "query") {
    return [h("div", {}, h("span", { class: "kind" }, `${(p.language || "soql").toUpperCase()} query`)),
      codeBlock("query", p.query, highlightQuery)];
  }
  if (p.kind === "call") {
    const args = layout(p.arguments);
    const show = (text) => highlightLiteral(text);
    return [h("div", {}, h("span", { class: "kind" }, "function call"), " ", h("code", { class: "fn" }, `${p.name}(…)`)),
      args.length > 1500 ? foldedBlock(`arguments (${args.length.toLocaleString()} characters)`, "arguments", args, show, `${key}-args`)
        : codeBlock("arguments", args, show)];
  }
  if (p.kind === "submit") return [h("div", {}, h("span", { class: "kind" }, "submit"), " ", h("code", { class: "answer" }, p.answer))];
  return [h("div", {}, h("span", { class: "code" }, "unreadable action"), " ", p.error || ""), h("pre", { class: "raw-action" }, quote(step.action))];
}

function timingText(timing) {
  if (!timing) return null;
  const parts = Object.entries(timing);
  const total = timing.step !== undefined ? timing.step : parts.reduce((s, [, v]) => s + v, 0);
  const detail = parts.filter(([k]) => k !== "step").map(([k, v]) => `${k} ${seconds(v)}`).join(", ");
  return h("span", { class: "timing", title: "measured while the run played" }, `time ${seconds(total)}${detail ? ` (${detail})` : ""}`);
}

function stepView(step, key) {
  const usage = step.usage || {};
  const failed = Boolean(step.error);
  const hit = Boolean(step.dropout);
  const obsTitle = `observation (${step.observation.length.toLocaleString()} characters, ${step.observation.split("\n").length} lines)`;
  const dropped = step.dropout && (step.dropout.mode === "drop" || step.dropout.mode === "error");
  const show = (text) => highlightObservation(text, step.dropout);
  return h("div", { class: `step${failed ? " failed" : ""}${hit ? " hit" : ""}`, "data-turn": step.turn },
    h("div", { class: "head" },
      h("strong", {}, `Turn ${step.turn}`),
      step.error ? h("span", { class: "code", title: "the error code the environment reported" }, step.error) : null,
      step.effects.map((e) => h("span", { class: "effect" }, e)),
      step.turns_left !== null && step.turns_left !== undefined ? h("span", { class: "muted" }, `${step.turns_left} turns left`) : null,
      timingText(step.timing),
      usage.total_tokens !== undefined ? h("span", { class: "muted" }, `${quote(usage.prompt_tokens)} + ${quote(usage.completion_tokens)} tokens, ${money(usage.cost)}`) : null),
    h("div", { class: "body" },
      step.note ? h("div", { class: "note" }, `policy: ${step.note}`) : null,
      step.reply ? foldedBlock(`model reply (${step.reply.length.toLocaleString()} characters)`, "reply", step.reply, null, `${key}-reply`) : null,
      step.user ? userTurn(step) : parsedAction(step, key),
      step.user ? null : step.long ? foldedBlock(`${obsTitle}, folded`, `observation${dropped ? " replaced" : ""}`, step.observation, show, `${key}-obs`)
        : [h("div", { class: "muted" }, "observation", dropped ? h("span", { class: "effect" }, " shown instead of the real result") : ""),
          codeBlock(`observation${dropped ? " replaced" : ""}`, step.observation, show)]));
}

function verdict(e) {
  const status = e.success ? "Solved" : e.end_reason === "running" ? "Running" : "Not solved";
  return h("div", { class: "verdict" },
    h("div", {}, h("span", { class: e.success ? "ok" : "bad" }, status),
      ` · reward ${fmt(e.reward, 3)} · ended by ${quote(e.end_reason)} after ${quote(e.turns)} turns`,
      e.seconds !== null && e.seconds !== undefined ? ` · ${seconds(e.seconds)}` : ""),
    h("table", { class: "answers" }, h("tbody", {},
      h("tr", {}, h("th", {}, "submitted"), h("td", { class: "submitted" }, quote(e.submitted))),
      h("tr", {}, h("th", {}, "gold"), h("td", { class: "gold" }, goldText(e))))),
    h("div", { class: "explanation" }, e.reward_explanation),
    stateDiffView(e),
    e.final_reply ? foldedBlock(`the model's last reply, with no call (${e.final_reply.length.toLocaleString()} characters)`, "reply", e.final_reply, null, `${e.run}-${e.idx}-${e.trial}-final`) : null,
    e.error ? message(e.error) : null);
}

// Act mode: the records the agent changed beside the changes the task asked for (missing and stray marked).
function changeText(c) {
  const fields = Object.entries(c.fields || {}).map(([k, v]) => c.op === "create" ? `${k}=${quote(v.new)}` : `${k}: ${quote(v.old)} → ${quote(v.new)}`);
  return `${c.op} ${c.sobject} ${c.id}${fields.length ? ": " + fields.join(", ") : ""}`;
}

function stateDiffView(e) {
  if (!Array.isArray(e.state_diff)) return null;
  const check = e.diff_check || {};
  const stray = new Set(check.stray || []);
  const expected = (e.expected_changes || []).map((x) => `${x.op} ${x.sobject} ${x.id}${x.values ? ": " + Object.entries(x.values).map(([k, v]) => `${k} → ${quote(v)}`).join(", ") : ""}`);
  const missing = Array.isArray(check.missing) ? check.missing : [];
  return h("div", { class: "state-diff" },
    h("h3", {}, "Changes to the org"),
    h("table", { class: "answers diff" }, h("tbody", {},
      h("tr", {}, h("th", {}, "made"), h("td", {}, e.state_diff.length
        ? h("ul", {}, e.state_diff.map((c) => h("li", { class: [...stray].some((s) => s.includes(c.id)) ? "bad" : "" }, changeText(c))))
        : "none")),
      h("tr", {}, h("th", {}, "expected"), h("td", {}, expected.length ? h("ul", {}, expected.map((x) => h("li", {}, x)))
        : Array.isArray(e.expected_changes) ? "no change (the record is right as it is)" : "not recorded (the run was not privileged)")),
      e.answer_check ? h("tr", {}, h("th", {}, "answer"), h("td", { class: e.answer_check.reward >= 1 ? "" : "bad" },
        `${quote(e.answer_check.submitted)}${"gold" in e.answer_check ? ` (gold ${quote(e.answer_check.gold)})` : ""}: ${e.answer_check.reward >= 1 ? "right" : "wrong"}`)) : null,
      missing.length ? h("tr", {}, h("th", {}, "missing"), h("td", { class: "bad" }, h("ul", {}, missing.map((m) => h("li", {}, m))))) : null,
      stray.size ? h("tr", {}, h("th", {}, "stray"), h("td", { class: "bad" }, h("ul", {}, [...stray].map((m) => h("li", {}, m))))) : null)));
}

function episodeFacts(e, withRun) {
  const usage = e.usage || {};
  return facts([
    ["run", withRun ? h("a", { href: `#/run/${enc(e.run)}` }, e.run) : null], ["task", `${quote(e.abbrev)} (${quote(e.task)})`], ["seed", e.seed],
    ["wrappers", (e.wrappers || []).length ? (e.wrappers.join(", ") + (e.wrappers_inferred ? " (inferred from the steps: the recording does not name them)" : "")) : "none"],
    ["model calls", usage.calls ? `${usage.calls} calls, ${usage.total_tokens} tokens (${usage.prompt_tokens} in, ${usage.completion_tokens} out), ${money(usage.cost)}${usage.retries ? `, ${usage.retries} retries` : ""}` : null],
    ["system prompt", e.system_prompt_sha256 ? `sha256 ${e.system_prompt_sha256.slice(0, 16)}…` : null]]);
}

function episodeView(e) {
  const key = `${e.run}-${e.idx}-${e.trial}`;
  return h("div", { class: "episode-view", "data-run": e.run },
    verdict(e),
    episodeFacts(e, true),
    conversationFacts(e),
    e.system_prompt ? foldedBlock("system prompt", "system", e.system_prompt, null, `${key}-system`) : null,
    h("h3", {}, e.conversation ? "The user's opening" : "Question"),
    h("pre", { class: "question" }, e.question),
    h("h3", {}, `Steps (${e.steps.length})`),
    e.steps.map((s, i) => stepView(s, `${key}-${i}`)));
}

// Search hits: marked, counted, the first one scrolled to; folds holding one are opened.
function searchBar(root, q) {
  if (!q) return null;
  for (const d of root.querySelectorAll("details")) {
    if (!d.open && d.textContent.toLowerCase().includes(q.toLowerCase())) d.open = true;
  }
  for (const d of root.querySelectorAll("details[open]")) d.dispatchEvent(new Event("toggle"));
  const count = markHits(root, q);
  let at = -1;
  const next = h("button", { type: "button", id: "next-hit" }, "next hit ↓");
  next.addEventListener("click", () => {
    const hits = root.querySelectorAll("mark.hit");
    if (!hits.length) return;
    hits.forEach((m) => m.classList.remove("current"));
    at = (at + 1) % hits.length;
    hits[at].classList.add("current");
    hits[at].scrollIntoView({ block: "center" });
  });
  return h("div", { class: "message note searchbar" }, `${count} hit${count === 1 ? "" : "s"} of “${q}”`, count ? [" · ", next] : "",
    " · ", h("a", { href: location.hash.replace(/\?.*$/, "") }, "clear"));
}

async function episodePage(runId, idx, trial, params) {
  const [e, instance] = await Promise.all([get(`/api/runs/${enc(runId)}/episodes/${enc(idx)}/${enc(trial)}`),
    get(`/api/instances/${enc(idx)}`).catch(() => null)]);
  const others = instance ? Object.keys(instance.runs).filter((r) => r !== runId || instance.runs[r].trial_list.length > 1) : [];
  const pick = h("select", { id: "compare-with" }, h("option", { value: "" }, `compare with… (${others.length} runs played it)`),
    others.flatMap((r) => instance.runs[r].trial_list.filter((t) => r !== runId || String(t) !== String(trial))
      .map((t) => h("option", { value: `${r}|${t}` }, `${r} · trial ${t}`))));
  pick.addEventListener("change", () => {
    if (!pick.value) return;
    const [run, t] = pick.value.split("|");
    location.hash = compareHref(idx, { run: runId, trial }, { run, trial: t });
  });
  const view = episodeView(e);
  const q = params.get("q") || "";
  const bar = searchBar(view, q);
  return h("div", {},
    h("h1", {}, `Episode ${e.idx}, trial ${e.trial} · ${quote(e.abbrev)} · run ${e.run}`),
    h("p", {}, others.length ? pick : null, " ", h("a", { href: `#/instance/${e.idx}` }, "every run on this instance")),
    bar, view);
}

// -- two episodes side by side ---------------------------------------------------------------------

const tokensOf = (text) => String(text === null || text === undefined ? "" : text).split(/(\s+|[{}\[\](),:"'])/).filter((t) => t !== "");

// A token diff of two texts (longest common subsequence): [kind, text] with kind "same", "del", "ins".
function diffTokens(a, b) {
  const x = tokensOf(a);
  const y = tokensOf(b);
  if (x.length * y.length > 4e6) return [["del", x.join("")], ["ins", y.join("")]];
  const table = Array.from({ length: x.length + 1 }, () => new Uint32Array(y.length + 1));
  for (let i = x.length - 1; i >= 0; i--) for (let j = y.length - 1; j >= 0; j--) {
    table[i][j] = x[i] === y[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
  }
  const out = [];
  let i = 0;
  let j = 0;
  const push = (kind, text) => { if (out.length && out[out.length - 1][0] === kind) out[out.length - 1][1] += text; else out.push([kind, text]); };
  while (i < x.length && j < y.length) {
    if (x[i] === y[j]) { push("same", x[i]); i++; j++; } else if (table[i + 1][j] >= table[i][j + 1]) push("del", x[i++]); else push("ins", y[j++]);
  }
  while (i < x.length) push("del", x[i++]);
  while (j < y.length) push("ins", y[j++]);
  return out;
}

function diffView(parts, side) {
  return h("pre", { class: "diff" }, parts.filter(([kind]) => kind === "same" || kind === (side === 0 ? "del" : "ins"))
    .map(([kind, text]) => (kind === "same" ? text : h("span", { class: side === 0 ? "diff-del" : "diff-ins" }, text))));
}

// Where two episodes first part ways: the first turn whose action, or result, differs, or where one ends.
function divergence(a, b) {
  const n = Math.min(a.steps.length, b.steps.length);
  for (let i = 0; i < n; i++) {
    if (a.steps[i].action !== b.steps[i].action) return { turn: i, what: "action", text: `the actions differ at turn ${a.steps[i].turn}` };
    if (a.steps[i].observation !== b.steps[i].observation) return { turn: i, what: "observation", text: `the same action at turn ${a.steps[i].turn} got different results` };
  }
  if (a.steps.length !== b.steps.length) {
    const [short, long] = a.steps.length < b.steps.length ? ["left", "right"] : ["right", "left"];
    return { turn: n, what: "length", text: `the ${short} episode ends after ${n} turns; the ${long} one goes on` };
  }
  return null;
}

// The question, once: its first line, the rest (the conventions every question carries) folded.
function questionBlock(text, key) {
  const [first, ...rest] = text.split("\n");
  if (!rest.join("").trim()) return [h("h3", {}, "Question"), h("pre", { class: "question" }, text)];
  return [h("h3", {}, "Question"), h("details", { "data-key": key, class: "question" },
    h("summary", {}, h("span", { class: "question-first" }, first), h("span", { class: "muted" }, ` (${rest.length} more lines)`)),
    h("pre", { class: "question" }, text))];
}

async function comparePage(idx, params) {
  const instance = await get(`/api/instances/${enc(idx)}`);
  const having = Object.keys(instance.runs);
  const chosen = (params.get("runs") || "").split(",").filter(Boolean);
  const trials = (params.get("trials") || "").split(",");
  const sides = [0, 1].map((i) => {
    let run = chosen[i];
    if (!run) run = having.find((r) => r !== chosen[0]) || having[0];
    const known = instance.runs[run];
    let trial = trials[i] !== undefined && trials[i] !== "" ? trials[i] : known ? known.trial_list[0] : 0;
    if (i === 1 && run === chosen[0] && !trials[1] && known && known.trial_list.length > 1) trial = known.trial_list[1];
    return { run, trial: String(trial) };
  });
  const picker = (i) => {
    const sel = h("select", { id: `compare-${i}` }, having.map((r) => instance.runs[r].trial_list.map((t) =>
      h("option", { value: `${r}|${t}` }, `${r} · trial ${t}`))));
    sel.value = `${sides[i].run}|${sides[i].trial}`;
    sel.addEventListener("change", () => {
      const [run, trial] = sel.value.split("|");
      sides[i] = { run, trial };
      location.hash = compareHref(idx, sides[0], sides[1]);
    });
    return sel;
  };
  const episodes = await Promise.all(sides.map(async (s) => {
    if (!instance.runs[s.run]) return new Error(`Run ${s.run} has no episode of instance ${idx}.`);
    try {
      return await get(`/api/runs/${enc(s.run)}/episodes/${enc(idx)}/${enc(s.trial)}`);
    } catch (err) {
      return err;
    }
  }));
  const header = h("tr", {}, [0, 1].map((i) => h("th", { class: "side", "data-side": i }, picker(i))));
  const head = h("tr", {}, episodes.map((e, i) => h("td", { class: "side", "data-side": i },
    e instanceof Error ? message(e.message) : h("div", { class: "episode-view", "data-run": e.run }, verdict(e), episodeFacts(e, true)))));
  const rows = [];
  let banner = null;
  if (!(episodes[0] instanceof Error) && !(episodes[1] instanceof Error)) {
    const [a, b] = episodes;
    const split = divergence(a, b);
    banner = split ? h("div", { class: "message note divergence" }, "First divergence: ", split.text, " · ", h("a", { href: "#", onclick: (ev) => { ev.preventDefault(); const el = app.querySelector("tr.diverge"); if (el) el.scrollIntoView({ block: "center" }); } }, "show it"))
      : h("div", { class: "message note divergence" }, "The two episodes are the same step for step.");
    const longest = Math.max(a.steps.length, b.steps.length);
    for (let i = 0; i < longest; i++) {
      const cells = [a, b].map((e, s) => {
        const step = e.steps[i];
        if (!step) return h("td", { class: "side empty", "data-side": s }, h("span", { class: "muted" }, "(the episode had ended)"));
        const view = stepView(step, `cmp${s}-${e.run}-${e.trial}-${i}`);
        if (split && i === split.turn && split.what === "action") {
          const parts = diffTokens(a.steps[i].action, b.steps[i].action);
          view.querySelector(".body").prepend(h("div", { class: "muted" }, "the action, against the other side's"), diffView(parts, s));
        }
        return h("td", { class: "side", "data-side": s }, view);
      });
      const cls = split && i === split.turn ? "diverge" : split && i > split.turn ? "after" : "same";
      rows.push(h("tr", { class: `turn ${cls}`, "data-turn": i + 1 }, cells));
    }
  }
  const questions = episodes.filter((e) => !(e instanceof Error)).map((e) => e.question);
  const sameQuestion = questions.length === 2 && questions[0] === questions[1];
  return h("div", {},
    h("h1", {}, `Instance ${idx} (${quote(instance.abbrev)}) side by side`),
    h("p", {}, h("a", { href: `#/instance/${idx}` }, "every run on this instance")),
    having.length === 1 && instance.runs[having[0]].trial_list.length < 2 ? message("Only one episode of this instance is open: start the viewer with two runs to compare them.", "note") : null,
    banner,
    sameQuestion || questions.length < 2 ? questionBlock(questions[0] || "", `q-${idx}`)
      : [h("h3", {}, "Questions (they differ: the two runs were set up differently)"),
        h("div", { class: "columns" }, questions.map((q) => h("pre", { class: "question" }, q)))],
    h("table", { class: "compare" }, h("thead", {}, header), h("tbody", {}, head, rows)));
}

// -- which run solved each instance: a page of instances by a page of (grouped) columns --------------

async function instancesPage(params) {
  const state = {
    by: params.get("by") || "", sweep: params.get("sweep") || "", policy: params.get("policy") || "",
    task: params.get("task") || "", show: params.get("show") || "", sort: params.get("sort") || "idx",
    order: params.get("order") || "asc", offset: Number(params.get("offset") || 0), limit: Number(params.get("limit") || 50),
    cols: Number(params.get("cols") || 0),
  };
  const { runs } = await get("/api/runs");
  const runById = new Map(runs.map((r) => [r.id, r]));
  // A column's name in lines: an experiment's cell as sweep, policy, setting (its id is all three run together).
  const columnLabel = (c, by) => {
    const group = by === "run" && runById.has(c.id) ? runById.get(c.id).group : {};
    const lines = group.sweep ? [group.sweep, group.policy, group.setting] : by === "setting" ? c.id.split(": ") : [c.id];
    return lines.map((line, i) => h("span", { class: `label line${i}${i === lines.length - 1 ? " last" : ""}` }, line));
  };
  if (!state.by) state.by = runs.length > COLUMN_PAGE && runs.some((r) => r.group.policy) ? "policy" : "run";
  const table = h("table", { id: "instances" });
  const count = h("span", { id: "count", class: "muted" });
  const pagers = [h("div", {}), h("div", {}), h("div", {})];
  const form = h("div", { class: "filters" });
  let sequence = 0;
  const path = () => {
    const p = new URLSearchParams({ by: state.by, sort: state.sort, order: state.order, offset: state.offset, limit: state.limit, cols_offset: state.cols, cols_limit: COLUMN_PAGE });
    for (const k of ["sweep", "policy", "task", "show"]) if (state[k]) p.set(k, state[k]);
    return `/api/instances?${p}`;
  };
  const draw = (data) => {
    const onSort = (key, order) => { state.sort = key; state.order = order; state.offset = 0; refresh(); };
    const grouped = data.by !== "run";
    table.replaceChildren(
      h("thead", {}, h("tr", {}, sortHeader("idx", "idx", state, onSort, "num"), sortHeader("task", "task", state, onSort),
        data.columns.map((c) => h("th", { class: "column", title: grouped ? `${c.id}: ${c.runs.length} runs (${c.runs.join(", ")})` : c.id, "data-column": c.id },
          columnLabel(c, data.by), grouped ? h("span", { class: "muted small" }, `${c.runs.length} runs`) : null)),
        sortHeader(`solved by (of ${data.total_columns})`, "solved_by", state, onSort, "num"), h("th", {}, ""))),
      h("tbody", {}, data.rows.map((r) => h("tr", { "data-idx": r.idx },
        h("td", { class: "num" }, h("a", { href: `#/instance/${r.idx}` }, r.idx)), h("td", {}, quote(r.abbrev)),
        r.cells.map((c, i) => {
          if (!c) return h("td", { class: "muted" }, "–");
          const cls = c.successes === c.trials ? "cell-solved" : c.successes ? "cell-partial" : "cell-failed";
          const href = grouped ? `#/instance/${r.idx}` : episodeHref(c.open[0], r.idx, c.open[1]);
          const title = `${data.columns[i].id}: ${c.successes} of ${c.trials} trials scored 1${grouped ? ` over ${c.runs} runs` : ""}`;
          const td = h("td", { class: `num share ${cls}`, "data-column": data.columns[i].id, title }, h("a", { href }, `${c.successes}/${c.trials}`));
          td.style.setProperty("--share", `${(100 * c.successes) / c.trials}%`); // the solved share, as a bar
          return td;
        }),
        h("td", { class: "num" }, `${r.solved_by}/${r.played_by}`),
        h("td", {}, r.played_by > 1 || r.cells.some((c) => c && c.trials > 1) ? h("a", { href: `#/compare/${r.idx}` }, "compare") : "")))));
    count.textContent = `${data.matched.toLocaleString()} of ${data.total.toLocaleString()} instances`;
    pagers[0].replaceChildren(data.total_columns > COLUMN_PAGE ? columnPager(data) : "");
    const onPage = (offset, limit) => { state.offset = offset; state.limit = limit; refresh(); };
    pagers[1].replaceChildren(pager("pager", data.offset, state.limit, data.matched, onPage));
    pagers[2].replaceChildren(data.matched > 10 ? pager("pager-bottom", data.offset, state.limit, data.matched, onPage) : "");
    drawForm(data);
    const p = new URLSearchParams();
    for (const k of ["by", "sweep", "policy", "task", "show"]) if (state[k]) p.set(k, state[k]);
    if (state.sort !== "idx" || state.order !== "asc") { p.set("sort", state.sort); p.set("order", state.order); }
    if (state.offset) p.set("offset", state.offset);
    if (state.limit !== 50) p.set("limit", state.limit);
    if (state.cols) p.set("cols", state.cols);
    setParams(p);
  };
  const columnPager = (data) => {
    const last = Math.ceil(data.total_columns / COLUMN_PAGE) - 1;
    const page = Math.floor(state.cols / COLUMN_PAGE);
    const go = (p, label, id) => h("button", { type: "button", id, disabled: p < 0 || p > last || p === page, onclick: () => { state.cols = p * COLUMN_PAGE; refresh(); } }, label);
    return h("div", { class: "pager columns-pager" }, go(page - 1, "‹ earlier columns", "cols-prev"),
      h("span", { class: "where" }, `columns ${state.cols + 1}–${Math.min(state.cols + COLUMN_PAGE, data.total_columns)} of ${data.total_columns}`),
      go(page + 1, "later columns ›", "cols-next"));
  };
  const drawForm = (data) => {
    const select = (key, label, options) => {
      const el = h("select", { id: `filter-${key}` }, options.map(([v, t]) => h("option", { value: v }, t)));
      el.value = state[key];
      el.addEventListener("change", () => { state[key] = el.value; state.offset = 0; state.cols = 0; refresh(); });
      return h("label", { for: el.id }, label, el);
    };
    const groupedRuns = runs.some((r) => r.group.sweep);
    form.replaceChildren(
      select("by", "one column per", [["run", "run"], ["policy", "policy"], ...(groupedRuns ? [["sweep", "sweep"], ["setting", "setting"]] : [])]),
      groupedRuns ? select("sweep", "sweep", [["", "all"], ...data.facets.sweeps.map((s) => [s, s])]) : null,
      select("policy", "policy", [["", "all"], ...data.facets.policies.map((s) => [s, s])]),
      select("task", "task", [["", "all"], ...data.facets.tasks.map((t) => [t, t])]),
      select("show", "show", [["", "all instances"], ["differ", "solved by some columns only"], ["unsolved", "solved by no column"], ["solved", "solved by every column"]]),
      count);
  };
  const refresh = async () => {
    const mine = ++sequence;
    try {
      const data = await get(path());
      if (mine === sequence) draw(data);
    } catch (err) {
      if (mine === sequence) table.replaceChildren(h("tbody", {}, h("tr", {}, h("td", {}, message(err.message)))));
    }
  };
  draw(await get(path()));
  return h("div", {},
    h("h1", {}, "Which run solved each instance"),
    h("p", { class: "muted" }, "Each cell: the trials that scored 1 out of the trials played (a group of runs adds up its runs' trials). "
      + "A run's cell opens its first trial; a group's cell and the instance open every run's episodes of it."),
    form, pagers[0], pagers[1], h("div", { class: "wide" }, table), pagers[2]);
}

// -- one instance: every run's episodes of it ------------------------------------------------------

async function instancePage(idx) {
  const inst = await get(`/api/instances/${enc(idx)}`);
  const runIds = Object.keys(inst.runs);
  const picks = [0, 1].map((i) => {
    const sel = h("select", { id: `pick-${i}` }, runIds.flatMap((r) => inst.runs[r].trial_list.map((t) => h("option", { value: `${r}|${t}` }, `${r} · trial ${t}`))));
    const options = sel.querySelectorAll("option");
    if (options[i]) sel.value = options[i].value;
    return sel;
  });
  const go = h("button", { type: "button", id: "compare-go" }, "compare");
  go.addEventListener("click", () => {
    const [a, b] = picks.map((p) => { const [run, trial] = p.value.split("|"); return { run, trial }; });
    location.hash = compareHref(idx, a, b);
  });
  const grouped = runIds.some((r) => inst.runs[r].group.sweep);
  const solved = runIds.filter((r) => inst.runs[r].successes).length;
  return h("div", {},
    h("h1", {}, `Instance ${inst.idx} · ${quote(inst.abbrev)} (${quote(inst.task)})`),
    h("p", {}, `${solved} of ${runIds.length} runs solved it at least once. Gold: `, h("strong", { class: "gold" }, goldText(inst))),
    h("h3", {}, "Question"),
    h("pre", { class: "question" }, inst.question),
    h("div", { class: "filters" }, h("label", {}, "left", picks[0]), h("label", {}, "right", picks[1]), go),
    h("table", { id: "instance-runs" },
      h("thead", {}, h("tr", {}, h("th", {}, "run"), grouped ? [h("th", {}, "sweep"), h("th", {}, "policy"), h("th", {}, "setting")] : null,
        h("th", { class: "num" }, "solved"), h("th", {}, "episodes (trial: reward, end, turns, submitted)"))),
      h("tbody", {}, runIds.map((r) => {
        const c = inst.runs[r];
        return h("tr", { "data-run": r },
          h("td", {}, h("a", { href: `#/run/${enc(r)}` }, r)),
          grouped ? [h("td", {}, quote(c.group.sweep)), h("td", {}, quote(c.group.policy)), h("td", {}, quote(c.group.setting))] : null,
          h("td", { class: `num ${c.successes === c.trials ? "cell-solved" : c.successes ? "cell-partial" : "cell-failed"}` }, `${c.successes}/${c.trials}`),
          h("td", {}, c.episodes.map((e, i) => [i ? h("br", {}) : null, h("a", { href: episodeHref(r, inst.idx, e.trial) }, `trial ${e.trial}`),
            `: ${fmt(e.reward, 2)}, ${quote(e.end_reason)}, ${quote(e.turns)} turns, `, h("code", {}, quote(e.submitted))])));
      }))));
}

// -- live update -----------------------------------------------------------------------------------

let lastState = null;
async function poll() {
  try {
    const state = JSON.stringify(await get("/api/state"));
    const live = document.getElementById("live");
    live.textContent = `live · checked ${new Date().toLocaleTimeString()}`;
    if (lastState !== null && state !== lastState) await render();
    lastState = state;
  } catch (err) {
    document.getElementById("live").textContent = `not updating: ${err.message}`;
  }
}

window.addEventListener("hashchange", render);
render();
if (STATIC) document.getElementById("live").textContent = "a saved copy (not live)";
else {
  poll();
  setInterval(poll, POLL_MS);
}
