// The crmarena-gym trajectory viewer: runs, per-task tables, episode lists, transcripts, comparisons.
// Documents come from the viewer server (/api/...) or, in an exported copy, from data.js. Every text
// from a run is put in the page as text (never as HTML).
"use strict";

const STATIC = window.CRM_VIEWER_DATA || null;
const POLL_MS = 2000;
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

async function get(path) {
  if (STATIC) {
    if (Object.prototype.hasOwnProperty.call(STATIC, path)) return STATIC[path];
    throw new Error(`this copy of the viewer has no document ${path}`);
  }
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

const enc = encodeURIComponent;
const fmt = (value, digits = 3) => (value === null || value === undefined ? "–" : Number(value).toFixed(digits));
const money = (value) => (value === null || value === undefined ? "unpriced" : `$${Number(value).toFixed(4)}`);
const ci = (pair) => (pair ? `[${fmt(pair[0])}, ${fmt(pair[1])}]` : "–");
const quote = (value) => (value === null || value === undefined ? "–" : String(value));
const episodeHref = (run, idx, trial) => `#/episode/${enc(run)}/${idx}/${trial}`;

function message(text, kind) {
  return h("div", { class: kind === "note" ? "message note" : "message", role: "alert" }, text);
}

function num(value, digits) {
  return h("td", { class: "num" }, digits === undefined ? quote(value) : fmt(value, digits));
}

function folded(title, text, key, open) {
  return h("details", { "data-key": key, open: open || false }, h("summary", {}, title), h("pre", {}, text));
}

function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "")
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
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

async function render() {
  const { parts, params } = route();
  const openKeys = [...app.querySelectorAll("details[open][data-key]")].map((d) => d.dataset.key);
  const scroll = window.scrollY;
  let view;
  try {
    if (parts.length === 0) view = await runsPage();
    else if (parts[0] === "run" && parts.length === 2) view = await runPage(parts[1], params);
    else if (parts[0] === "episode" && parts.length === 4) view = await episodePage(parts[1], parts[2], parts[3]);
    else if (parts[0] === "compare" && parts.length === 2) view = await comparePage(parts[1], params);
    else if (parts[0] === "instances") view = await instancesPage(params);
    else view = message(`There is no page ${location.hash}: go back to the runs.`);
  } catch (err) {
    view = message(err.message);
  }
  app.replaceChildren(view);
  for (const key of openKeys) {
    const el = app.querySelector(`details[data-key="${CSS.escape(key)}"]`);
    if (el) el.open = true;
  }
  window.scrollTo(0, scroll);
  document.body.dataset.page = parts[0] || "runs";
}

// -- the runs --------------------------------------------------------------------------------------

function problems(run) {
  const out = [];
  if (run.error) out.push(message(`${run.name}: ${run.error}`));
  for (const p of run.problems || []) out.push(message(`${run.name}: ${p}`, "note"));
  return out;
}

