// The page of drama serve. It talks only to the server that served it.
'use strict';

const MAX_INPUT = 4096;
const RATE = 44100;
const $ = (id) => document.getElementById(id);

// ---- tabs: arrow keys move between them, Enter/Space or a click opens one
const tabs = ['speak', 'voices', 'server'].map((n) => $('tab-' + n));
function openTab(tab, focus) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute('aria-controls')).hidden = !on;
  }
  if (focus) tab.focus();
  if (tab.id === 'tab-voices') loadVoices();
  if (tab.id === 'tab-server') loadServer();
}
for (const t of tabs) {
  t.addEventListener('click', () => openTab(t, false));
  t.addEventListener('keydown', (e) => {
    const i = tabs.indexOf(t);
    let j = -1;
    if (e.key === 'ArrowRight') j = (i + 1) % tabs.length;
    if (e.key === 'ArrowLeft') j = (i + tabs.length - 1) % tabs.length;
    if (e.key === 'Home') j = 0;
    if (e.key === 'End') j = tabs.length - 1;
    if (j >= 0) { e.preventDefault(); openTab(tabs[j], true); }
  });
}

// ---- API key: asked for when the server answers 401, kept for this tab
// only (sessionStorage), sent with every request
const KEY_ITEM = 'drama-api-key';
let apiKey = sessionStorage.getItem(KEY_ITEM) || '';

function askKey(refused) {
  const form = $('key-form');
  if (!form.hidden) return; // asking already: the first answer's words stand
  const st = $('key-status');
  st.textContent = refused ? 'The server refused that key: check it and enter it again.' : 'This server needs an API key.';
  st.className = refused ? 'error' : '';
  $('key-forget').hidden = true;
  form.hidden = false;
  $('key-input').focus();
}
$('key-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const k = $('key-input').value.trim();
  if (!k) { $('key-input').focus(); return; }
  apiKey = k;
  sessionStorage.setItem(KEY_ITEM, k);
  $('key-input').value = '';
  $('key-form').hidden = true;
  $('key-forget').hidden = false;
  loadServer();
  loadVoices();
});
$('key-forget').addEventListener('click', () => {
  apiKey = '';
  sessionStorage.removeItem(KEY_ITEM);
  $('key-forget').hidden = true;
  loadServer();
  loadVoices();
});
if (apiKey) $('key-forget').hidden = false;

// api is fetch with the key; a 401 asks for one (again)
async function api(path, init = {}) {
  const headers = new Headers(init.headers || {});
  if (apiKey) headers.set('Authorization', 'Bearer ' + apiKey);
  const sent = apiKey;
  const resp = await fetch(path, { ...init, headers });
  if (resp.status === 401 && sent === apiKey) { // not the answer to a key replaced since
    if (sent) {
      apiKey = '';
      sessionStorage.removeItem(KEY_ITEM);
    }
    askKey(Boolean(sent));
  }
  return resp;
}

// ---- API helpers
async function apiError(resp) {
  let msg = resp.status + ' ' + resp.statusText;
  try {
    const j = await resp.json();
    if (j && j.error && j.error.message) msg = j.error.message;
  } catch (_) { /* not JSON */ }
  return new Error(msg);
}
async function getJSON(path) {
  const resp = await api(path, { headers: { Accept: 'application/json' } });
  if (!resp.ok) throw await apiError(resp);
  return resp.json();
}

// ---- Speak
const text = $('speak-text');
function countChars() {
  const n = [...text.value].length;
  $('speak-count').textContent = n.toLocaleString('en') + ' / 4,096' + (n > MAX_INPUT ? ' (too long)' : '');
}
text.addEventListener('input', countChars);
text.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); $('speak-form').requestSubmit(); }
});
countChars();

let current = null; // the synthesis playing: {abort, ctx}

function setStatus(state, msg) {
  const st = $('speak-status');
  st.dataset.state = state;
  st.textContent = msg;
  st.className = state === 'error' ? 'error' : '';
}
function fmtSec(s) { return s.toFixed(2) + ' s'; }

