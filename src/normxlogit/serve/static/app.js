// The normxlogit page: calls the server's JSON API and draws what comes back.
// Plain JS, no build step; uPlot (vendored) draws the curves. Text from the server is
// always inserted with textContent, never as HTML.
"use strict";

const POSITIVE = [30, 120, 230];  // blue: supports the target (as the HTML renderer)
const NEGATIVE = [220, 50, 47];   // red: speaks against it
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
  "#7f7f7f", "#bcbd22", "#17becf"];

const state = { info: null, model: null, run: null, explanations: [], evaluation: null };
const $ = (selector, root = document) => root.querySelector(selector);

function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key === "style") node.style.cssText = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

// ----------------------------------------------------------------- the server
async function api(path, options = {}) {
  const init = { method: options.method || "GET", headers: {} };
  if (options.body !== undefined) {
    init.method = options.method || "POST";
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new Error("the server cannot be reached; is `normxlogit serve` still running?");
  }
  const data = await response.json().catch(() => ({ error: `server answered ${response.status}` }));
  if (!response.ok) throw new Error(data.error || `server answered ${response.status}`);
  return data;
}

// Start a job, follow its progress in `box` (a .progress element), resolve with its result.
async function runJob(path, body, box) {
  const fill = $(".fill", box), message = $(".message", box), cancel = $(".cancel", box);
  box.hidden = false;
  fill.style.width = "0%";
  message.textContent = "starting";
  showNotes(box, []);
  let job = await api(path, body === undefined ? { method: "POST" } : { body });
  cancel.disabled = false;
  cancel.onclick = async () => {
    cancel.disabled = true;
    message.textContent = "cancelling (after the current batch)";
    await api(`/api/jobs/${job.id}/cancel`, { method: "POST" }).catch(() => {});
  };
  try {
    while (job.state === "queued" || job.state === "running") {
      fill.style.width = `${Math.round(job.progress * 100)}%`;
      if (!cancel.disabled) message.textContent = `${job.message || job.state} · ${job.seconds} s`;
      await new Promise((resolve) => setTimeout(resolve, 250));
      job = await api(`/api/jobs/${job.id}`);
    }
  } finally {
    box.hidden = true;
  }
  if (job.state === "cancelled") throw new Error("cancelled");
  if (job.state === "failed") throw new Error(job.error);
  showNotes(box, job.warnings);
  return job.result;
}

// What the library warned about while a job ran (texts left out, values that tell no
// method apart), listed under its progress box; user text, so never markup.
function showNotes(box, notes) {
  let list = box.nextElementSibling;
  if (!list || !list.classList.contains("job-notes")) {
    list = document.createElement("ul");
    list.className = "job-notes";
    box.after(list);
  }
  list.replaceChildren(...(notes || []).map((note) => {
    const item = document.createElement("li");
    item.textContent = note;
    return item;
  }));
  list.hidden = !(notes && notes.length);
}

function showError(box, error) {
  box.hidden = !error;
  box.textContent = error ? String(error.message || error) : "";
}

// --------------------------------------------------------------- colours
function peakOf(values) {
  let peak = 0;
  for (const v of values) if (v !== null && Math.abs(v) > peak) peak = Math.abs(v);
  return peak > 0 ? peak : 1;
}

function colour(score, peak) {
  if (score === null || score === undefined) return "transparent";
  const [r, g, b] = score >= 0 ? POSITIVE : NEGATIVE;
  const alpha = Math.min(Math.abs(score) / peak, 1).toFixed(3);
  return `rgba(${r},${g},${b},${alpha})`;
}

function tick(value) {  // an axis label: short, but never "0" for a small nonzero value
  return value === 0 ? "0" : Number(value.toPrecision(3)).toString();
}

function fmt(value) {
  if (value === null || value === undefined) return "n/a";
  return Math.abs(value) >= 1000 || (Math.abs(value) < 0.001 && value !== 0)
    ? value.toExponential(3) : value.toFixed(4);
}

// One row of coloured tokens. `scores` may hold nulls (a token the row does not score).
function tokenRow(tokens, scores, special, extra = {}) {
  const peak = peakOf(scores);
  const box = el("span", { class: "tokens" });
  tokens.forEach((token, i) => {
    const classes = ["tok"];
    if (special[i]) classes.push("special");
    if (extra.generatedFrom !== undefined && i >= extra.generatedFrom) classes.push("generated");
    if (extra.highlight === i) classes.push("step-target");
    const span = el("span", { class: classes.join(" "), text: token });
    span.dataset.index = i;
    span.dataset.score = scores[i] === null ? "" : String(scores[i]);
    span.title = scores[i] === null ? "not seen by this step" : fmt(scores[i]);
    span.style.background = colour(scores[i], peak);
    box.append(span);
  });
  return box;
}