function taskTable(table, onTask) {
  const rows = Object.entries(table);
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

async function runsPage() {
  const { runs } = await get("/api/runs");
  const details = await Promise.all(runs.map((r) => (r.error ? null : get(`/api/runs/${enc(r.id)}`))));
  const head = ["run", "policy", "env", "wrappers", "episodes", "accuracy", "95% interval", "pass^k", ""];
  return h("div", {},
    h("h1", {}, "Runs"),
    runs.flatMap(problems),
    h("table", { id: "runs" },
      h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
      h("tbody", {}, runs.map((r) => h("tr", { "data-run": r.id },
        h("td", {}, r.error ? r.name : h("a", { href: `#/run/${enc(r.id)}` }, r.name)),
        h("td", {}, [quote(r.policy), r.framework ? ` (${r.framework})` : ""]),
        h("td", {}, quote(r.env_id)),
        h("td", {}, (r.wrappers || []).join(", ") || "–"),
        h("td", { class: "num" }, r.expected_episodes ? `${r.episodes} of ${r.expected_episodes}` : r.episodes,
          r.expected_episodes && !r.complete ? h("span", { class: "warn" }, " (running or stopped)") : ""),
        num(r.accuracy, 3), h("td", {}, ci(r.accuracy_ci)),
        h("td", {}, r.pass_k ? Object.entries(r.pass_k).map(([k, v]) => `^${k} ${fmt(v)}`).join(", ") : "–"),
        h("td", {}, r.error ? h("span", { class: "bad" }, "unreadable") : h("a", { href: `#/run/${enc(r.id)}` }, "episodes")))))),
    runs.length > 1 ? h("p", {}, h("a", { href: "#/instances" }, "Which run solved each instance"), " · compare two runs on one instance from there.") : null,
    details.filter(Boolean).map((d) => [h("h2", {}, `Run ${d.name}: per task`),
      taskTable(d.table, (task) => `#/run/${enc(d.id)}?task=${enc(task)}`)]));
}

const FILTERS = ["task", "outcome", "end", "code", "min_turns", "max_turns", "q"];

function matches(e, f) {
  if (f.task && e.abbrev !== f.task) return false;
  if (f.outcome === "success" && !e.success) return false;
  if (f.outcome === "failure" && e.success) return false;
  if (f.outcome === "partial" && !(e.reward > 0 && e.reward < 1)) return false;
  if (f.end && e.end_reason !== f.end) return false;
  if (f.code === "any" && !e.error_codes.length) return false;
  if (f.code === "dropout" && !e.dropout_hits) return false;
  if (f.code && !["any", "dropout"].includes(f.code) && !e.error_codes.includes(f.code)) return false;
  if (f.min_turns && e.turns < Number(f.min_turns)) return false;
  if (f.max_turns && e.turns > Number(f.max_turns)) return false;
  if (f.q) {
    const needle = f.q.toLowerCase();
    const hay = [...e.actions, e.submitted, e.gold, e.error].filter((x) => x !== null && x !== undefined)
      .map((x) => String(x).toLowerCase());
    if (!hay.some((x) => x.includes(needle))) return false;
  }
  return true;
}

function episodeRows(run, episodes, others) {
  return episodes.map((e) => h("tr", { "data-idx": e.idx, "data-trial": e.trial, class: "episode" },
    h("td", { class: "num" }, h("a", { href: episodeHref(run, e.idx, e.trial) }, e.idx)), num(e.trial),
    h("td", {}, quote(e.abbrev)),
    h("td", { class: "num " + (e.success ? "ok" : "bad") }, fmt(e.reward, 2)),
    h("td", {}, quote(e.end_reason)), num(e.turns),
    h("td", {}, e.error_codes.map((c) => h("span", { class: "code" }, c)), e.dropout_hits ? h("span", { class: "effect" }, `dropout ×${e.dropout_hits}`) : ""),
    h("td", {}, quote(e.submitted)), h("td", {}, quote(e.gold)),
    h("td", { class: "num" }, e.tokens ? e.tokens : "–"),
    h("td", {}, h("a", { href: episodeHref(run, e.idx, e.trial) }, "open"),
      others.length ? [" · ", h("a", { href: `#/compare/${e.idx}?runs=${enc(run)},${enc(others[0])}&trials=${e.trial},${e.trial}` }, "compare")] : "")));
}

async function runPage(runId, params) {
  const [run, list, all] = await Promise.all([get(`/api/runs/${enc(runId)}`), get(`/api/runs/${enc(runId)}/episodes`), get("/api/runs")]);
  const episodes = list.episodes;
  const others = all.runs.filter((r) => r.id !== runId && !r.error).map((r) => r.id);
  const filters = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || ""]));
  const values = (key) => [...new Set(episodes.flatMap((e) => key(e)))].filter((v) => v !== null && v !== undefined).sort();
  const tbody = h("tbody", {});
  const count = h("span", { id: "count", class: "muted" });
  const refresh = () => {
    const shown = episodes.filter((e) => matches(e, filters));
    tbody.replaceChildren(...episodeRows(runId, shown, others));
    count.textContent = `${shown.length} of ${episodes.length} episodes`;
    const p = new URLSearchParams();
    for (const k of FILTERS) if (filters[k]) p.set(k, filters[k]);
    setParams(p);
  };
  const control = (key, label, element) => {
    for (const type of ["input", "change"]) element.addEventListener(type, () => { filters[key] = element.value; refresh(); });
    element.id = `filter-${key}`;
    element.value = filters[key];
    return h("label", { for: element.id }, label, element);
  };
  const select = (options) => h("select", {}, options.map(([v, t]) => h("option", { value: v }, t)));
  const meta = run.metadata || {};
  const settings = meta.policy_settings ? JSON.stringify(meta.policy_settings) : null;
  const form = h("div", { class: "filters" },
    control("task", "task", select([["", "all"], ...values((e) => [e.abbrev]).map((t) => [t, t])])),
    control("outcome", "outcome", select([["", "all"], ["success", "solved (reward 1)"], ["failure", "failed"], ["partial", "partial F1"]])),
    control("end", "end reason", select([["", "all"], ...values((e) => [e.end_reason]).map((t) => [t, t])])),
    control("code", "error code", select([["", "all"], ["any", "any error"], ["dropout", "a dropped or corrupted result"], ...values((e) => e.error_codes).map((t) => [t, t])])),
    control("min_turns", "turns ≥", h("input", { type: "number", min: 0 })),
    control("max_turns", "turns ≤", h("input", { type: "number", min: 0 })),
    control("q", "search queries and answers", h("input", { type: "search", placeholder: "SELECT, get_cases, an id…" })),
    count);
  const view = h("div", {},
    h("h1", {}, `Run ${run.name}`),
    problems(run),
    facts([["directory", run.path], ["policy", [quote(run.policy), run.framework ? ` (${run.framework})` : ""]],
      ["policy settings", settings], ["env", run.env_id], ["env arguments", run.env_kwargs ? JSON.stringify(run.env_kwargs) : null],
      ["wrappers", (run.wrappers || []).join(", ")], ["trials", run.trials],
      ["episodes", run.expected_episodes ? `${run.episodes} of ${run.expected_episodes}${run.complete ? "" : " (running or stopped)"}` : run.episodes],
      ["command", (meta.command || []).join(" ")]]),
    h("h2", {}, "Per task"),
    taskTable(run.table, (task) => `#/run/${enc(runId)}?task=${enc(task)}`),
    h("h2", {}, "Episodes"),
    form,
    h("table", { id: "episodes" },
      h("thead", {}, h("tr", {}, ["idx", "trial", "task", "reward", "end", "turns", "errors", "submitted", "gold", "tokens", ""].map((c) => h("th", {}, c)))),
      tbody));
  refresh();
  return view;
}

