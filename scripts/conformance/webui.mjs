// Drives drama serve's page in a real browser (Debian's chromium through
// playwright-core): speaks a line and checks that audio played before the
// synthesis ended, that a failed synthesis is shown as an error and never as
// complete audio, clones a voice from a clip and deletes it, records a clip
// from the (fake) microphone, and that the page logged no console error and
// loaded nothing from elsewhere. Prints one JSON line of findings; exits 1
// on the first failure.
//
// With DRAMA_WEBUI_KEY set (a key of scope admin of a drama serve that asks
// for keys), the page must first ask for a key, refuse a wrong one, take the
// right one, keep it across a reload of the tab but not in a new tab, and
// send it as Authorization: Bearer on every request to the API after that.
//
// usage: [DRAMA_WEBUI_KEY=KEY] node webui.mjs BASE_URL ARTIFACT_DIR CLIP.wav...
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [base, artifacts, ...clipPaths] = process.argv.slice(2);
if (!base || !artifacts || !clipPaths.length) {
  console.error('usage: node webui.mjs BASE_URL ARTIFACT_DIR CLIP.wav...');
  process.exit(2);
}
const origin = new URL(base).origin;
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'drama-chromium-'));
const found = { console_errors: [], foreign_requests: [] };
let allowNetErrors = false;
let netErrorsSeen = 0;
const key = process.env.DRAMA_WEBUI_KEY || '';
let allowAuthErrors = Boolean(key); // the 401s that make the page ask for the key
const sent = []; // API requests once the key is given: [url, authorization]
let watchKey = false;

function fail(msg) {
  throw new Error(msg);
}

