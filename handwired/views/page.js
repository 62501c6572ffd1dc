// handwired watch --page: draws the document the server sends (handwired/views/page.py) and redraws it on each
// Server-Sent Event. Text from the file goes into the page as text (textContent), never as markup.
"use strict";

let shown = null;  // the document on the page
const EDITS_SHOWN = 12;  // edited weights listed; the rest counted
const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function add(parent, ...children) {
  for (const child of children) if (child) parent.appendChild(child);
  return parent;
}

// ---------------------------------------------------------------- heatmaps

// blue for positive, red for negative (as the terminal), the shade growing with |value| / the largest in the matrix
function paint(cell, value, scale) {
  if (typeof value !== "number" || value === 0 || scale === 0) return;
  const t = 0.12 + 0.88 * Math.min(1, Math.abs(value) / scale);
  const [r, g, b] = value > 0 ? [38, 112, 179] : [211, 53, 53];
  const mix = (c) => Math.round(255 + (c - 255) * t);
  cell.style.backgroundColor = `rgb(${mix(r)}, ${mix(g)}, ${mix(b)})`;
  if (t > 0.55) cell.classList.add("dark");
  cell.classList.add(value > 0 ? "pos" : "neg");
}

function heatmap(matrix, everything) {
  const figure = el("figure", "matrix");
  figure.dataset.hook = matrix.hook;
  figure.dataset.title = matrix.title;
  const caption = add(el("figcaption"), el("b", "", matrix.title));
  caption.title = `${matrix.title}: ${matrix.hook}, ${matrix.shape.join(" × ")}, values ${matrix.range}`;
  add(figure, caption);
  if (matrix.all_zero && !everything) return add(figure, folded(matrix.fold_note, "all 0, folded"));
  const rows = everything ? matrix.rows.map((_, i) => i) : matrix.kept_rows;
  const cols = everything ? matrix.cols.map((_, i) => i) : matrix.kept_cols;
  const table = el("table");
  const corner = el("th", "corner", matrix.corner);
  corner.title = `rows: ${matrix.row_axis}; columns: ${matrix.col_axis}`;
  const top = add(el("tr"), corner);
  for (const c of cols) add(top, el("th", "col", matrix.cols[c]));
  add(table, top);
  for (const r of rows) {
    const tr = add(el("tr"), el("th", "row", matrix.rows[r]));
    for (const c of cols) add(tr, cell(matrix, r, c));
    add(table, tr);
  }
  add(figure, table);
  const hidden = matrix.rows.length - rows.length + matrix.cols.length - cols.length;
  if (!everything && hidden) add(figure, folded(matrix.fold_note, `${hidden} all-0 line${hidden > 1 ? "s" : ""} folded`));
  return figure;
}

function folded(note, text) {
  const line = el("div", "fold", text);
  line.title = note;
  return line;
}

function cell(matrix, r, c) {
  const value = matrix.values[r][c];
  const future = matrix.future && matrix.future[r][c];
  const changed = matrix.changed && matrix.changed[r][c];
  let text = matrix.texts[r][c];
  if (future) text = matrix.future_text !== null ? matrix.future_text : `[${text}]`;
  const td = el("td", future ? "future" : "", (changed ? "• " : "") + text);
  if (!future) paint(td, value, matrix.scale);
  if (changed) td.classList.add("changed");
  Object.assign(td.dataset, {row: r, col: c, value: String(value)});
  td.title = `${matrix.title}[${matrix.rows[r]}, ${matrix.cols[c]}] = ${value}` +
    (future ? " (a key after the query: masked)" : "") + (changed ? " (changed since the previous version)" : "");
  return td;
}

function predictions(list) {
  const table = el("table", "predictions");
  const rows = [["position", (p) => p.position], ["predicts", (p) => p.token + (p.tied ? " (tie)" : "")],
    ["p", (p) => p.probability_text], ["lead", (p) => p.lead_text]];
  for (const [name, pick] of rows) {
    const tr = add(el("tr"), el("th", "row", name));
    for (const p of list) add(tr, el(name === "position" ? "th" : "td", name === "predicts" ? "token" : "", pick(p)));
    add(table, tr);
  }
  return table;
}

function step(data, everything) {
  const card = el("section", `step ${data.key}`);
  card.dataset.key = data.key;
  const title = el("h2", "", data.title);
  title.title = data.note;
  add(card, title, el("div", "formula", data.formula), el("div", "shape", data.shape));
  const body = el("div", "matrices");
  for (const matrix of data.matrices) add(body, heatmap(matrix, everything));
  if (data.predictions.length) add(body, predictions(data.predictions));
  return add(card, body, $("notes").checked && el("p", "note", data.note));
}