// -- one episode -----------------------------------------------------------------------------------

function parsedAction(step, key) {
  const p = step.parsed || {};
  if (p.kind === "query") return [h("div", {}, h("span", { class: "kind" }, `${(p.language || "soql").toUpperCase()} query`)), h("pre", { class: "query" }, p.query)];
  if (p.kind === "call") {
    const args = JSON.stringify(p.arguments, null, 2);
    return [h("div", {}, h("span", { class: "kind" }, "function call"), " ", h("code", {}, `${p.name}(…)`)),
      args.length > 1500 ? folded(`arguments (${args.length.toLocaleString()} characters)`, args, `${key}-args`) : h("pre", { class: "arguments" }, args)];
  }
  if (p.kind === "submit") return [h("div", {}, h("span", { class: "kind" }, "submit"), " ", h("code", { class: "answer" }, p.answer))];
  return [h("div", {}, h("span", { class: "code" }, "unreadable action"), " ", p.error || ""), h("pre", {}, quote(step.action))];
}

function stepView(step, key) {
  const usage = step.usage || {};
  const failed = Boolean(step.error);
  const hit = step.effects.some((e) => e.startsWith("ToolResultDropout"));
  const obsTitle = `observation (${step.observation.length.toLocaleString()} characters, ${step.observation.split("\n").length} lines)`;
  return h("div", { class: `step${failed ? " failed" : ""}${hit ? " hit" : ""}`, "data-turn": step.turn },
    h("div", { class: "head" },
      h("strong", {}, `Turn ${step.turn}`),
      step.error ? h("span", { class: "code", title: "the error code the environment reported" }, step.error) : null,
      step.effects.map((e) => h("span", { class: "effect" }, e)),
      step.turns_left !== null && step.turns_left !== undefined ? h("span", { class: "muted" }, `${step.turns_left} turns left`) : null,
      usage.total_tokens !== undefined ? h("span", { class: "muted" }, `${quote(usage.prompt_tokens)} + ${quote(usage.completion_tokens)} tokens, ${money(usage.cost)}`) : null),
    h("div", { class: "body" },
      step.note ? h("div", { class: "note" }, `policy: ${step.note}`) : null,
      step.reply ? folded(`model reply (${step.reply.length.toLocaleString()} characters)`, step.reply, `${key}-reply`) : null,
      parsedAction(step, key),
      step.long ? folded(`${obsTitle}, folded`, step.observation, `${key}-obs`)
        : [h("div", { class: "muted" }, "observation"), h("pre", { class: "observation" }, step.observation)]));
}