function wavFile(chunks, samples) {
  const data = samples * 2;
  const h = new DataView(new ArrayBuffer(44));
  const w = (o, s) => { for (let i = 0; i < s.length; i++) h.setUint8(o + i, s.charCodeAt(i)); };
  w(0, 'RIFF'); h.setUint32(4, 36 + data, true); w(8, 'WAVE'); w(12, 'fmt ');
  h.setUint32(16, 16, true); h.setUint16(20, 1, true); h.setUint16(22, 1, true);
  h.setUint32(24, RATE, true); h.setUint32(28, RATE * 2, true); h.setUint16(32, 2, true);
  h.setUint16(34, 16, true); w(36, 'data'); h.setUint32(40, data, true);
  return new Blob([h.buffer, ...chunks], { type: 'audio/wav' });
}

function b64bytes(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// readEvents yields the data of each server-sent event of a fetch body.
async function* readEvents(body) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k);
      buf = buf.slice(k + 2);
      const data = ev.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (data) yield data;
    }
  }
}

function stopSpeaking() {
  if (!current) return;
  current.abort.abort();
  current.ctx.close().catch(() => {});
  current = null;
}

async function speak(ev) {
  ev.preventDefault();
  const input = text.value;
  if ([...input].length < 1 || [...input].length > MAX_INPUT) {
    setStatus('error', 'Type 1 to 4,096 characters.');
    text.focus();
    return;
  }
  stopSpeaking();
  const dl = $('speak-download');
  if (dl.href) URL.revokeObjectURL(dl.href);
  dl.hidden = true;
  dl.removeAttribute('href');
  for (const id of ['speak-played', 'speak-first', 'speak-rtf', 'speak-finish', 'speak-request']) $(id).textContent = '–';

  const body = { input, response_format: 'pcm', stream_format: 'sse' };
  const voice = $('speak-voice').value;
  if (voice) body.voice = voice;
  const instr = $('speak-instructions').value.trim();
  if (instr) body.instructions = instr;

  const ctx = new AudioContext({ sampleRate: RATE });
  const abort = new AbortController();
  const me = { abort, ctx };
  current = me;
  $('speak-play').disabled = true;
  $('speak-stop').disabled = false;
  setStatus('waiting', 'Waiting for the engine…');

  const began = performance.now();
  let first = 0, samples = 0, nextAt = 0, startAt = 0, finish = null, carry = null;
  const chunks = [];
  const played = () => (startAt ? Math.max(0, Math.min(ctx.currentTime - startAt, samples / RATE)) : 0);
  const tick = setInterval(() => {
    if (current === me && startAt) $('speak-played').textContent = fmtSec(played()) + ' of ' + fmtSec(samples / RATE);
  }, 100);
  try {
    const resp = await api('/v1/audio/speech', {
      method: 'POST', signal: abort.signal,
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(body),
    });
    $('speak-request').textContent = resp.headers.get('X-Request-Id') || '–';
    if (!resp.ok) throw await apiError(resp);
    const restart = resp.headers.get('X-Engine-Restart');
    setStatus('streaming', restart ? 'Playing (the engine restarted to load this voice: ' + restart + ')…' : 'Playing as it is made…');
    for await (const data of readEvents(resp.body)) {
      const e = JSON.parse(data);
      if (e.type === 'speech.audio.delta') {
        let bytes = b64bytes(e.audio);
        if (carry) { const j = new Uint8Array(carry.length + bytes.length); j.set(carry); j.set(bytes, carry.length); bytes = j; carry = null; }
        if (bytes.length % 2) { carry = bytes.slice(-1); bytes = bytes.slice(0, -1); }
        if (!bytes.length) continue;
        chunks.push(bytes);
        const pcm = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
        const buf = ctx.createBuffer(1, pcm.length, RATE);
        const ch = buf.getChannelData(0);
        for (let i = 0; i < pcm.length; i++) ch[i] = pcm[i] / 32768;
        const src = ctx.createBufferSource();
        src.buffer = buf;
        src.connect(ctx.destination);
        if (!first) {
          first = performance.now() - began;
          $('speak-first').textContent = fmtSec(first / 1000);
          if (ctx.state === 'suspended') await ctx.resume();
          startAt = nextAt = ctx.currentTime + 0.05;
        }
        if (nextAt < ctx.currentTime) nextAt = ctx.currentTime + 0.02; // an underrun: go on from now
        src.start(nextAt);
        nextAt += buf.duration;
        samples += pcm.length;
      } else if (e.type === 'speech.audio.done') {
        finish = e;
      } else if (e.type === 'error' || e.error) {
        throw new Error((e.error && e.error.message) || 'the engine failed');
      }
    }
    if (!finish) throw new Error('the stream ended without its last event');
    const took = (performance.now() - began) / 1000;
    const audio = samples / RATE;
    $('speak-finish').textContent = finish.finish_reason;
    $('speak-rtf').textContent = audio > 0 ? (took / audio).toFixed(2) : '–';
    $('speak-status').dataset.playedAtDone = played().toFixed(3);
    dl.href = URL.createObjectURL(wavFile(chunks, samples));
    dl.hidden = false;
    setStatus('done', 'Done: ' + fmtSec(audio) + ' of audio, finish reason ' + finish.finish_reason + '.');
  } catch (err) {
    if (abort.signal.aborted) {
      setStatus('stopped', 'Stopped.');
    } else {
      const msg = err instanceof TypeError ? 'the connection was cut' : err.message;
      const heard = samples ? ' after ' + fmtSec(samples / RATE) + ' of audio; this is not the complete audio' : '';
      setStatus('error', 'The synthesis failed' + heard + ': ' + msg);
      ctx.close().catch(() => {});
    }
  } finally {
    clearInterval(tick);
    if (startAt && current === me) $('speak-played').textContent = fmtSec(played()) + ' of ' + fmtSec(samples / RATE);
    if (current === me && $('speak-status').dataset.state !== 'done') current = null;
    $('speak-play').disabled = false;
    $('speak-stop').disabled = true;
  }
}
$('speak-form').addEventListener('submit', speak);
$('speak-stop').addEventListener('click', stopSpeaking);