// ---------------------------------------------------------------- set-up
async function init() {
  document.querySelectorAll(".tab").forEach((tab) => tab.addEventListener("click", () => {
    document.querySelectorAll(".tab").forEach((t) => t.classList.toggle("active", t === tab));
    document.querySelectorAll(".tab-page").forEach((p) => { p.hidden = p.id !== tab.dataset.tab; });
  }));
  try {
    state.info = await api("/api/info");
  } catch (error) {
    showError($("#explain-error"), error);
    return;
  }
  const models = $("#model");
  for (const m of state.info.models) models.append(el("option", { value: m.name, text: m.name, title: m.description }));
  const datasets = $("#dataset");
  for (const d of state.info.datasets) datasets.append(el("option", { value: d.name, text: d.name }));
  const methods = $("#methods");
  for (const m of state.info.methods) {
    const box = el("input", { type: "checkbox", value: m.name });
    box.checked = m.name === "normxlogit";
    box.addEventListener("change", noteSegmentMethods);
    methods.append(el("label", { title: m.description }, [box, ` ${m.name}`]));
  }
  $("#segments-mode").addEventListener("change", () => {
    const mode = $("#segments-mode").value;
    $("#segments-box").hidden = mode !== "lines";
    $(".segment-option").hidden = mode === "none";
    noteSegmentMethods();
  });
  const metrics = $("#metrics");
  for (const m of state.info.metrics) {
    const box = el("input", { type: "checkbox", value: m.name });
    box.checked = ["comp_cd", "suff_cd"].includes(m.name);
    metrics.append(el("label", { title: m.description }, [box, ` ${m.name}`]));
  }
  models.addEventListener("change", () => selectModel(models.value));
  datasets.addEventListener("change", loadExamples);
  $("#example").addEventListener("change", pickExample);
  $("#explain-btn").addEventListener("click", explain);
  $("#evaluate-btn").addEventListener("click", evaluateRun);
  for (const id of ["#perturb-metric", "#perturb-method", "#perturb-ratio"]) {
    $(id).addEventListener("input", showPerturbed);
  }
  $("#continuation").addEventListener("input", () => {
    $("#generate").checked = !$("#continuation").value;
  });
  setUpBench();
  await selectModel(models.value);
}

// The segment methods score segments by removing them: without segments they cannot run,
// which the page says in one line under the methods while one of them is chosen.
function noteSegmentMethods() {
  const needing = new Set(state.info.methods.filter((m) => m.segments).map((m) => m.name));
  const chosen = [...document.querySelectorAll("#methods input:checked")]
    .map((b) => b.value).filter((name) => needing.has(name));
  const note = $("#methods-note");
  note.hidden = !chosen.length || $("#segments-mode").value !== "none";
  note.textContent = `${chosen.join(", ")} ${chosen.length === 1 ? "scores" : "score"} segments: ` +
    "under Segments choose sentences, or one per line and list the text's segments.";
}

// What the request carries of the segments: "sentences", or the box's lines (blank ones
// left out, each trimmed: a segment is written as it appears in the text).
function segmentsOfForm() {
  const mode = $("#segments-mode").value;
  if (mode === "none") return {};
  const reduce = { segment_reduce: $("#segment-reduce").value };
  if (mode === "sentences") return { segments: "sentences", ...reduce };
  const lines = $("#segments-box").value.split(/\r?\n/).map((line) => line.trim()).filter(Boolean);
  if (!lines.length) throw new Error("the segments box is empty: list the text's segments one per line, or choose sentences");
  return { segments: lines, ...reduce };
}

async function selectModel(name) {
  const status = $("#model-status");
  $("#explain-btn").disabled = true;
  showError($("#explain-error"), null);
  status.textContent = "loading…";
  try {
    state.model = await runJob(`/api/models/${encodeURIComponent(name)}/load`, undefined, $("#explain-progress"));
  } catch (error) {
    status.textContent = "";
    showError($("#explain-error"), error);
    return;
  } finally {
    $("#explain-btn").disabled = false;
  }
  const m = state.model;
  status.textContent = `${m.task}` + (m.labels.length ? `: ${m.labels.join(" / ")}` : "") + ` · ${m.layers} layers`;
  const target = $("#target");
  target.replaceChildren(el("option", { value: "prediction", text: "the prediction" }));
  if (m.labels.length) {
    target.append(el("option", { value: "all", text: "every label" }));
    for (const label of m.labels) target.append(el("option", { value: label, text: `label: ${label}` }));
  }
  document.querySelectorAll(".generation-only").forEach((node) => { node.hidden = !m.generates; });
  markMetrics(m.unavailable || {});
  if (m.mask_token && !$("#text").value.includes(m.mask_token)) {
    $("#text").value = `The keys to the cabinet ${m.mask_token} on the table.`;
  }
  if (m.generates && $("#text").value.startsWith("A gripping")) {
    $("#text").value = "The capital of France is";
  }
  if ($("#dataset").value) loadExamples();
}