function verdict(e) {
  return h("div", { class: "verdict" },
    h("div", {}, h("span", { class: e.success ? "ok" : "bad" }, e.success ? "Solved" : e.end_reason === "running" ? "Running" : "Not solved"),
      ` · reward ${fmt(e.reward, 3)} · ended by ${quote(e.end_reason)} after ${quote(e.turns)} turns`),
    h("table", { class: "answers" }, h("tbody", {},
      h("tr", {}, h("th", {}, "submitted"), h("td", { class: "submitted" }, quote(e.submitted))),
      h("tr", {}, h("th", {}, "gold"), h("td", { class: "gold" }, quote(e.gold), e.answerable === false ? h("span", { class: "muted" }, " (unanswerable: the answer is None)") : "")))),
    h("div", { class: "explanation" }, e.reward_explanation),
    e.error ? message(e.error) : null);
}

function episodeView(e, compact) {
  const key = `${e.run}-${e.idx}-${e.trial}`;
  const usage = e.usage || {};
  return h("div", { class: "episode-view", "data-run": e.run },
    verdict(e),
    facts([["run", h("a", { href: `#/run/${enc(e.run)}` }, e.run)], ["task", `${quote(e.abbrev)} (${quote(e.task)})`], ["seed", e.seed],
      ["model calls", usage.calls ? `${usage.calls} calls, ${usage.total_tokens} tokens (${usage.prompt_tokens} in, ${usage.completion_tokens} out), ${money(usage.cost)}${usage.retries ? `, ${usage.retries} retries` : ""}` : null],
      ["system prompt", e.system_prompt_sha256 ? `sha256 ${e.system_prompt_sha256.slice(0, 16)}…` : null]]),
    e.system_prompt && !compact ? folded("system prompt", e.system_prompt, `${key}-system`) : null,
    h("h3", {}, "Question"),
    h("pre", { class: "question" }, e.question),
    h("h3", {}, `Steps (${e.steps.length})`),
    e.steps.map((s, i) => stepView(s, `${key}-${i}`)));
}

function compareWith(runId, e, row, others) {
  const href = (o) => `#/compare/${e.idx}?runs=${enc(runId)},${enc(o)}&trials=${e.trial},${Math.min(...row.runs[o].trial_list)}`;
  if (others.length <= 6) return others.map((o, i) => [i ? ", " : "", h("a", { href: href(o) }, o)]);
  const select = h("select", { id: "compare-with" }, h("option", { value: "" }, `one of ${others.length} runs…`),
    others.map((o) => h("option", { value: o }, o)));
  select.addEventListener("change", () => { if (select.value) location.hash = href(select.value); });
  return select;
}

async function episodePage(runId, idx, trial) {
  const [e, list] = await Promise.all([get(`/api/runs/${enc(runId)}/episodes/${enc(idx)}/${enc(trial)}`), get("/api/instances")]);
  const row = list.instances.find((r) => String(r.idx) === String(idx));
  const others = row ? Object.keys(row.runs).filter((r) => r !== runId) : [];
  return h("div", {},
    h("h1", {}, `Episode ${e.idx}, trial ${e.trial} · ${quote(e.abbrev)} · run ${e.run}`),
    others.length ? h("p", {}, "Compare with: ", compareWith(runId, e, row, others)) : null,
    episodeView(e, false));
}