// ---- Voices
function cell(tr, textContent) { const td = document.createElement('td'); td.textContent = textContent; tr.appendChild(td); return td; }

async function loadVoices() {
  const st = $('voices-status');
  let list;
  try {
    list = (await getJSON('/v1/voices')).data || [];
  } catch (err) {
    st.textContent = 'Cannot list the voices: ' + err.message;
    st.className = 'error';
    return;
  }
  st.className = '';
  const tbody = $('voices-table').querySelector('tbody');
  tbody.replaceChildren();
  const sel = $('speak-voice');
  const keep = sel.value;
  sel.replaceChildren(new Option("Server's default voice", ''));
  for (const v of list) {
    sel.appendChild(new Option(v.name && v.name !== v.id ? v.name + ' (' + v.id + ')' : v.id, v.id));
    const tr = document.createElement('tr');
    tr.dataset.voice = v.id;
    cell(tr, v.id);
    cell(tr, v.name || '');
    cell(tr, { clone: 'cloned', engine: 'served by the engine', builtin: "the model's built-in voice" }[v.origin] ||
      (v.origin === 'alias' ? 'another name for ' + v.alias_of : v.origin));
    let src = v.source || '–';
    if (v.consent) src += ': ' + v.consent.who + (v.consent.when ? ', ' + v.consent.when.slice(0, 10) : '') + ' — “' + v.consent.statement + '”';
    cell(tr, src);
    cell(tr, v.seconds ? v.seconds.toFixed(1) + ' s, ' + v.references + ' ref.' : '');
    const act = cell(tr, '');
    if (v.origin === 'clone') {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = 'Delete';
      b.setAttribute('aria-label', 'Delete the cloned voice ' + v.id);
      b.addEventListener('click', () => deleteVoice(v.id, b));
      act.appendChild(b);
    }
    tbody.appendChild(tr);
  }
  sel.value = [...sel.options].some((o) => o.value === keep) ? keep : '';
  st.textContent = list.length + (list.length === 1 ? ' voice.' : ' voices.');
}

function confirmDialog(msg) {
  const d = $('confirm');
  $('confirm-text').textContent = msg;
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
    d.returnValue = '';
    d.showModal();
  });
}