// Grey out the metrics that mean nothing for the loaded model (a regressor has no class
// probabilities or output distribution), with the reason on hover.
function markMetrics(unavailable) {
  const greyed = [];
  for (const box of document.querySelectorAll("#metrics input")) {
    const why = unavailable[box.value];
    box.disabled = Boolean(why);
    if (why) { box.checked = false; greyed.push(box.value); }
    box.parentElement.classList.toggle("disabled", Boolean(why));
    box.parentElement.title = why || state.info.metrics.find((m) => m.name === box.value).description;
  }
  const offered = [...document.querySelectorAll("#metrics input")].some((box) => !box.disabled);
  const note = $("#metrics-note");
  note.hidden = !greyed.length;
  const regression = state.model && state.model.task === "regression"
    ? " A regression model is scored by comp_acc / suff_acc, the Pearson correlation with " +
      "gold values over a labelled dataset: run `normxlogit evaluate` on one."
    : "";
  note.textContent = (offered
    ? `${greyed.join(", ")}: not for this model or these explanations (hover one for why).`
    : "None of these curves applies to this model (hover one for why).") + regression;
  $("#evaluate-btn").disabled = !offered;
}

async function loadExamples() {
  const name = $("#dataset").value, select = $("#example");
  select.replaceChildren(el("option", { value: "", text: "-" }));
  select.disabled = true;
  if (!name) return;
  try {
    const query = new URLSearchParams({ limit: 50, model: $("#model").value });
    const data = await api(`/api/datasets/${encodeURIComponent(name)}/examples?${query}`);
    state.examples = data.examples;
    data.examples.forEach((example, i) => {
      const text = Array.isArray(example.text) ? example.text.join(" / ") : example.text;
      const label = example.label === null ? "" : ` [${example.label}]`;
      select.append(el("option", { value: String(i), text: `${i}: ${text.slice(0, 80)}${label}` }));
    });
    select.disabled = false;
    showError($("#explain-error"), null);
  } catch (error) {
    showError($("#explain-error"), error);
  }
}

function pickExample() {
  const example = state.examples && state.examples[Number($("#example").value)];
  if (!example) return;
  if (Array.isArray(example.text)) {
    $("#text").value = example.text[0];
    $("#text-pair").value = example.text[1];
  } else {
    $("#text").value = example.text;
    $("#text-pair").value = "";
  }
  if (example.segments) {  // the data's own segments: one per line, as the page takes them
    $("#segments-mode").value = "lines";
    $("#segments-box").value = example.segments.join("\n");
    $("#segments-mode").dispatchEvent(new Event("change"));
  }
}

// ---------------------------------------------------------------- explain
async function explain() {
  const methods = [...document.querySelectorAll("#methods input:checked")].map((b) => b.value);
  const error = $("#explain-error");
  showError(error, methods.length ? null : "choose at least one method");
  if (!methods.length) return;
  const body = {
    model: $("#model").value,
    text: $("#text").value,
    text_pair: $("#text-pair").value || null,
    methods,
    target: $("#target").value,
    contrast: $("#contrast").value || null, // a space is a contrast (a space token), as in the CLI
    contrast_input: $("#contrast-input").value || null, // blank: refused by name
    layer: $("#layer").value,
  };
  try {
    Object.assign(body, segmentsOfForm());
  } catch (caught) {
    showError(error, caught);
    return;
  }
  if (state.model && state.model.generates) {
    const continuation = $("#continuation").value;
    body.generate = !continuation && $("#generate").checked;
    body.max_new_tokens = Number($("#max-new-tokens").value) || 12;
    body.continuation = continuation || null;
  }
  $("#explain-btn").disabled = true;
  try {
    const result = await runJob("/api/explain", body, $("#explain-progress"));
    state.run = result.run;
    state.explanations = result.explanations;
    drawPrediction(result.prediction);
    drawMethodErrors(result.errors);
    drawHeatmaps(result.explanations);
    prepareFaithfulness(result.explanations);
  } catch (caught) {
    showError(error, caught);
  } finally {
    $("#explain-btn").disabled = false;
  }
}

function drawPrediction(prediction) {
  const box = $("#prediction");
  box.replaceChildren();
  if (prediction.generated !== undefined) {
    box.append(el("div", {}, [el("strong", { text: "Generated: " }), el("span", { class: "generated-text", text: prediction.generated })]));
    return;
  }
  const head = prediction.value !== null && prediction.value !== undefined
    ? `Prediction: ${prediction.label} = ${fmt(prediction.value)}` : `Prediction: ${prediction.label}`;
  box.append(el("div", { class: "predicted", text: head }));
  for (const [name, p] of prediction.probs || []) {
    box.append(el("div", { class: "prob" }, [
      el("span", { style: "min-width: 8rem", text: name }),
      el("span", { class: "pbar", style: `width: ${Math.max(1, p * 240)}px` }),
      el("span", { class: "muted", text: p.toFixed(4) }),
    ]));
  }
}