async function comparePage(idx, params) {
  const [{ runs }, list] = await Promise.all([get("/api/runs"), get("/api/instances")]);
  const row = list.instances.find((r) => String(r.idx) === String(idx));
  if (!row) throw new Error(`No run has an episode of instance ${idx}.`);
  const having = Object.keys(row.runs);
  const chosen = (params.get("runs") || "").split(",").filter(Boolean);
  const trials = (params.get("trials") || "").split(",");
  const sides = [0, 1].map((i) => {
    const run = chosen[i] || having[Math.min(i, having.length - 1)];
    const trial = trials[i] !== undefined && trials[i] !== "" ? trials[i] : (row.runs[run] ? Math.min(...row.runs[run].trial_list) : 0);
    return { run, trial };
  });
  const picker = (i) => {
    const sel = h("select", { id: `compare-${i}` }, having.map((r) => row.runs[r].trial_list.map((t) =>
      h("option", { value: `${r}|${t}` }, `${r} · trial ${t}`))));
    sel.value = `${sides[i].run}|${sides[i].trial}`;
    sel.addEventListener("change", () => {
      const [run, trial] = sel.value.split("|");
      sides[i] = { run, trial };
      location.hash = `#/compare/${idx}?runs=${sides.map((s) => enc(s.run)).join(",")}&trials=${sides.map((s) => s.trial).join(",")}`;
    });
    return sel;
  };
  const columns = await Promise.all(sides.map(async (s) => {
    if (!row.runs[s.run]) return message(`Run ${s.run} has no episode of instance ${idx}.`);
    try {
      return episodeView(await get(`/api/runs/${enc(s.run)}/episodes/${idx}/${enc(s.trial)}`), true);
    } catch (err) {
      return message(err.message);
    }
  }));
  return h("div", {},
    h("h1", {}, `Instance ${idx} (${quote(row.abbrev)}) side by side`),
    runs.length < 2 ? message("Only one run is open: start the viewer with two run directories to compare them.", "note") : null,
    h("div", { class: "columns" }, [0, 1].map((i) => h("div", { class: "side", "data-side": i }, picker(i), columns[i]))));
}

// -- which run solved each instance ----------------------------------------------------------------

async function instancesPage(params) {
  const data = await get("/api/instances");
  const filters = { task: params.get("task") || "", show: params.get("show") || "" };
  const tbody = h("tbody", {});
  const count = h("span", { id: "count", class: "muted" });
  const refresh = () => {
    const rows = data.instances.filter((r) => (!filters.task || r.abbrev === filters.task)
      && (filters.show !== "differ" || (r.solved_by > 0 && r.solved_by < Object.keys(r.runs).length))
      && (filters.show !== "unsolved" || r.solved_by === 0));
    tbody.replaceChildren(...rows.map((r) => h("tr", { "data-idx": r.idx },
      h("td", { class: "num" }, r.idx), h("td", {}, quote(r.abbrev)),
      data.runs.map((run) => {
        const c = r.runs[run];
        if (!c) return h("td", { class: "muted" }, "–");
        const cls = c.successes === c.trials ? "cell-solved" : c.successes ? "cell-partial" : "cell-failed";
        return h("td", { class: `num ${cls}`, "data-run": run }, h("a", { href: episodeHref(run, r.idx, Math.min(...c.trial_list)) }, `${c.successes}/${c.trials}`));
      }),
      h("td", { class: "num" }, r.solved_by),
      h("td", {}, Object.keys(r.runs).length > 1 ? h("a", { href: `#/compare/${r.idx}` }, "compare") : ""))));
    count.textContent = `${rows.length} of ${data.instances.length} instances`;
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v) p.set(k, v);
    setParams(p);
  };
  const tasks = [...new Set(data.instances.map((r) => r.abbrev))].sort();
  const taskSel = h("select", { id: "filter-task" }, h("option", { value: "" }, "all"), tasks.map((t) => h("option", { value: t }, t)));
  const showSel = h("select", { id: "filter-show" }, h("option", { value: "" }, "all instances"),
    h("option", { value: "differ" }, "solved by some runs only"), h("option", { value: "unsolved" }, "solved by no run"));
  taskSel.value = filters.task;
  showSel.value = filters.show;
  taskSel.addEventListener("change", () => { filters.task = taskSel.value; refresh(); });
  showSel.addEventListener("change", () => { filters.show = showSel.value; refresh(); });
  const view = h("div", {},
    h("h1", {}, "Which run solved each instance"),
    h("p", { class: "muted" }, "Each cell: the trials that scored 1 out of the trials played; it opens the first trial."),
    h("div", { class: "filters" }, h("label", {}, "task", taskSel), h("label", {}, "show", showSel), count),
    h("table", { id: "instances" },
      h("thead", {}, h("tr", {}, h("th", {}, "idx"), h("th", {}, "task"), data.runs.map((r) => h("th", {}, r)), h("th", {}, "solved by"), h("th", {}, ""))),
      tbody));
  refresh();
  return view;
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