async function deleteVoice(id, button) {
  if (!(await confirmDialog('Delete the cloned voice ' + id + '? Its file is removed from the server; this cannot be undone.'))) {
    button.focus();
    return;
  }
  const st = $('voices-status');
  try {
    const resp = await api('/v1/voices/' + encodeURIComponent(id), { method: 'DELETE' });
    if (!resp.ok) throw await apiError(resp);
    await loadVoices();
    st.textContent = 'Deleted ' + id + '.';
  } catch (err) {
    st.textContent = 'Cannot delete ' + id + ': ' + err.message;
    st.className = 'error';
  }
}

// clips to clone from: {name, blob, transcript input}
const clips = [];
function addClip(name, blob) {
  if (clips.length >= 8) { $('clone-status').textContent = 'A voice keeps at most 8 clips.'; return; }
  const n = clips.length + 1;
  const li = document.createElement('li');
  const label = document.createElement('label');
  const tid = 'clip-text-' + Date.now() + '-' + n;
  label.htmlFor = tid;
  label.textContent = 'Transcript of ' + name;
  const input = document.createElement('textarea');
  input.id = tid;
  input.rows = 2;
  input.maxLength = 4000;
  input.className = 'clip-transcript';
  const audio = document.createElement('audio');
  audio.controls = true;
  audio.src = URL.createObjectURL(blob);
  audio.setAttribute('aria-label', 'Listen to ' + name);
  const rm = document.createElement('button');
  rm.type = 'button';
  rm.textContent = 'Remove';
  rm.setAttribute('aria-label', 'Remove ' + name);
  const c = { name, blob, input, li };
  rm.addEventListener('click', () => { clips.splice(clips.indexOf(c), 1); URL.revokeObjectURL(audio.src); li.remove(); $('clone-check').replaceChildren(); });
  li.append(label, input, audio, rm);
  $('clone-clips').appendChild(li);
  clips.push(c);
  $('clone-check').replaceChildren();
}

$('clone-files').addEventListener('change', (e) => {
  for (const f of e.target.files) addClip(f.name, f);
  e.target.value = '';
});

// a recording made here becomes a 16-bit WAV, so the server needs no decoder for it
function encodeWAV(buffer) {
  const x = buffer.getChannelData(0);
  const pcm = new Int16Array(x.length);
  for (let i = 0; i < x.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(x[i] * 32767)));
  const chunksOut = [new Uint8Array(pcm.buffer)];
  const blob = wavFile(chunksOut, pcm.length);
  if (buffer.sampleRate === RATE) return blob;
  // wavFile writes 44.1 kHz: rewrite the rate for another
  return blob.arrayBuffer().then((ab) => {
    const v = new DataView(ab);
    v.setUint32(24, buffer.sampleRate, true);
    v.setUint32(28, buffer.sampleRate * 2, true);
    return new Blob([ab], { type: 'audio/wav' });
  });
}

let recorder = null;
$('clone-record').addEventListener('click', async () => {
  const st = $('clone-status');
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false } });
  } catch (err) {
    st.textContent = 'Cannot record: ' + err.message;
    return;
  }
  const parts = [];
  recorder = new MediaRecorder(stream);
  recorder.ondataavailable = (e) => parts.push(e.data);
  recorder.onstop = async () => {
    for (const t of stream.getTracks()) t.stop();
    try {
      const raw = await new Blob(parts).arrayBuffer();
      const ctx = new OfflineAudioContext(1, 1, RATE);
      const buf = await ctx.decodeAudioData(raw);
      addClip('recording ' + (clips.length + 1) + '.wav', await encodeWAV(buf));
      st.textContent = 'Recorded ' + buf.duration.toFixed(1) + ' s: type its words.';
    } catch (err) {
      st.textContent = 'Cannot read the recording: ' + err.message;
    }
  };
  recorder.start();
  $('clone-record').disabled = true;
  $('clone-record-stop').disabled = false;
  $('clone-record-stop').focus();
  st.textContent = 'Recording…';
});
$('clone-record-stop').addEventListener('click', () => {
  if (recorder) recorder.stop();
  recorder = null;
  $('clone-record').disabled = false;
  $('clone-record-stop').disabled = true;
  $('clone-record').focus();
});