function drawMethodErrors(errors) {
  const box = $("#method-errors");
  box.replaceChildren();
  for (const [method, why] of Object.entries(errors || {})) box.append(el("div", { text: `${method}: ${why}` }));
}

function drawHeatmaps(explanations) {
  const panels = $("#heatmaps");
  panels.replaceChildren();
  for (const explanation of explanations) {
    const panel = el("div", { class: "panel" });
    panel.dataset.method = explanation.method;
    panel.append(el("h3", { text: explanation.method }));
    panel.append(el("div", { class: "meta", text: `${explanation.seconds} s` }));
    if (explanation.kind === "generation") drawGeneration(panel, explanation);
    else drawExplanation(panel, explanation);
    panels.append(panel);
  }
}

// An explanation: one row per target (signed, paper fig. 1a); with layers, a slider and
// the layer x token matrix of the first target.
function drawExplanation(panel, explanation) {
  const rows = el("div", { class: "rows" });
  const segments = explanation.segments;
  const segmentBox = el("div", { class: "segments" });
  const body = segments ? el("div", { class: "with-segments" }, [rows, segmentBox]) : rows;
  panel.append(body);
  const layers = explanation.layers;
  const show = (layerIndex) => {
    rows.replaceChildren();
    const scores = explanation.scores[layerIndex];  // [T][K]
    explanation.targets.forEach((target, k) => {
      const column = scores.map((row) => row[k]);
      const row = el("div", { class: "heatmap-row" }, [el("span", { class: "row-name", text: target })]);
      row.dataset.target = target;
      row.append(tokenRow(explanation.tokens, column, explanation.special));
      rows.append(row);
    });
    if (segments) {
      const segmentScores = segments.scores[layerIndex];  // [S][K]
      drawSegments(panel, segmentBox, segments,
        explanation.targets.map((target, k) => [target, segmentScores.map((row) => row[k])]));
    }
  };
  if (layers) {
    const slider = el("input", { type: "range", min: 0, max: layers.length - 1, value: layers.length - 1, class: "layer-slider" });
    // a layer's note (NormXLogit's last row: that layer's own norm) beside its number
    const named = (i) => {
      const note = explanation.layer_notes && explanation.layer_notes[i];
      return `layer ${layers[i]}` + (note ? ` · ${note}` : "");
    };
    const label = el("span", { text: named(layers.length - 1) });
    slider.addEventListener("input", () => { label.textContent = named(Number(slider.value)); show(Number(slider.value)); });
    panel.append(el("div", { class: "layer-control" }, ["layer ", slider, " ", label]));
    panel.append(body);
    panel.append(layerMatrix(explanation));
  }
  show(explanation.scores.length - 1);
}

// The text's segments beside the tokens, one row per target as the tokens' rows: each
// segment's text on its score's colour (a row scaled to its largest absolute score, as a
// token row is), the score after it. Hovering a segment marks its tokens in the panel;
// a click keeps the mark (a second click, or another segment, moves or clears it).
function drawSegments(panel, box, segments, rows) {
  box.replaceChildren(el("div", { class: "muted", text: `segments (${segments.how})` }));
  for (const [name, scores] of rows) {
    const peak = peakOf(scores);
    const row = el("div", { class: "segment-row" }, [el("span", { class: "row-name", text: name })]);
    row.dataset.target = name;
    const list = el("div", { class: "segment-list" });
    segments.texts.forEach((text, s) => {
      const score = scores[s] === undefined ? null : scores[s];
      // a segment none of whose tokens the model read (past the truncation): no score
      const unread = score === null && !segments.token_segments.includes(s);
      const shown = unread ? "not read" : fmt(score);
      const chip = el("span", { class: "seg", title: score === null ? `no score (${shown})` : shown }, [
        el("span", { class: "seg-text", text }),
        el("span", { class: "seg-score", text: shown }),
      ]);
      chip.dataset.segment = s;
      chip.dataset.score = score === null ? "" : String(score);
      chip.style.background = colour(score, peak);
      chip.addEventListener("mouseenter", () => markSegment(panel, segments, s));
      chip.addEventListener("mouseleave", () => markSegment(panel, segments, pinnedOf(panel)));
      chip.addEventListener("click", () => {
        panel.dataset.pinned = pinnedOf(panel) === s ? "" : String(s);
        markSegment(panel, segments, pinnedOf(panel));
      });
      list.append(chip);
    });
    row.append(list);
    box.append(row);
  }
  markSegment(panel, segments, pinnedOf(panel));
}