// ---------------------------------------------------------------- verdict, edits, error

function verdict(data) {
  const box = el("div");
  const word = data.ok === null ? "" : data.ok ? "PASS" : "FAIL";
  const line = add(el("div", "headline"), word && el("span", `badge ${data.ok ? "good" : "bad"}`, word),
    el("b", "", `${data.how}: `), el("span", "", data.report ? data.counts : data.reason));
  add(box, line);
  for (const note of data.notes) add(box, el("div", "warn", note));
  for (const l of data.lines) add(box, el("div", l.tone, l.text));
  if (data.failures.length) {
    const list = add(el("div", "failures"), el("span", "dim", "shortest failures (click to draw): "));
    for (const f of data.failures) {
      const button = el("button", "failure", `${f.context} → ${f.predicted}${f.tied ? " (tie)" : ""} ` +
        `(expected ${f.expected}, gap ${f.gap_text})`);
      button.type = "button";
      button.addEventListener("click", () => ask(f.context));
      add(list, button);
    }
    if (data.more_failures) add(list, el("span", "dim", ` and ${data.more_failures} more`));
    add(box, list);
  }
  return box;
}

function edits(view) {
  const box = el("div");
  const e = view.edits;
  if (!view.compared) return add(box, el("span", "dim", "Save the file: the weights you change will be listed here" +
    " and the values they move marked • in the heatmaps."));
  if (e.not_compared) return add(box, el("span", "dim", `edited weights: not compared (${e.not_compared})`));
  add(box, el("span", "dim", e.changes.length ? "edited since the previous version: " :
    "no weight changed since the previous version"));
  for (const c of e.changes.slice(0, EDITS_SHOWN)) {
    const item = el("span", "edit", `${c.label} ${c.old_text} → ${c.new_text}`);
    item.title = `${c.label}: ${c.old} → ${c.new}`;
    add(box, item);
  }
  if (e.changes.length > EDITS_SHOWN) add(box, el("span", "dim", `and ${e.changes.length - EDITS_SHOWN} more`));
  const count = view.changed_values;
  return add(box, el("div", "dim", count ? `• marks the ${count} value${count === 1 ? "" : "s"} of this view ` +
    "that changed" : "no value in this view changed"));
}

function error(data) {
  const box = $("error");
  box.replaceChildren();
  box.hidden = !data;
  if (data) add(box, el("h2", "", data.title), ...data.lines.map((l) => el("div", "line", l)), el("p", "", data.after));
}

// ---------------------------------------------------------------- the page

function draw(doc) {
  if (!(shown && shown.view)) $("all").checked = Boolean(doc.everything);  // watch --all: all from the first view
  shown = doc;
  document.body.dataset.version = doc.version || 0;
  error(doc.error);
  const refused = $("refused");
  refused.hidden = !doc.refused;
  if (doc.refused) refused.textContent = `cannot draw ${JSON.stringify(doc.refused.text)}: ` + doc.refused.lines.join("; ");
  const view = doc.view;
  if (!view) return;
  document.title = `handwired watch ${view.file}`;
  $("model").textContent = view.model;
  $("saved").textContent = `saved ${view.saved}`;
  const ctx = view.context;
  if (document.activeElement !== $("text")) $("text").value = ctx.window;
  $("drawn").textContent = [ctx.drawn, ctx.note].filter(Boolean).join(" · ");
  $("verdict").replaceChildren(verdict(view.verdict), ...view.headline.map((l) => el("div", l.tone, l.text)));
  $("edits").replaceChildren(edits(view));
  const everything = $("all").checked;
  $("steps").replaceChildren(...view.steps.map((s) => step(s, everything)));
}

function ask(text) {
  fetch("/context", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({text})});
}

function hover(event) {
  const box = $("hover");
  const td = event.target.closest("td[data-value]");
  box.hidden = !td;
  if (td) box.textContent = td.title;
}

function listen() {
  const live = $("live");
  const source = new EventSource(`/events?after=${shown.version || 0}`);
  source.addEventListener("view", (event) => draw(JSON.parse(event.data)));
  source.onopen = () => { live.textContent = "live"; live.className = "on"; };
  source.onerror = () => { live.textContent = "not connected: is handwired watch running?"; live.className = "off"; };
}

$("context").addEventListener("submit", (event) => { event.preventDefault(); ask($("text").value); $("text").blur(); });
$("default").addEventListener("click", () => ask(null));
$("all").addEventListener("change", () => draw(shown));
$("notes").addEventListener("change", () => draw(shown));
$("steps").addEventListener("mouseover", hover);
draw(JSON.parse($("document").textContent));
listen();