function consentNeeded() { return document.querySelector('input[name=source]:checked').value !== 'synthetic'; }
for (const r of document.querySelectorAll('input[name=source]')) {
  r.addEventListener('change', () => {
    const need = consentNeeded();
    $('consent-fields').hidden = !need;
    $('clone-who').required = need;
    $('clone-statement').required = need;
  });
}
$('clone-who').required = true;
$('clone-statement').required = true;

async function checkClips() {
  const box = $('clone-check');
  box.replaceChildren();
  if (!clips.length) return null;
  const fd = new FormData();
  for (const c of clips) { fd.append('clip', c.blob, c.name); fd.append('transcript', c.input.value.trim()); }
  const resp = await api('/ui/clip-check', { method: 'POST', body: fd });
  if (!resp.ok) throw await apiError(resp);
  const res = await resp.json();
  const h = document.createElement('h4');
  h.textContent = 'Clip check';
  box.appendChild(h);
  const ul = document.createElement('ul');
  res.filled = [];
  res.clips.forEach((c, i) => {
    const li = document.createElement('li');
    li.textContent = c.name + ': ' + c.seconds.toFixed(1) + ' s, speech at ' + c.speech_dbfs.toFixed(0) + ' dBFS' + (c.snr_db ? ', ' + c.snr_db.toFixed(0) + ' dB over the background' : '');
    const box = clips[i] && clips[i].input;
    if (box && c.transcript && !box.value.trim()) {
      box.value = c.transcript;
      box.dataset.transcribed = 'true';
      res.filled.push(box);
      li.textContent += '; words heard by the speech recognition server filled in: check them';
    } else if (c.transcript_error) {
      li.className = 'warning';
      li.textContent += '; cannot transcribe it: ' + c.transcript_error;
    }
    ul.appendChild(li);
  });
  for (const w of res.warnings) {
    const li = document.createElement('li');
    li.className = 'warning';
    li.textContent = 'Warning: ' + (w.source ? w.source + ': ' : '') + w.message + ' (' + w.code + ')';
    ul.appendChild(li);
  }
  if (res.error) {
    const li = document.createElement('li');
    li.className = 'error';
    li.textContent = 'Refused: ' + res.error;
    ul.appendChild(li);
  }
  if (!res.warnings.length && !res.error) {
    const li = document.createElement('li');
    li.textContent = 'No warnings.';
    ul.appendChild(li);
  }
  box.appendChild(ul);
  return res;
}
$('clone-check-button').addEventListener('click', async () => {
  const st = $('clone-status');
  if (!clips.length) { st.textContent = 'Add a clip first.'; return; }
  st.textContent = 'Checking the clips…';
  try { await checkClips(); st.textContent = 'Checked.'; } catch (err) { st.textContent = 'Cannot check the clips: ' + err.message; }
});