function pinnedOf(panel) {
  return panel.dataset.pinned ? Number(panel.dataset.pinned) : null;
}

// Mark segment `index`'s tokens (and the segment) in every row of the panel; null clears.
function markSegment(panel, segments, index) {
  panel.querySelectorAll(".tok").forEach((tok) => {
    const member = segments.token_segments[Number(tok.dataset.index)];
    tok.classList.toggle("in-segment", index !== null && member === index);
  });
  panel.querySelectorAll(".seg").forEach((chip) => {
    chip.classList.toggle("marked", index !== null && Number(chip.dataset.segment) === index);
  });
}

function layerMatrix(explanation) {
  const table = el("table", { class: "matrix layer-matrix" });
  const head = el("tr", {}, [el("th", { text: "layer" })]);
  for (const token of explanation.tokens) head.append(el("th", { text: token }));
  table.append(head);
  const all = explanation.scores.flatMap((layer) => layer.map((row) => row[0]));
  const peak = peakOf(all);
  explanation.layers.forEach((layer, li) => {
    const row = el("tr", {}, [el("th", { text: String(layer) })]);
    explanation.scores[li].forEach((scores) => {
      const cell = el("td", { text: " ", title: fmt(scores[0]) });
      cell.style.background = colour(scores[0], peak);
      row.append(cell);
    });
    table.append(row);
  });
  return el("div", {}, [el("div", { class: "muted", text: `every layer, ${explanation.targets[0]}` }), table]);
}

// A generation: the prompt coloured by a chosen step or aggregate, and the step x token matrix.
function drawGeneration(panel, explanation) {
  const select = el("select", { class: "colour-by" });
  for (const how of Object.keys(explanation.aggregates)) select.append(el("option", { value: `agg:${how}`, text: `${how} over steps` }));
  const generated = explanation.tokens.slice(explanation.prompt_length);
  // steps left unexplained (explain_steps=) have no scores: not offered, marked in the matrix
  const explained = new Set(explanation.explained_steps || generated.map((_, s) => s));
  generated.forEach((token, s) => {
    if (explained.has(s)) select.append(el("option", { value: `step:${s}`, text: `step ${s}: ${token}` }));
  });
  const text = el("div", { class: "coloured" });
  const segments = explanation.segments;
  const segmentBox = el("div", { class: "segments" });
  const show = () => {
    const [kind, key] = select.value.split(":");
    const scores = kind === "agg" ? explanation.aggregates[key] : explanation.scores[Number(key)];
    const highlight = kind === "step" ? explanation.prompt_length + Number(key) : undefined;
    text.replaceChildren(tokenRow(explanation.tokens, scores, explanation.special,
      { generatedFrom: explanation.prompt_length, highlight }));
    if (segments) {
      const segmentScores = kind === "agg" ? segments.aggregates[key] : segments.steps[Number(key)];
      drawSegments(panel, segmentBox, segments, [[select.selectedOptions[0].text, segmentScores]]);
    }
  };
  select.addEventListener("change", show);
  panel.append(el("div", { class: "layer-control" }, ["colour by ", select]),
    segments ? el("div", { class: "with-segments" }, [text, segmentBox]) : text);
  const table = el("table", { class: "matrix steps" });
  // the step scores that tell which steps are worth explaining (entropy, contrast, KL)
  const stepScores = Object.entries(explanation.step_scores || {}).filter(([name]) => name !== "probability");
  const head = el("tr", {}, [el("th", { text: "step" }), el("th", { text: "p" })]);
  stepScores.forEach(([name]) => head.append(el("th", { class: "step-score", text: name })));
  explanation.tokens.forEach((token) => head.append(el("th", { text: token })));
  table.append(el("thead", {}, [head]));
  const body = el("tbody");
  explanation.scores.forEach((scores, s) => {
    const peak = peakOf(scores);
    const title = explanation.contrasts ? `${generated[s]} vs ${explanation.contrasts[s]}` : generated[s];
    const row = el("tr", {}, [el("th", { text: title }), el("td", { text: fmt(explanation.step_probs[s]) })]);
    stepScores.forEach(([, values]) => row.append(el("td", { class: "step-score", text: fmt(values[s]) })));
    if (!explained.has(s)) {
      row.append(el("td", { class: "muted", colspan: String(scores.length), text: "not explained" }));
      body.append(row);
      return;
    }
    scores.forEach((score) => {
      const cell = el("td", { text: " ", title: score === null ? "" : fmt(score) });
      cell.style.background = colour(score, peak);
      row.append(cell);
    });
    body.append(row);
  });
  table.append(body);
  panel.append(el("div", { class: "muted", text: "step x token" }), el("div", { style: "overflow-x: auto" }, [table]));
  show();
}

