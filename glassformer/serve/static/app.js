// glassformer serve's page: speak or drop a command and see its intent and the decoder's
// cross-attention; explore every layer's and head's attention; stream generation; translate.
// Plain browser JavaScript (no framework, no build step, nothing from the network). The
// server's API is described at /openapi.json; the WebSocket protocol in serve/routes_speech.py.
"use strict";

const RATE = 16000; // samples per second the server listens at
const $ = (id) => document.getElementById(id);
let grammarNames = [];

function showError(message) { $("error").textContent = message || ""; }

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  return body;
}

// ---- heat maps ----------------------------------------------------------------------------

function colour(weight) { // 0 -> near white, 1 -> dark blue; sqrt keeps small weights visible
  const t = Math.sqrt(Math.min(1, Math.max(0, weight)));
  return `rgb(${Math.round(247 - 239 * t)},${Math.round(251 - 203 * t)},${Math.round(255 - 148 * t)})`;
}

function drawMatrix(ctx, matrix, x0, y0, width, height) { // matrix: T rows of S weights
  // the darkest cell is the map's largest weight (a spread-out map would be all pale); the
  // tooltips give the weights themselves
  const w = width / matrix[0].length, h = height / matrix.length;
  const top = Math.max(...matrix.map((row) => Math.max(...row)), 1e-9);
  matrix.forEach((row, i) => row.forEach((weight, j) => {
    ctx.fillStyle = colour(weight / top);
    ctx.fillRect(x0 + j * w, y0 + i * h, Math.ceil(w), Math.ceil(h));
  }));
}

function meanOverLayersAndHeads(probs) { // (L, H, T, S) -> (T, S)
  const maps = probs.flat(1);
  return maps[0].map((row, i) => row.map((_, j) => maps.reduce((sum, m) => sum + m[i][j], 0) / maps.length));
}

function showTooltip(event, text) {
  const tip = $("tooltip");
  tip.hidden = false;
  tip.textContent = text;
  tip.style.left = `${event.clientX + 12}px`;
  tip.style.top = `${event.clientY + 12}px`;
}

function cellUnder(event, canvas, rows, cols, x0, y0, width, height) { // [i, j] or null
  const box = canvas.getBoundingClientRect();
  const x = (event.clientX - box.left) * canvas.width / box.width - x0;
  const y = (event.clientY - box.top) * canvas.height / box.height - y0;
  if (x < 0 || y < 0 || x >= width || y >= height) return null;
  return [Math.floor(y / height * rows), Math.floor(x / width * cols)];
}

// ---- attention explorer: one heat map per layer and head, tokens on both axes -------------

let attentionKinds = [];
const LABEL_PX = 12; // token labels stay this size however small the cells