const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.DRAMA_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream'],
  permissions: ['microphone'],
  viewport: { width: 1100, height: 1400 },
});
let code = 0;
try {
  const page = ctx.pages()[0] || (await ctx.newPage());
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    // the failed synthesis is a cut stream: the browser reports the cut itself
    if (allowNetErrors && /ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION|network error/i.test(m.text())) { netErrorsSeen++; return; }
    if (allowAuthErrors && /status of 401/.test(m.text())) return;
    found.console_errors.push(m.text());
  });
  page.on('pageerror', (e) => found.console_errors.push('page error: ' + e.message));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(origin + '/') && !u.startsWith('blob:') && !u.startsWith('data:')) found.foreign_requests.push(u);
    const p = u.startsWith(origin + '/') ? u.slice(origin.length) : '';
    if (watchKey && /^\/(v1\/|metrics|ready|ui\/clip-check)/.test(p)) sent.push(r.allHeaders().then((h) => [p, h.authorization || '']));
  });

  await page.goto(base + '/');
  if (key) {
    // the shell loads without a key and asks for one; a wrong key is refused
    await page.waitForSelector('#key-form:not([hidden])', { timeout: 20000 });
    found.key_asked = await page.textContent('#key-status');
    await page.fill('#key-input', 'wrong-' + key);
    await page.click('#key-use');
    await page.waitForFunction(() => document.getElementById('key-status').textContent.includes('refused'), null, { timeout: 20000 });
    found.key_refused = await page.textContent('#key-status');
    if (await page.evaluate(() => sessionStorage.getItem('drama-api-key'))) fail('key: a refused key is kept');
    await page.waitForSelector('#key-form:not([hidden])', { timeout: 20000 });
    await page.fill('#key-input', key);
    watchKey = true;
    await page.click('#key-use');
    await page.waitForSelector('#key-form', { state: 'hidden', timeout: 20000 });
    if ((await page.evaluate(() => sessionStorage.getItem('drama-api-key'))) !== key) fail('key: not kept in sessionStorage');
    // kept across a reload of the tab, not in another tab
    await page.waitForFunction(() => /voices?\.$/.test(document.getElementById('voices-status').textContent), null, { timeout: 20000 });
    await page.reload();
    await page.waitForFunction(() => /voices?\.$/.test(document.getElementById('voices-status').textContent), null, { timeout: 20000 });
    if (!(await page.isHidden('#key-form'))) fail('key: asked for again after a reload of the tab');
    const other = await ctx.newPage();
    await other.goto(base + '/');
    await other.waitForSelector('#key-form:not([hidden])', { timeout: 20000 });
    await other.close();
    allowAuthErrors = false;
  }
  await page.waitForFunction(() => /voices?\.$/.test(document.getElementById('voices-status').textContent), null, { timeout: 20000 });
  await page.waitForFunction(() => document.getElementById('server-line').textContent.includes('ready'), null, { timeout: 20000 });
  found.voices = await page.$$eval('#speak-voice option', (os) => os.map((o) => o.value).filter(Boolean));

  // -- speak: audio must be heard while the engine is still making it
  async function speakAndWatch(line, byKeyboard) {
    await page.fill('#speak-text', line);
    if (byKeyboard) {
      await page.focus('#speak-text');
      await page.keyboard.press('Control+Enter');
    } else {
      await page.click('#speak-play');
    }
    let playedWhileStreaming = 0;
    let state = '';
    const deadline = Date.now() + 60000;
    while (Date.now() < deadline) {
      const s = await page.evaluate(() => ({
        state: document.getElementById('speak-status').dataset.state,
        played: document.getElementById('speak-played').textContent,
      }));
      state = s.state;
      if (state === 'streaming') {
        const p = parseFloat(s.played);
        if (!Number.isNaN(p)) playedWhileStreaming = Math.max(playedWhileStreaming, p);
      }
      if (state === 'done' || state === 'error') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    return { state, playedWhileStreaming };
  }

  const ok = await speakAndWatch('The page plays this line while the engine is still making it, word by word.');
  if (ok.state !== 'done') fail('speak: ended in state ' + ok.state + ': ' + (await page.textContent('#speak-status')));
  if (!(ok.playedWhileStreaming > 0)) fail('speak: no audio played before the synthesis ended');
  found.played_before_end_s = ok.playedWhileStreaming;
  found.played_at_done_s = parseFloat(await page.getAttribute('#speak-status', 'data-played-at-done'));
  found.finish_reason = await page.textContent('#speak-finish');
  found.first_audio = await page.textContent('#speak-first');
  found.rtf = await page.textContent('#speak-rtf');
  if (found.finish_reason !== 'stop') fail('speak: finish reason ' + found.finish_reason);
  if (!/s$/.test(found.first_audio) || Number.isNaN(parseFloat(found.rtf))) fail('speak: first audio ' + found.first_audio + ', rtf ' + found.rtf);
  if (await page.isHidden('#speak-download')) fail('speak: no WAV download after a complete synthesis');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#speak-download')]);
  const wavPath = path.join(artifacts, 'speech.wav');
  await download.saveAs(wavPath);
  const wav = fs.readFileSync(wavPath);
  found.wav_bytes = { size: wav.length, riff: wav.readUInt32LE(4), data: wav.readUInt32LE(40), name: download.suggestedFilename() };
  if (found.wav_bytes.size <= 44 || found.wav_bytes.data !== found.wav_bytes.size - 44 || found.wav_bytes.riff !== found.wav_bytes.size - 8) {
    fail('speak: the WAV download has wrong sizes: ' + JSON.stringify(found.wav_bytes));
  }

  // -- a synthesis that fails after its first chunk is an error, not audio
  allowNetErrors = true;
  const seenBefore = netErrorsSeen;
  const bad = await speakAndWatch('This line fails [standin:fail] part way through its synthesis.');
  // the browser reports the cut on its own time, maybe after the page has
  // shown it: wait for that report (at most 5 s) before errors count again
  for (let i = 0; i < 50 && netErrorsSeen === seenBefore; i++) await page.waitForTimeout(100);
  allowNetErrors = false;
  found.failed_status = await page.textContent('#speak-status');
  if (bad.state !== 'error') fail('failed synthesis: shown as ' + bad.state + ': ' + found.failed_status);
  if (!found.failed_status.includes('not the complete audio')) fail('failed synthesis: status does not say the audio is incomplete: ' + found.failed_status);
  if (!(await page.isHidden('#speak-download'))) fail('failed synthesis: a WAV download is offered');
  if ((await page.textContent('#speak-finish')) !== '–') fail('failed synthesis: a finish reason is shown');

  // -- voices, reached by keyboard
  await page.focus('#tab-speak');
  await page.keyboard.press('ArrowRight');
  if ((await page.getAttribute('#tab-voices', 'aria-selected')) !== 'true') fail('keyboard: ArrowRight did not open Voices');
  if ((await page.evaluate(() => document.activeElement.id)) !== 'tab-voices') fail('keyboard: focus did not follow the tab');

  // the consent fields are required: a clone without them is refused on the page
  await page.fill('#clone-name', 'Page Test');
  await page.setInputFiles('#clone-files', clipPaths);
  const transcripts = await page.$$('.clip-transcript');
  if (transcripts.length !== clipPaths.length) fail('clone: ' + transcripts.length + ' transcript boxes for ' + clipPaths.length + ' clips');
  // with a transcription server (DRAMA_WEBUI_TRANSCRIPT: what it hears in
  // the last clip), the last clip's words are left for it to fill in
  const heard = process.env.DRAMA_WEBUI_TRANSCRIPT || '';
  for (const [i, box] of transcripts.entries()) {
    if (heard && i === transcripts.length - 1) continue;
    await box.fill('Line ' + (i + 1) + ' spoken for the page test.');
  }
  await page.click('#clone-submit');
  await page.waitForFunction(() => document.getElementById('clone-status').textContent.includes('consent'), null, { timeout: 10000 });
  if ((await page.getAttribute('#clone-who', 'aria-invalid')) !== 'true') fail('clone: the missing consent is not marked');

  await page.fill('#clone-who', 'Page Tester');
  await page.fill('#clone-statement', 'I, Page Tester, agree that my voice is cloned for this test.');
  await page.click('#clone-check-button');
  await page.waitForSelector('#clone-check h4', { timeout: 30000 });
  found.clip_check = await page.textContent('#clone-check');
  if (heard) {
    const got = await transcripts[transcripts.length - 1].inputValue();
    if (got !== heard) fail('transcription: the last clip\'s words are ' + JSON.stringify(got) + ', want ' + JSON.stringify(heard));
    found.transcribed = got;
  }
  await page.click('#clone-submit');
  await page.waitForFunction(() => /Cloned|Cannot clone/.test(document.getElementById('clone-status').textContent), null, { timeout: 60000 });
  found.clone_status = await page.textContent('#clone-status');
  if (!found.clone_status.startsWith('Cloned page-test')) fail('clone: ' + found.clone_status);
  const row = await page.textContent('tr[data-voice="page-test"]');
  if (!row.includes('cloned') || !row.includes('consented') || !row.includes('Page Tester')) fail('clone: the voice row lacks origin, source or consent: ' + row);
  found.voice_row = row;

  // speak with the clone
  await page.click('#tab-speak');
  await page.selectOption('#speak-voice', 'page-test');
  const cloned = await speakAndWatch('Now in the cloned voice.', true);
  if (cloned.state !== 'done') fail('speak with the clone: ' + (await page.textContent('#speak-status')));
  await page.click('#tab-voices');

  // delete: keep it first, then delete
  await page.click('tr[data-voice="page-test"] button');
  await page.waitForSelector('#confirm[open]');
  await page.click('#confirm-cancel');
  if (!(await page.$('tr[data-voice="page-test"]'))) fail('delete: "Keep it" deleted the voice');
  await page.click('tr[data-voice="page-test"] button');
  await page.waitForSelector('#confirm[open]');
  await page.click('#confirm-ok');
  await page.waitForFunction(() => !document.querySelector('tr[data-voice="page-test"]'), null, { timeout: 10000 });
  found.delete_status = await page.textContent('#voices-status');

  // a recording made in the browser becomes a clip
  await page.click('#clone-record');
  await page.waitForFunction(() => document.getElementById('clone-status').textContent === 'Recording…', null, { timeout: 10000 });
  await new Promise((r) => setTimeout(r, 1500));
  await page.click('#clone-record-stop');
  await page.waitForFunction(() => /Recorded|Cannot/.test(document.getElementById('clone-status').textContent), null, { timeout: 10000 });
  found.record_status = await page.textContent('#clone-status');
  if (!found.record_status.startsWith('Recorded')) fail('record: ' + found.record_status);

  // server tab
  await page.click('#tab-server');
  await page.click('#server-refresh');
  await page.waitForFunction(() => document.getElementById('server-queue').textContent !== '–', null, { timeout: 10000 });
  found.server = {
    phase: await page.textContent('#server-phase'),
    queue: await page.textContent('#server-queue'),
    restarts: await page.textContent('#server-restarts'),
    model: await page.textContent('#server-model'),
  };
  if (found.server.phase !== 'ready') fail('server: phase ' + found.server.phase);

  await page.click('#tab-speak');
  found.screenshot = path.join(artifacts, 'webui.png');
  await page.screenshot({ path: found.screenshot, fullPage: true });

  if (key) {
    const seen = await Promise.all(sent);
    const bare = seen.filter(([, auth]) => auth !== 'Bearer ' + key).map(([p]) => p);
    found.keyed_requests = seen.length;
    if (!seen.length) fail('key: no API request was seen');
    if (bare.length) fail('key: requests sent without the key: ' + bare.join(' '));
  }
  if (found.console_errors.length) fail('console errors: ' + found.console_errors.join(' | '));
  if (found.foreign_requests.length) fail('requests beyond the server: ' + found.foreign_requests.join(' '));
} catch (e) {
  found.error = e.message;
  code = 1;
  try {
    const p = ctx.pages()[0];
    if (p) await p.screenshot({ path: path.join(artifacts, 'webui-failure.png'), fullPage: true });
  } catch (_) { /* keep the first error */ }
} finally {
  await ctx.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(found));
process.exit(code);