// ------------------------------------------------------------ faithfulness
function prepareFaithfulness(explanations) {
  $("#faithfulness").hidden = false;
  $("#summary").hidden = true;
  $("#curves").replaceChildren();
  $("#perturbation").hidden = true;
  showError($("#evaluate-error"), null);
  const method = $("#perturb-method");
  method.replaceChildren();
  for (const e of explanations) method.append(el("option", { value: e.method, text: e.method }));
  // segments as the metrics' units, offered when every explanation has segments; the
  // metrics that remove segments (ContextCite's checks) greyed out when one has none
  const segmented = explanations.every((e) => e.segments);
  $("#unit-field").hidden = !segmented;
  if (!segmented) $("#unit").value = "token";
  const unavailable = { ...((state.model && state.model.unavailable) || {}) };
  for (const m of state.info.metrics) {
    if (m.segments && !segmented && !unavailable[m.name]) {
      unavailable[m.name] = "removes segments: explain with Segments: sentences or one per line";
    }
  }
  markMetrics(unavailable);
}

async function evaluateRun() {
  const metrics = [...document.querySelectorAll("#metrics input:checked")].map((b) => b.value);
  const error = $("#evaluate-error");
  showError(error, metrics.length ? null : "choose at least one metric");
  if (!metrics.length || !state.run) return;
  $("#evaluate-btn").disabled = true;
  try {
    const unit = $("#unit").value;
    state.evaluation = await runJob("/api/evaluate", { run: state.run, metrics, unit }, $("#evaluate-progress"));
    drawSummary($("#summary"), state.evaluation);
    drawCurves($("#curves"), state.evaluation.curves);
    preparePerturbation(metrics);
  } catch (caught) {
    showError(error, caught);
  } finally {
    $("#evaluate-btn").disabled = false;
  }
}

// A methods x metrics table that sorts itself by a clicked column, best first for that
// metric (higher or lower is better, as the metric says); the best value is bold.
function drawSummary(table, result, onCell) {
  table.hidden = false;
  table.replaceChildren();
  const infos = Object.fromEntries(result.metrics.map((m) => [m.name, m]));
  const head = el("tr", {}, [el("th", { text: "method" })]);
  for (const m of result.metrics) {
    const arrow = m.higher_is_better === null ? "" : m.higher_is_better ? " ↑" : " ↓";  // null: descriptive
    const th = el("th", { text: `${m.name}${arrow}`, title: `${m.description} (${m.summary})` });
    th.dataset.metric = m.name;
    th.addEventListener("click", () => { sortBy(m.name); });
    head.append(th);
  }
  table.append(el("thead", {}, [head]));
  const body = el("tbody");
  table.append(body);
  let rows = result.rows.slice();
  const fill = () => {
    body.replaceChildren();
    for (const row of rows) {
      const tr = el("tr", {}, [el("td", { text: row.method })]);
      tr.dataset.method = row.method;
      for (const m of result.metrics) {
        const value = row.values[m.name];
        const td = el("td", { text: fmt(value) });
        td.dataset.metric = m.name;
        td.dataset.value = value === null ? "" : String(value);
        const values = result.rows.map((r) => r.values[m.name]).filter((v) => v !== null);
        const best = m.higher_is_better ? Math.max(...values) : Math.min(...values);
        const ranked = m.higher_is_better !== null;
        if (ranked && value !== null && value === best && values.length > 1) td.classList.add("best");
        if (onCell) { td.classList.add("clickable"); td.addEventListener("click", () => onCell(row.method, m.name)); }
        tr.append(td);
      }
      body.append(tr);
    }
  };
  const sortBy = (metric) => {
    const better = infos[metric].higher_is_better ? -1 : 1;
    rows = rows.slice().sort((a, b) => {
      const x = a.values[metric], y = b.values[metric];
      if (x === null) return 1;
      if (y === null) return -1;
      return better * (x - y);
    });
    table.dataset.sortedBy = metric;
    fill();
  };
  if (result.metrics.length) sortBy(result.metrics[0].name); else fill();
}

function drawCurves(box, curves) {
  box.replaceChildren();
  for (const [metric, curve] of Object.entries(curves)) {
    const chart = el("div", { class: "chart" });
    chart.dataset.metric = metric;
    box.append(chart);
    const methods = Object.keys(curve.methods);
    const data = [curve.x, ...methods.map((m) => curve.methods[m])];
    chart.dataset.curve = JSON.stringify(curve);
    const series = [{ label: curve.axis || "x" }, ...methods.map((m, i) => ({
      label: m, stroke: PALETTE[i % PALETTE.length], width: 2, points: { show: true, size: 5 },
      value: (u, v) => (v === null || v === undefined ? "-" : v.toFixed(4)),
    }))];
    new uPlot({
      title: metric, width: 420, height: 260, series,
      scales: { x: { time: false } },
      axes: [{ label: curve.axis || "" }, { label: metric, size: 60, values: (u, ticks) => ticks.map(tick) }],
    }, data, chart);
  }
}

