// The kit's mapping from browser events to insightd's vocabulary, under `node --test`
// (make test-capture). The DOM here is a small fake whose events and elements record every
// property the kit reads, so the privacy rules (no value, key, code, data, clipboard or
// coordinates; no storage; no network) are checked on each dispatch, not assumed.
// The real browser's behaviour is e2e/capture_test.py's to check.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const kitPath = fileURLToPath(new URL('../insight-capture.js', import.meta.url));
const FORBIDDEN = ['value', 'key', 'code', 'keyCode', 'which', 'charCode', 'data', 'dataTransfer', 'clipboardData',
  'clientX', 'clientY', 'screenX', 'screenY', 'pageX', 'pageY', 'offsetX', 'offsetY', 'x', 'y', 'movementX',
  'textContent', 'innerText', 'innerHTML', 'outerHTML', 'getTargetRanges'];
const read = new Set();

/** An object whose property reads are recorded in `read` (as "what.name"). */
function watched(what, object) {
  return new Proxy(object, {
    get(target, name, receiver) {
      if (typeof name === 'string') read.add(`${what}.${name}`);
      return Reflect.get(target, name, receiver);
    },
  });
}

class FakeTarget {
  constructor() { this.listeners = []; }
  addEventListener(type, listener, options) { this.listeners.push({ type, listener, options }); }
  removeEventListener(type, listener, options) {
    const i = this.listeners.findIndex((l) => l.type === type && l.listener === listener &&
      !!l.options?.capture === !!options?.capture);
    if (i >= 0) this.listeners.splice(i, 1);
  }
  /** Dispatches a trusted event (unless `isTrusted: false`) at `timeStamp` ms of the page. */
  fire(type, timeStamp, props = {}) {
    const event = watched('event', { type, timeStamp, isTrusted: true, target: null, clientX: 10, clientY: 20,
      key: 'x', code: 'KeyX', data: 'secret', clipboardData: { getData: () => 'secret' }, ...props });
    for (const l of [...this.listeners]) if (l.type === type) l.listener(event);
  }
}

let clock = 0;
let document;
let orientation;