function drawHead(canvas, kind, matrix, cell) { // one head's map, tokens on both axes
  const T = kind.queries.length, S = kind.keys.length;
  const ctx = canvas.getContext("2d");
  ctx.font = `${LABEL_PX}px monospace`;
  const longest = Math.max(...kind.queries.concat(kind.keys).map((t) => ctx.measureText(t).width), 1);
  const margin = Math.ceil(longest) + 8;
  canvas.width = margin + S * cell;
  canvas.height = margin + T * cell;
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  drawMatrix(ctx, matrix, margin, margin, S * cell, T * cell);
  ctx.fillStyle = "#1d2430";
  ctx.font = `${LABEL_PX}px monospace`; // resizing the canvas reset it
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  kind.queries.forEach((t, i) => ctx.fillText(t, margin - 4, margin + (i + 0.5) * cell));
  kind.keys.forEach((t, j) => {
    ctx.save();
    ctx.translate(margin + (j + 0.5) * cell, margin - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "left";
    ctx.fillText(t, 0, 0);
    ctx.restore();
  });
  canvas.onmousemove = (event) => {
    const hit = cellUnder(event, canvas, T, S, margin, margin, S * cell, T * cell);
    if (!hit) { $("tooltip").hidden = true; return; }
    const [i, j] = hit;
    showTooltip(event, `${kind.queries[i]} → ${kind.keys[j]}: ${matrix[i][j].toFixed(3)}`);
  };
  canvas.onmouseleave = () => { $("tooltip").hidden = true; };
}

function drawKind(kind) {
  const grid = $("attention-grid");
  grid.replaceChildren();
  $("attention-title").textContent = `${kind.title}: ${kind.layers} layers x ${kind.heads} heads ` +
    "(darkest: each map's largest weight; click a head to enlarge it)";
  const tokens = Math.max(kind.queries.length, kind.keys.length);
  const small = Math.max(LABEL_PX, Math.min(20, Math.floor(360 / tokens)));
  const large = Math.max(small, Math.min(48, Math.floor(760 / tokens)));
  kind.probs.forEach((heads, layer) => heads.forEach((matrix, head) => {
    const box = document.createElement("div");
    box.className = "head";
    box.textContent = `layer ${layer + 1}, head ${head + 1}`;
    const canvas = document.createElement("canvas");
    drawHead(canvas, kind, matrix, small);
    box.addEventListener("click", () => {
      const enlarged = box.classList.toggle("large");
      drawHead(canvas, kind, matrix, enlarged ? large : small);
    });
    box.appendChild(canvas);
    grid.appendChild(box);
  }));
  grid.dataset.drawn = String(kind.layers * kind.heads);
}

async function showAttention() {
  showError("");
  const body = { model: $("attention-model").value, text: $("attention-text").value };
  try {
    const result = await api("/v1/attention", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    attentionKinds = result.kinds;
    $("attention-kind").replaceChildren(...attentionKinds.map((k, i) => new Option(k.name, i)));
    drawKind(attentionKinds[0]);
  } catch (error) { showError(error.message); }
}

// ---- a spoken command's result and its cross-attention under the waveform -----------------

function showResult(result) {
  $("result-text").textContent = result.text || "(nothing)";
  $("result-intent").textContent = result.intent || "not a command";
  $("result-slots").textContent = JSON.stringify(result.slots);
  $("result-confidence").textContent = result.confidence.toFixed(2);
  // a streamed command: how long after the speaker stopped the answer was there
  const after = result.latency_ms === undefined ? "" :
    `understood ${Math.round(result.latency_ms)} ms after you stopped`;
  $("result-latency").textContent = after || "–";
  $("result").dataset.state = result.accepted ? "accepted" : "rejected";
  $("result").dataset.intent = result.intent || "";
  const line = document.createElement("div");
  line.textContent = `${result.intent || "-"} ${JSON.stringify(result.slots)} "${result.text}" ` +
    `(${result.audio_seconds} s, ${after || `${result.elapsed_ms} ms`})`;
  $("history").prepend(line);
}

async function showSpeechAttention(audio, text) {
  const query = text ? `&text=${encodeURIComponent(text)}` : "";
  const result = await api(`/v1/attention?model=speech${query}`, {
    method: "POST", headers: { "Content-Type": audio.type || "application/octet-stream" }, body: audio,
  });
  const kind = result.kinds[0], canvas = $("speech-canvas"), ctx = canvas.getContext("2d");
  ctx.font = "12px monospace";
  const labels = Math.max(...kind.queries.map((t) => ctx.measureText(t).width));
  const margin = Math.ceil(Math.max(70, labels + 8)), wave = 80;
  const width = canvas.width - margin, height = canvas.height - wave - 10;
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  const peaks = kind.waveform_peaks, top = Math.max(...peaks, 1e-6);
  ctx.fillStyle = "#2b6cb0";
  peaks.forEach((p, i) => {
    const h = (p / top) * (wave / 2 - 2);
    ctx.fillRect(margin + (i * width) / peaks.length, wave / 2 - h, Math.ceil(width / peaks.length), 2 * h);
  });
  const matrix = meanOverLayersAndHeads(kind.probs);
  drawMatrix(ctx, matrix, margin, wave + 10, width, height);
  ctx.fillStyle = "#1d2430";
  ctx.font = "12px monospace";
  ctx.textAlign = "right";
  const rowHeight = height / matrix.length;
  kind.queries.forEach((t, i) => ctx.fillText(t, margin - 4, wave + 10 + (i + 0.7) * rowHeight));
  canvas.onmousemove = (event) => {
    const hit = cellUnder(event, canvas, matrix.length, matrix[0].length, margin, wave + 10, width, height);
    if (!hit) { $("tooltip").hidden = true; return; }
    const seconds = ((hit[1] + 0.5) / matrix[0].length) * kind.audio_seconds;
    showTooltip(event, `${kind.queries[hit[0]]} at ${seconds.toFixed(2)} s: ${matrix[hit[0]][hit[1]].toFixed(3)}`);
  };
  canvas.onmouseleave = () => { $("tooltip").hidden = true; };
  canvas.dataset.drawn = "1";
}

async function transcribeFile(file) {
  showError("");
  try {
    const grammar = encodeURIComponent($("grammar-select").value);
    const result = await api(`/v1/transcribe?grammar=${grammar}`, {
      method: "POST", headers: { "Content-Type": file.type || "application/octet-stream" }, body: file,
    });
    showResult(result);
    await showSpeechAttention(file, result.text);
  } catch (error) { showError(error.message); }
}

// ---- the microphone: 16 kHz 16-bit PCM over /v1/listen ------------------------------------

function toInt16(samples) {
  const pcm = new Int16Array(samples.length);
  samples.forEach((s, i) => { pcm[i] = Math.max(-32768, Math.min(32767, Math.round(s * 32767))); });
  return pcm;
}

function resampleLinear(samples, from, to) { // for a context that could not run at 16 kHz
  const out = new Float32Array(Math.floor((samples.length * to) / from));
  for (let i = 0; i < out.length; i++) {
    const x = (i * from) / to, k = Math.floor(x), f = x - k;
    out[i] = samples[k] * (1 - f) + (samples[Math.min(k + 1, samples.length - 1)] * f);
  }
  return out;
}

function wavBlob(pcm) { // 16-bit mono WAV at 16 kHz
  const view = new DataView(new ArrayBuffer(44 + pcm.length * 2));
  const text = (at, s) => [...s].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)));
  text(0, "RIFF"); view.setUint32(4, 36 + pcm.length * 2, true); text(8, "WAVE"); text(12, "fmt ");
  view.setUint32(16, 16, true); view.setUint16(20, 1, true); view.setUint16(22, 1, true);
  view.setUint32(24, RATE, true); view.setUint32(28, RATE * 2, true); view.setUint16(32, 2, true);
  view.setUint16(34, 16, true); text(36, "data"); view.setUint32(40, pcm.length * 2, true);
  pcm.forEach((s, i) => view.setInt16(44 + i * 2, s, true));
  return new Blob([view.buffer], { type: "audio/wav" });
}