$('clone-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const st = $('clone-status');
  st.className = '';
  const name = $('clone-name').value.trim();
  const problems = [];
  if (!name) problems.push([$('clone-name'), 'Give the voice a name.']);
  if (consentNeeded() && !$('clone-who').value.trim()) problems.push([$('clone-who'), 'Say who gave consent.']);
  if (consentNeeded() && !$('clone-statement').value.trim()) problems.push([$('clone-statement'), 'Give their consent statement.']);
  if (!clips.length) problems.push([$('clone-files'), 'Add a recording or record one.']);
  for (const el of document.querySelectorAll('#clone-form [aria-invalid]')) el.removeAttribute('aria-invalid');
  if (problems.length) {
    for (const [el] of problems) el.setAttribute('aria-invalid', 'true');
    st.textContent = problems.map((p) => p[1]).join(' ');
    st.className = 'error';
    problems[0][0].focus();
    return;
  }
  $('clone-submit').disabled = true;
  try {
    st.textContent = 'Checking the clips…';
    const res = await checkClips();
    if (res && res.error) throw new Error(res.error);
    if (res && res.filled.length) {
      st.textContent = 'The speech recognition server filled in ' + res.filled.length + (res.filled.length === 1 ? ' transcript' : ' transcripts') + ': check the words, correct them, then press Clone again.';
      res.filled[0].focus();
      return;
    }
    const empty = clips.filter((c) => !c.input.value.trim());
    if (empty.length) {
      for (const c of empty) c.input.setAttribute('aria-invalid', 'true');
      empty[0].input.focus();
      throw new Error('type the words of ' + empty.map((c) => c.name).join(', ') + (res && !res.transcription ? ' (or start drama serve with --transcribe-url to have them transcribed)' : ''));
    }
    st.textContent = 'Encoding the voice…';
    const fd = new FormData();
    fd.append('name', name);
    const id = $('clone-id').value.trim();
    if (id) fd.append('id', id);
    fd.append('source', document.querySelector('input[name=source]:checked').value);
    if (consentNeeded()) {
      fd.append('consent_who', $('clone-who').value.trim());
      fd.append('consent_statement', $('clone-statement').value.trim());
    }
    for (const c of clips) { fd.append('clip', c.blob, c.name); fd.append('transcript', c.input.value.trim()); }
    const resp = await api('/v1/voices', { method: 'POST', body: fd });
    if (!resp.ok) throw await apiError(resp);
    const v = await resp.json();
    for (const c of [...clips]) { c.li.remove(); }
    clips.length = 0;
    await loadVoices();
    st.textContent = 'Cloned ' + v.id + ' (' + v.seconds.toFixed(1) + ' s)' + (v.engine_restart ? '; the engine restarted to load it in ' + v.engine_restart.seconds.toFixed(1) + ' s' : '') + '.';
  } catch (err) {
    st.textContent = 'Cannot clone: ' + err.message;
    st.className = 'error';
  } finally {
    $('clone-submit').disabled = false;
  }
});

// ---- Server
function metric(text, name, labels) {
  let sum = 0, seen = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith(' ') || rest.startsWith('{'))) continue;
    if (labels && !rest.startsWith('{') ) continue;
    const v = parseFloat(line.slice(line.lastIndexOf(' ') + 1));
    if (!Number.isNaN(v)) { sum += v; seen = true; }
  }
  return seen ? sum : null;
}

async function loadServer() {
  let ready;
  try {
    const resp = await api('/ready');
    ready = await resp.json();
  } catch (err) {
    $('server-line').textContent = 'The server does not answer: ' + err.message;
    $('server-phase').textContent = 'unreachable';
    return;
  }
  // unloaded by --keep-alive, or loading on demand: ready (a request waits for the load), not loaded
  const idle = ready.ready && ready.loaded === false;
  const why = ready.ready && !idle ? '' : (ready.message || ready.phase) + (ready.progress ? ' (' + Math.round(ready.progress * 100) + '%)' : '');
  $('server-phase').textContent = idle ? 'ready: ' + ready.phase : ready.ready ? 'ready' : 'not ready: ' + ready.phase;
  $('server-message').textContent = why || '–';
  $('server-line').textContent = idle ? 'The engine is not loaded: ' + why : ready.ready ? 'The engine is ready.' : 'The engine is not ready: ' + why;
  try {
    const m = await getJSON('/v1/models');
    $('server-model').textContent = (m.data || []).map((x) => x.id).join(', ') || '–';
  } catch (_) { /* shown as – */ }
  try {
    const resp = await api('/metrics');
    if (!resp.ok) throw await apiError(resp); // a key below admin: shown as –
    const t = await resp.text();
    const q = metric(t, 'drama_queue_depth');
    const r = metric(t, 'drama_engine_restarts_total');
    const n = metric(t, 'drama_requests_total', true);
    $('server-queue').textContent = q === null ? '–' : String(q);
    $('server-restarts').textContent = r === null ? String(ready.restarts || 0) : String(r);
    $('server-requests').textContent = n === null ? '–' : String(n);
  } catch (_) { /* shown as – */ }
}
$('server-refresh').addEventListener('click', loadServer);

loadServer();
loadVoices();
setInterval(() => { if (!$('panel-server').hidden || $('server-line').textContent.includes('not ready')) loadServer(); }, 5000);