function preparePerturbation(metrics) {
  const hard = new Set(state.info.metrics.filter((m) => m.hard).map((m) => m.name));
  const chosen = metrics.filter((m) => hard.has(m));
  const generation = state.explanations.some((e) => e.kind === "generation");
  // the view shows tokens perturbed one by one: not what segment units perturb
  const segments = state.evaluation && state.evaluation.unit === "segment";
  $("#perturbation").hidden = !chosen.length || generation || segments;
  const select = $("#perturb-metric");
  select.replaceChildren();
  for (const m of chosen) select.append(el("option", { value: m, text: m }));
  if (chosen.length && !generation && !segments) showPerturbed();
}

async function showPerturbed() {
  const ratio = Number($("#perturb-ratio").value);
  $("#perturb-ratio-value").textContent = ratio.toFixed(1);
  const method = $("#perturb-method").value, metric = $("#perturb-metric").value;
  if (!method || !metric || !state.run) return;
  const box = $("#perturbed-tokens");
  try {
    const query = new URLSearchParams({ method, metric, ratio });
    const data = await api(`/api/runs/${state.run}/perturbed?${query}`);
    const explanation = state.explanations.find((e) => e.method === method);
    box.replaceChildren();
    explanation.tokens.forEach((token, i) => {
      const span = el("span", { class: data.perturbed[i] ? "tok perturbed" : "tok", text: token });
      span.title = data.perturbed[i] ? "perturbed at this ratio" : "kept";
      box.append(span);
    });
  } catch (error) {
    box.textContent = String(error.message || error);
  }
}

// ------------------------------------------------------------------ bench
function setUpBench() {
  const bench = state.info.bench;
  const select = $("#bench-select");
  $("#bench-empty").hidden = bench.length > 0;
  bench.forEach((b) => select.append(el("option", { value: String(b.id), text: `${b.title} (${b.store})` })));
  select.addEventListener("change", fillExperiments);
  $("#experiment-select").addEventListener("change", showExperiment);
  if (bench.length) fillExperiments();
}

function fillExperiments() {
  const entry = state.info.bench[Number($("#bench-select").value)];
  showReport(entry.id);
  const select = $("#experiment-select");
  select.replaceChildren();
  for (const name of entry.experiments) select.append(el("option", { value: name, text: name }));
  showExperiment();
}

// The config's own tables (ours beside the paper's numbers) and figures (the report's
// PNGs, drawn by the server with matplotlib).
async function showReport(index) {
  const tables = $("#bench-tables"), figures = $("#bench-figures");
  tables.replaceChildren();
  figures.replaceChildren();
  try {
    const data = await api(`/api/bench/${index}/tables`);
    $("#bench-report").hidden = false;
    for (const table of data.tables) tables.append(reportTable(table));
    for (const plot of data.plots) {
      const path = `/api/bench/${index}/plots/${encodeURIComponent(plot.name)}.png`;
      const image = el("img", { alt: plot.title, src: path });
      const figure = el("figure", {}, [image, el("figcaption", { text: plot.title })]);
      figure.dataset.plot = plot.name;
      image.addEventListener("error", async () => {
        const reason = await figureError(path);
        figure.replaceChildren(el("figcaption", { text: `${plot.title}: ${reason}` }));
      });
      figures.append(figure);
    }
  } catch (error) {
    showError($("#bench-error"), error);
  }
}

// Why a figure's image did not load, in the server's own words (matplotlib missing and
// the extra to install, nothing stored yet): asked again as JSON, shown as text.
async function figureError(path) {
  try {
    await api(path);
  } catch (error) {
    return error.message;
  }
  return "the image did not load";
}

function reportTable(table) {
  const box = el("div", { class: "report-table" });
  box.dataset.table = table.name;
  box.append(el("h3", { text: table.title }));
  const grid = el("table", { class: "report" });
  const head = el("tr", {}, [el("th", { text: table.corner })]);
  for (const c of table.columns) head.append(el("th", { text: `${c.group ? c.group + " · " : ""}${c.column} ${c.arrow}`, title: c.metric }));
  grid.append(el("thead", {}, [head]));
  const body = el("tbody");
  for (const row of table.rows) {
    const tr = el("tr", {}, [el("td", { text: row.label })]);
    for (const cell of row.cells) {
      // null: not computed yet ("–"), or, where no experiment asks for the cell, blank
      const shown = typeof cell.value === "number" ? cell.value.toFixed(3)
        : cell.value === null ? (cell.asked === false ? "" : "–") : String(cell.value);
      const td = el("td", { text: shown + (cell.partial ? "†" : "") });
      if (cell.asked === false) td.classList.add("not-asked");
      if (cell.rank) td.classList.add(`rank-${cell.rank}`);
      if (typeof cell.standard_error === "number") td.append(el("span", { class: "spread", text: ` ± ${cell.standard_error.toFixed(3)}` }));
      if (cell.paper !== null && cell.paper !== undefined) td.append(el("span", { class: "paper", text: ` (${cell.paper.toFixed(3)})` }));
      tr.append(td);
    }
    body.append(tr);
  }
  grid.append(body);
  box.append(grid);
  if (table.paper_note) box.append(el("div", { class: "muted", text: `In parentheses: the paper's number for the nearest setting: ${table.paper_note}` }));
  if (table.left_out_note) box.append(el("div", { class: "muted", text: table.left_out_note }));
  if (table.not_asked_note) box.append(el("div", { class: "muted", text: table.not_asked_note }));
  if (table.average_note) box.append(el("div", { class: "muted", text: table.average_note }));
  return box;
}