function element(tagName, { id = '', attribute = null, caret = 0, editable = false } = {}) {
  const el = {
    tagName, id, selectionStart: caret, isContentEditable: editable, value: 'secret', textContent: 'secret',
    getAttribute: (name) => (name === 'data-insight-field' ? attribute : null),
    matches(selector) {
      if (!/^#[\w-]+$/.test(selector)) throw new SyntaxError(`'${selector}' is not a valid selector`);
      return selector === `#${id}`;
    },
  };
  return watched('element', el);
}

/** Types `count` characters into `el` at `at`, one input event each, moving its caret. */
function type(el, at, count = 1, inputType = 'insertText', step = 1) {
  for (let i = 0; i < count; i++) {
    document.fire('beforeinput', at + i * 100, { target: el, inputType });
    el.selectionStart += step;
    document.fire('input', at + i * 100, { target: el, inputType });
  }
}

function stub(name, value) {
  Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
}

beforeEach(() => {
  read.clear();
  clock = 1000;
  document = new FakeTarget();
  document.visibilityState = 'visible';
  orientation = new FakeTarget();
  stub('document', document);
  stub('screen', { orientation });
  stub('performance', { now: () => clock });
  const trap = (what) => new Proxy({}, { get() { throw new Error(`the kit touched ${what}`); } });
  stub('localStorage', trap('localStorage'));
  stub('sessionStorage', trap('sessionStorage'));
  stub('fetch', () => { throw new Error('the kit called fetch'); });
  stub('XMLHttpRequest', function () { throw new Error('the kit used XMLHttpRequest'); });
  stub('navigator', trap('navigator'));
});

await import(kitPath);
const { InsightCapture } = globalThis;

function assertPrivate() {
  const bad = [...read].filter((r) => FORBIDDEN.includes(r.split('.')[1]));
  assert.deepEqual(bad, [], 'the kit read content, keys or coordinates');
  assert.ok(!read.has('event.clipboardData'));
}

const types = (interaction) => interaction.events.map((e) => e.type);

test('typing: one keyDown per inserted character, with the field kind; no key, ever', () => {
  const payee = element('INPUT', { id: 'payee' });
  const session = InsightCapture.start({ fields: { '#payee': 'payee' } });
  document.fire('focusin', 1500, { target: payee });
  type(payee, 2000, 3);
  clock = 3000;
  const interaction = session.finish();
  assert.deepEqual(interaction.events, [
    { t: 0, type: 'sessionStart' }, { t: 500, type: 'fieldFocus', field: 'payee' },
    { t: 1000, type: 'keyDown', field: 'payee' }, { t: 1100, type: 'keyDown', field: 'payee' },
    { t: 1200, type: 'keyDown', field: 'payee' }, { t: 2000, type: 'submit' }]);
  assert.deepEqual(interaction.source, { kit: 'insight-capture-web', version: InsightCapture.version, platform: 'web', droppedEvents: 0 });
  assert.ok(!('device' in interaction), 'a page cannot know device facts: none is sent');
  assertPrivate();
});

test('several characters in one input (dictation, a keyboard committing a word) are as many keyDowns', () => {
  const el = element('TEXTAREA', { attribute: 'reference' });
  const session = InsightCapture.start();
  type(el, 1100, 1, 'insertText', 5);
  type(el, 1300, 1, 'insertLineBreak');
  assert.deepEqual(types(session.finish()), ['sessionStart', ...Array(6).fill('keyDown'), 'submit']);
  assertPrivate();
});

test('composition: each update is one keyDown, whatever it replaces', () => {
  const el = element('INPUT', { attribute: 'payee' });
  const session = InsightCapture.start();
  type(el, 1100, 4, 'insertCompositionText', 2);
  const events = session.finish().events;
  assert.equal(events.filter((e) => e.type === 'keyDown' && e.field === 'payee').length, 4);
  assertPrivate();
});

test('deletions, pastes and drops; undo, autocorrect and autofill are not keystrokes', () => {
  const el = element('INPUT', { attribute: 'amount' });
  const session = InsightCapture.start();
  type(el, 1100, 1, 'deleteContentBackward', -1);
  type(el, 1200, 1, 'deleteByCut', 0);
  type(el, 1300, 1, 'deleteWordBackward', -3);
  document.fire('paste', 1400, { target: el });
  type(el, 1400, 1, 'insertFromPaste', 6);     // the same paste: counted once, by its paste event
  type(el, 1500, 1, 'insertFromDrop', 6);
  type(el, 1600, 1, 'historyUndo', -6);
  type(el, 1700, 1, 'insertReplacementText', 2);
  type(el, 1800, 1, null, 12);                   // Chrome's autofill: an input without inputType
  const interaction = session.finish();
  assert.deepEqual(types(interaction), ['sessionStart', 'delete', 'delete', 'delete', 'paste', 'paste', 'submit']);
  assert.ok(interaction.events.slice(1, -1).every((e) => e.field === 'amount'));
  assertPrivate();
});

test('field kinds: the attribute first, then the fields option; unknown kinds and bad selectors are other', () => {
  const both = element('INPUT', { id: 'a', attribute: 'otp' });
  const mapped = element('INPUT', { id: 'b' });
  const wrongKind = element('INPUT', { attribute: 'iban' });
  const unlisted = element('SELECT', { id: 'c' });
  const editable = element('DIV', { editable: true, attribute: 'reference' });
  const session = InsightCapture.start({ fields: { 'div >': 'amount', '#a': 'amount', '#b': 'password' } });
  for (const [i, el] of [both, mapped, wrongKind, unlisted, editable].entries()) document.fire('focusin', 1100 + i, { target: el });
  assert.deepEqual(session.finish().events.slice(1, -1).map((e) => e.field), ['otp', 'password', 'other', 'other', 'reference']);
  assertPrivate();
});

test('focus and blur of fields only; taps without coordinates; scrolls at most every 250 ms', () => {
  const button = element('BUTTON');
  const el = element('INPUT');
  const session = InsightCapture.start();
  document.fire('focusin', 1100, { target: button });
  document.fire('pointerdown', 1100, { target: button });
  document.fire('focusin', 1200, { target: el });
  document.fire('focusout', 1300, { target: el });
  for (const at of [1400, 1500, 1700, 1800, 1900, 2000]) document.fire('scroll', at, { target: document });
  assert.deepEqual(session.finish().events.slice(1, -1), [
    { t: 100, type: 'tap' }, { t: 200, type: 'fieldFocus', field: 'other' }, { t: 300, type: 'fieldBlur', field: 'other' },
    { t: 400, type: 'scroll' }, { t: 700, type: 'scroll' }, { t: 1000, type: 'scroll' }]);
  assertPrivate();
});

test('visibility and orientation: appBackground, appForeground, orientationChange', () => {
  const session = InsightCapture.start();
  document.visibilityState = 'hidden';
  document.fire('visibilitychange', 2000);
  document.visibilityState = 'visible';
  document.fire('visibilitychange', 9000);
  orientation.fire('change', 9500);
  assert.deepEqual(types(session.finish()), ['sessionStart', 'appBackground', 'appForeground', 'orientationChange', 'submit']);
});

/** A copy of the kit loaded afresh by a script element with `attributes`, as a page loads it. */
function loadKit(attributes = [], into = { document, screen: globalThis.screen, performance: globalThis.performance }) {
  document.currentScript = { hasAttribute: (name) => attributes.includes(name) };
  new Function('globalThis', readFileSync(kitPath, 'utf8'))(into);
  delete document.currentScript;
  return into.InsightCapture;
}

test('script-fired events are ignored; acceptUntrusted is the kit script\'s attribute, read as it loads, never an option', () => {
  const el = element('INPUT');
  const fire = () => {
    document.fire('focusin', 1100, { target: el, isTrusted: false });
    document.fire('pointerdown', 1200, { isTrusted: false });
  };
  const asked = InsightCapture.start({ acceptUntrusted: true });   // any script could ask: ignored
  fire();
  assert.equal(asked.finish().events.length, 2);
  const plain = loadKit();
  const testing = loadKit(['data-insight-accept-untrusted']);
  const later = plain.start();
  document.currentScript = { hasAttribute: () => true };            // too late: read once, at load
  fire();
  delete document.currentScript;
  assert.equal(later.finish().events.length, 2);
  const session = testing.start();
  fire();
  assert.deepEqual(types(session.finish()), ['sessionStart', 'fieldFocus', 'tap', 'submit']);
});

test('one session owns finish(): a later start() is a session of its own and cannot replace the page\'s', () => {
  const el = element('INPUT', { attribute: 'payee' });
  const page = InsightCapture.start();
  document.fire('focusin', 1100, { target: el });
  // Another script on the page: its own session, a second copy of the kit, a new global.
  const other = InsightCapture.start({ acceptUntrusted: true });
  const again = loadKit(['data-insight-accept-untrusted'], globalThis);
  assert.equal(again, InsightCapture, 'a second copy of the kit does not replace the first');
  assert.throws(() => { globalThis.InsightCapture = { finish: () => ({ events: [] }) }; }, TypeError);
  assert.throws(() => { InsightCapture.finish = () => ({ events: [] }); }, TypeError);
  assert.ok(Object.isFrozen(page));
  document.fire('pointerdown', 1200, { isTrusted: false });
  type(el, 1300, 2);
  clock = 1500;
  const forged = other.finish();
  assert.deepEqual(types(forged), ['sessionStart', 'keyDown', 'keyDown', 'submit'], 'its own, from its own start');
  const owned = InsightCapture.finish();
  assert.deepEqual(types(owned), ['sessionStart', 'fieldFocus', 'keyDown', 'keyDown', 'submit']);
  assert.deepEqual(page.finish(), owned);
  // Once the page's session ended, the next start() is the page's again.
  const next = InsightCapture.start();
  InsightCapture.start();
  assert.deepEqual(InsightCapture.finish(), next.finish());
});

test('document.execCommand edits (input without beforeinput) are the page\'s script, not the person: not recorded', () => {
  const el = element('TEXTAREA', { attribute: 'payee' });
  const other = element('INPUT', { attribute: 'amount' });
  const session = InsightCapture.start();
  type(el, 1100, 2);
  // Chromium: execCommand('insertText'), ('insertParagraph'), ('delete') send trusted input
  // events and no beforeinput (e2e/capture_test.py checks it in the browser).
  for (const [inputType, step] of [['insertText', 3], ['insertParagraph', 1], ['deleteContentBackward', -1], ['insertFromDrop', 4]]) {
    el.selectionStart += step;
    document.fire('input', 1400, { target: el, inputType });
  }
  document.fire('beforeinput', 1500, { target: other, inputType: 'insertText' });  // another field's
  el.selectionStart += 1;
  document.fire('input', 1500, { target: el, inputType: 'insertText' });
  type(el, 1600, 1, 'deleteContentBackward', -1);
  assert.deepEqual(types(session.finish()), ['sessionStart', 'keyDown', 'keyDown', 'delete', 'submit']);
  assertPrivate();
});

test('password and one-time-code fields: keys counted, each burst evenly spread between its first and last key', () => {
  const otp = element('INPUT', { attribute: 'otp' });
  const password = element('INPUT', { id: 'pw' });
  password.type = 'password';                    // a password input of kind other: its keys too
  const payee = element('INPUT', { attribute: 'payee' });
  const session = InsightCapture.start();
  document.fire('focusin', 1000, { target: otp });
  const key = (el, at, inputType = 'insertText', step = 1) => {
    document.fire('beforeinput', at, { target: el, inputType });
    el.selectionStart += step;
    document.fire('input', at, { target: el, inputType });
  };
  // 1 2 3, a pause of 4 s, 4 5 6: two bursts, as the model counts them (gaps up to 1 s).
  for (const at of [5000, 5130, 5610, 9610, 9700, 10300]) key(otp, at);
  document.fire('focusout', 10500, { target: otp });
  document.fire('focusin', 11000, { target: password });
  for (const at of [12000, 12050, 12400]) key(password, at);
  key(password, 12900, 'deleteContentBackward', -1);
  key(password, 13000);
  document.fire('pointerdown', 13200);           // any other event ends the burst
  key(password, 13300);
  document.fire('focusin', 14000, { target: payee });
  for (const at of [15000, 15130, 15610]) key(payee, at);
  clock = 17000;
  const events = session.finish().events.slice(1, -1);
  const field = (kind) => events.filter((e) => e.field === kind && (e.type === 'keyDown' || e.type === 'delete'));
  assert.deepEqual(field('otp').map((e) => e.t), [4000, 4305, 4610, 8610, 8955, 9300]);
  assert.deepEqual(field('other').map((e) => [e.type, e.t]), [
    ['keyDown', 11000], ['keyDown', 11250], ['keyDown', 11500], ['delete', 11750], ['keyDown', 12000], ['keyDown', 12300]]);
  assert.deepEqual(field('payee').map((e) => e.t), [14000, 14130, 14610], 'other fields keep each key\'s time');
  assert.deepEqual(types({ events }).filter((t) => t !== 'keyDown' && t !== 'delete'),
    ['fieldFocus', 'fieldBlur', 'fieldFocus', 'tap', 'fieldFocus']);
  assert.ok(events.every((e, i) => i === 0 || e.t >= events[i - 1].t));
  assertPrivate();
});

test('a secret burst keeps what the model reads: the same gaps up to 1 s in count and sum, the longer ones exact', () => {
  const el = element('INPUT', { attribute: 'password' });
  const session = InsightCapture.start();
  let at = 1000;
  const real = [];
  for (let i = 0; i < 40; i++) {
    at += [73, 999, 1000, 1001, 240, 3, 650, 5400][i % 8];
    real.push(at - 1000);
    document.fire('beforeinput', at, { target: el, inputType: 'insertText' });
    el.selectionStart += 1;
    document.fire('input', at, { target: el, inputType: 'insertText' });
  }
  clock = at + 10;
  const sent = session.finish().events.filter((e) => e.type === 'keyDown').map((e) => e.t);
  const rhythm = (times) => {
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    const short = gaps.filter((g) => g <= 1000);
    return [short.length, short.reduce((a, b) => a + b, 0), gaps.filter((g) => g > 1000)];
  };
  assert.equal(sent.length, real.length);
  assert.deepEqual(rhythm(sent), rhythm(real));
  assert.equal(sent[0], real[0]);
  assert.equal(sent.at(-1), real.at(-1));
});

test('t: whole ms from the event timestamp, never decreasing, clock not rounded away', () => {
  const el = element('INPUT');
  const session = InsightCapture.start();
  document.fire('focusin', 1100.4, { target: el });
  document.fire('pointerdown', 1100.6);
  document.fire('pointerdown', 1050);          // an earlier timestamp keeps the previous t
  document.fire('pointerdown', 900);           // before the session began
  clock = 1000;                                // submit with the clock where it started
  assert.deepEqual(session.finish().events.map((e) => e.t), [0, 100, 101, 101, 101, 101]);
});

test('more than an hour: later events are dropped and counted, submit is at 3,600,000', () => {
  const session = InsightCapture.start();
  document.fire('pointerdown', 1000 + 3_599_999);
  document.fire('pointerdown', 1000 + 3_600_001);
  document.fire('pointerdown', 1000 + 7_200_000);
  clock = 1000 + 7_300_000;
  const interaction = session.finish();
  assert.deepEqual(interaction.events, [{ t: 0, type: 'sessionStart' }, { t: 3_599_999, type: 'tap' }, { t: 3_600_000, type: 'submit' }]);
  assert.equal(interaction.source.droppedEvents, 2);
});

test('at most 5,000 events with submit; what does not fit is counted', () => {
  const el = element('INPUT');
  const session = InsightCapture.start();
  for (let i = 0; i < 6000; i++) document.fire('focusin', 1000 + i, { target: el });
  clock = 8000;
  const interaction = session.finish();
  assert.equal(interaction.events.length, 5000);
  assert.equal(interaction.events.at(-1).type, 'submit');
  assert.equal(interaction.events.at(-2).t, 4997);
  assert.equal(interaction.source.droppedEvents, 6000 - 4998);
});

test('finish removes every listener; a second finish returns the same object again', () => {
  const el = element('INPUT');
  const session = InsightCapture.start();
  assert.ok(document.listeners.length >= 7 && orientation.listeners.length === 1);
  assert.ok([...document.listeners].every((l) => l.options.passive && l.options.capture));
  clock = 1500;
  const first = session.finish();
  assert.equal(document.listeners.length, 0);
  assert.equal(orientation.listeners.length, 0);
  document.fire('focusin', 1600, { target: el });
  first.events.push({ t: 9, type: 'tap' });    // the caller's copy is its own
  clock = 5000;
  const second = session.finish();
  assert.deepEqual(second.events, [{ t: 0, type: 'sessionStart' }, { t: 500, type: 'submit' }]);
  assert.deepEqual(InsightCapture.finish(), second);
});

test('without a document, or with bad options: a defined result, never an exception', () => {
  stub('document', undefined);
  stub('screen', undefined);
  const session = InsightCapture.start({ root: null, fields: null });
  assert.deepEqual(types(session.finish()), ['sessionStart', 'submit']);
  assert.doesNotThrow(() => InsightCapture.start({ fields: { ')': 'payee' } }).finish());
  assert.doesNotThrow(() => InsightCapture.start('nonsense').finish());
});

test('a page that never called start gets an interaction with no events', () => {
  // A fresh copy of the kit, as a page that loaded it and never started a session sees it.
  const sandbox = {};
  new Function('globalThis', readFileSync(kitPath, 'utf8'))(sandbox);
  assert.deepEqual(sandbox.InsightCapture.finish(), { source: { kit: 'insight-capture-web', version: sandbox.InsightCapture.version, platform: 'web', droppedEvents: 0 } });
});

test('the source: at most 12 KB; no eval, storage, network, content or coordinates', () => {
  const source = readFileSync(kitPath, 'utf8');
  assert.ok(Buffer.byteLength(source) <= 12 * 1024, `${Buffer.byteLength(source)} bytes`);
  const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
  for (const pattern of [/\beval\b/, /\bFunction\s*\(/, /\bsetTimeout\s*\(\s*['"]/, /\.value\b/, /\.key\b/, /\.code\b/,
    /\.data\b/, /clipboard/i, /Storage\b/, /cookie/, /\bfetch\b/, /XMLHttpRequest/, /sendBeacon/, /WebSocket/,
    /client[XY]|screen[XY]|page[XY]|offset[XY]/, /innerHTML|textContent|innerText/]) {
    assert.doesNotMatch(code, pattern);
  }
});

test('the ES-module twin exports the same object', async () => {
  const twin = await import('../insight-capture.mjs');
  assert.equal(twin.default, globalThis.InsightCapture);
  assert.equal(twin.start, globalThis.InsightCapture.start);
});