const KEEP_SECONDS = 40; // audio kept after sending, to show a command's waveform
let listening = null; // {stream, context, socket, sent: [Int16Array], first, total}

function sentAudio(state, start, end) { // the stream's samples [start, end), as sent
  const out = new Int16Array(Math.max(0, end - start));
  let at = state.first; // the stream index of sent[0][0]
  for (const chunk of state.sent) {
    for (let i = 0; i < chunk.length; i++, at++) if (at >= start && at < end) out[at - start] = chunk[i];
  }
  return out;
}

async function startListening() {
  showError("");
  if (!navigator.mediaDevices || !window.isSecureContext) {
    throw new Error("browsers give the microphone only to https:// pages or to localhost: open " +
      `http://localhost:${location.port || 80}/ on the server's own machine, or put the server ` +
      "behind https (a reverse proxy); dropping a file below works anywhere");
  }
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
  });
  let context;
  try { context = new AudioContext({ sampleRate: RATE }); } catch { context = new AudioContext(); }
  await context.resume();
  const grammar = encodeURIComponent($("grammar-select").value);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/v1/listen?grammar=${grammar}`);
  const state = { stream, context, socket, sent: [], first: 0, total: 0 };
  const source = context.createMediaStreamSource(stream);
  const processor = context.createScriptProcessor(4096, 1, 1);
  processor.onaudioprocess = (event) => {
    if (socket.readyState !== WebSocket.OPEN) return;
    const input = event.inputBuffer.getChannelData(0);
    const pcm = toInt16(context.sampleRate === RATE ? input : resampleLinear(input, context.sampleRate, RATE));
    socket.send(pcm.buffer);
    state.sent.push(pcm);
    state.total += pcm.length;
    while (state.total - state.first - state.sent[0].length > RATE * KEEP_SECONDS) {
      state.first += state.sent.shift().length;
    }
  };
  source.connect(processor);
  processor.connect(context.destination); // a ScriptProcessor runs only when connected
  socket.onmessage = async (event) => {
    const message = JSON.parse(event.data);
    if (message.type === "speech_start") $("mic-status").textContent = "hearing a command…";
    if (message.type === "error") showError(message.error);
    if (message.type !== "result") return;
    $("mic-status").textContent = "listening";
    showResult(message);
    try { await showSpeechAttention(wavBlob(sentAudio(state, message.start, message.end)), message.text); }
    catch (error) { showError(error.message); }
  };
  socket.onopen = () => { $("mic-status").textContent = "listening"; };
  socket.onclose = () => { if (listening === state) stopListening(); };
  listening = state;
  $("mic-button").textContent = "Stop listening";
  $("mic-button").classList.add("on");
}

function stopListening() {
  const state = listening;
  listening = null;
  if (state) {
    state.stream.getTracks().forEach((t) => t.stop());
    state.context.close();
    if (state.socket.readyState === WebSocket.OPEN) state.socket.close();
  }
  $("mic-status").textContent = "microphone off";
  $("mic-button").textContent = "Start listening";
  $("mic-button").classList.remove("on");
}

// ---- generation (server-sent events read from the fetch stream) and translation -----------

async function generate() {
  showError("");
  const out = $("generate-output");
  out.textContent = $("generate-prompt").value;
  const body = {
    prompt: $("generate-prompt").value,
    max_new_tokens: Number($("generate-tokens").value),
    temperature: Number($("generate-temperature").value),
  };
  const response = await fetch("/v1/generate", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  if (!response.ok) { showError((await response.json()).error); return; }
  const reader = response.body.getReader(), decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    const events = buffer.split("\n\n");
    buffer = events.pop();
    for (const event of events) {
      const name = (event.match(/^event: (.*)$/m) || [])[1];
      const data = JSON.parse((event.match(/^data: (.*)$/m) || [])[1] || "{}");
      if (name === "error") showError(data.error);
      else if (!name) out.textContent += data.text;
      else out.dataset.done = "1";
    }
  }
}

async function translateText() {
  showError("");
  try {
    const result = await api("/v1/translate", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ text: $("translate-text").value }),
    });
    $("translate-output").textContent = result.translation;
  } catch (error) { showError(error.message); }
}

// ---- wiring -----------------------------------------------------------------------------

async function start() {
  const models = await api("/v1/models");
  const names = Object.keys(models);
  $("loaded").textContent = names.length ? `loaded: ${names.join(", ")}` : "no models loaded";
  grammarNames = models.speech ? Object.keys(models.speech.grammars) : [];
  $("grammar-select").replaceChildren(...grammarNames.map((g) => new Option(g, g)));
  examples = models.speech ? models.speech.examples : {};
  showExamples();
  const textModels = ["lm", "translation"].filter((m) => models[m]);
  $("attention-model").replaceChildren(...textModels.map((m) => new Option(m, m)));
  $("speech-section").classList.toggle("unavailable", !models.speech);
  $("attention-section").classList.toggle("unavailable", !textModels.length);
  $("generate-section").classList.toggle("unavailable", !models.lm);
  $("translate-section").classList.toggle("unavailable", !models.translation);
  document.body.dataset.ready = "1";
}

let examples = {}; // grammar name -> a few of its sentences

function showExamples() {
  const sentences = examples[$("grammar-select").value] || [];
  $("try-saying").textContent = sentences.length ?
    `try saying: ${sentences.map((s) => `“${s}”`).join(", ")}` : "";
}

$("grammar-select").addEventListener("change", showExamples);
$("mic-button").addEventListener("click", () => {
  if (listening) stopListening();
  else startListening().catch((error) => { showError(`microphone: ${error.message}`); stopListening(); });
});
$("file-input").addEventListener("change", (event) => { if (event.target.files[0]) transcribeFile(event.target.files[0]); });
const drop = $("drop-zone");
drop.addEventListener("dragover", (event) => { event.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (event) => {
  event.preventDefault();
  drop.classList.remove("over");
  if (event.dataTransfer.files[0]) transcribeFile(event.dataTransfer.files[0]);
});
$("attention-button").addEventListener("click", showAttention);
$("attention-kind").addEventListener("change", () => drawKind(attentionKinds[Number($("attention-kind").value)]));
document.querySelectorAll(".preset").forEach((button) => button.addEventListener("click", () => {
  $("attention-text").value = button.textContent;
  showAttention();
}));
$("generate-button").addEventListener("click", () => generate().catch((error) => showError(error.message)));
$("translate-button").addEventListener("click", translateText);
start().catch((error) => showError(error.message));