// the methods not computed yet, each started one with its planned seeds not started
function notComputed(data) {
  const seeds = data.seeds_not_started || {};
  return data.not_computed.map((method) => seeds[method]
    ? `${method} (seed${seeds[method].length > 1 ? "s" : ""} ${seeds[method].join(", ")} not started)`
    : method).join(", ");
}

async function showExperiment() {
  $("#experiment-heading").hidden = false;
  const index = $("#bench-select").value, name = $("#experiment-select").value;
  const error = $("#bench-error");
  $("#drill").hidden = true;
  try {
    const data = await api(`/api/bench/${index}/experiment?${new URLSearchParams({ name })}`);
    showError(error, null);
    $("#bench-meta").textContent = `${data.model} · ${data.instances} of ${data.of} instances have every value`
      + ((data.not_computed || []).length ? ` · not computed yet: ${notComputed(data)}` : "")
      + (data.left_out_note ? ` · ${data.left_out_note}` : "")
      + (Object.keys(data.skipped).length ? ` · not applicable: ${Object.keys(data.skipped).join(", ")}` : "");
    drawSummary($("#bench-summary"), data, (method, metric) => drill(index, name, method, metric));
    $("#bench-hint").hidden = !data.rows.length;
    drawCurves($("#bench-curves"), data.curves);
  } catch (caught) {
    showError(error, caught);
  }
}

async function drill(index, name, method, metric) {
  const error = $("#bench-error");
  try {
    const query = new URLSearchParams({ experiment: name, method, metric });
    const data = await api(`/api/bench/${index}/instances?${query}`);
    $("#drill").hidden = false;
    const missing = data.seeds_not_started || [];
    const seeds = (data.seeds.length > 1 ? `, each averaged over seeds ${data.seeds.join(", ")}` : "")
      + (missing.length ? ` (seed${missing.length > 1 ? "s" : ""} ${missing.join(", ")} not started)` : "");
    $("#drill-title").textContent = `${method} · ${metric}: ${data.instances.length} instances${seeds}`;
    const table = $("#drill-instances");
    table.replaceChildren(el("thead", {}, [el("tr", {}, [el("th", { text: "instance" }), el("th", { text: metric }), el("th", { text: "text" })])]));
    const body = el("tbody");
    const sorted = data.instances.slice().sort((a, b) => (data.higher_is_better ? b.value - a.value : a.value - b.value));
    for (const item of sorted) {
      const tr = el("tr", {}, [el("td", { text: String(item.instance) }), el("td", { text: fmt(item.value) }), el("td", { text: item.text, style: "text-align: left" })]);
      tr.dataset.instance = item.instance;
      tr.style.cursor = "pointer";
      tr.addEventListener("click", () => {
        body.querySelectorAll("tr").forEach((r) => r.classList.toggle("selected", r === tr));
        showStored(index, name, method, item.instance);
      });
      body.append(tr);
    }
    table.append(body);
    $("#drill-explanation").replaceChildren();
    showError(error, null);
  } catch (caught) {
    $("#drill").hidden = true;  // not the list of the number clicked before
    showError(error, caught);
  }
}

async function showStored(index, name, method, instance) {
  const box = $("#drill-explanation");
  try {
    const query = new URLSearchParams({ experiment: name, method, instance });
    const data = await api(`/api/bench/${index}/explanation?${query}`);
    const panel = el("div", { class: "panel" });
    panel.dataset.method = method;
    const label = data.label === null ? "" : ` · gold: ${data.label}`;
    panel.append(el("h3", { text: `instance ${data.instance} · ${method}` }), el("div", { class: "meta", text: `predicted: ${data.explanation.label || ""}${label}` }));
    if (data.explanation.kind === "generation") drawGeneration(panel, data.explanation);
    else drawExplanation(panel, data.explanation);
    box.replaceChildren(panel);
  } catch (error) {
    box.textContent = String(error.message || error);
  }
}

init();
