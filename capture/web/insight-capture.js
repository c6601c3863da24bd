/* insight-capture.js: insightd's capture kit for web pages (docs/capture.md).
 *
 *   const session = InsightCapture.start({ fields: { '#payee': 'payee', '#amount': 'amount' } });
 *   ...                                  // the person fills in the form
 *   const interaction = session.finish(); // the `interaction` member of POST /v1/evaluations
 *
 * It records when things happen, never what: no value, key, code, input data, clipboard
 * content or coordinate is read; in password and one-time-code fields not even each key's
 * time. It stores nothing and sends nothing; the page's own backend forwards the object to
 * insightd with its server-side key. One classic script, no dependency, no eval: it runs
 * under a strict Content-Security-Policy.
 */
(function (global) {
  'use strict';

  var VERSION = '1.1.0';
  var MAX_T = 3600000;          // one hour: the daemon refuses a later t
  var MAX_EVENTS = 5000;        // the daemon's limit, submit included
  var SCROLL_GAP = 250;         // at most one scroll event per 250 ms
  var RHYTHM_GAP = 1000;        // the model's typing rhythm: key gaps up to 1 s (typingGapMaxMs)
  var KINDS = ['payee', 'amount', 'reference', 'otp', 'password', 'other'];
  var EDITABLE = { INPUT: 1, TEXTAREA: 1, SELECT: 1 };

  /* Events fired by script are recorded only on a test page that says so on the kit's own
   * script element (<script src="insight-capture.js" data-insight-accept-untrusted>), read
   * once, as the kit loads: no later script can turn it on. */
  var loading = global.document && global.document.currentScript;
  var UNTRUSTED = !!(loading && loading.hasAttribute && loading.hasAttribute('data-insight-accept-untrusted'));

  function source(dropped) {
    return { kit: 'insight-capture-web', version: VERSION, platform: 'web', droppedEvents: dropped };
  }

  function now() {
    return global.performance ? global.performance.now() : Date.now();
  }

  /* What a beforeinput/input inputType means: typing (one keyDown per inserted character),
   * a deletion, a paste (content arriving at once: paste or drop), or nothing to record
   * (undo, redo, formatting, autocorrect replacing a word). Composition updates are key
   * presses of an IME or of an Android keyboard, so they count as typing. */
  function inputKind(inputType) {
    if (!inputType) return '';
    if (inputType.lastIndexOf('delete', 0) === 0) return 'delete';
    if (inputType === 'insertFromDrop') return 'paste';
    if (inputType === 'insertText' || inputType === 'insertCompositionText' ||
        inputType === 'insertLineBreak' || inputType === 'insertParagraph') return 'type';
    return '';
  }

  function Session(options, ends) {
    var self = this;
    options = options || {};
    var doc = global.document;
    var root = options.root || doc;
    var selectors = [];
    var fields = options.fields || {};
    for (var selector in fields) {
      if (Object.prototype.hasOwnProperty.call(fields, selector)) selectors.push([selector, kindName(fields[selector])]);
    }
    var origin = now();
    var events = [{ t: 0, type: 'sessionStart' }];
    var last = 0;
    var lastScroll = -SCROLL_GAP;
    var dropped = 0;
    var caret = null;           // [element, selectionStart] seen at beforeinput
    var burst = null;           // [field, first t, last t, types]: keys of a secret field not yet written
    var listeners = [];
    var result = null;

    function kindName(kind) {
      return KINDS.indexOf(kind) >= 0 ? kind : 'other';
    }

    function isField(el) {
      return !!el && (EDITABLE[el.tagName] === 1 || el.isContentEditable === true);
    }

    /* The field kind of an element: its data-insight-field attribute, else the first selector
     * of `fields` it matches, else `other`. A selector the browser refuses matches nothing. */
    function fieldOf(el) {
      var attribute = el.getAttribute && el.getAttribute('data-insight-field');
      if (attribute) return kindName(attribute);
      for (var i = 0; i < selectors.length; i++) {
        try {
          if (el.matches(selectors[i][0])) return selectors[i][1];
        } catch (ignored) { /* an invalid selector */ }
      }
      return 'other';
    }

    function time(stamp) {
      var t = Math.round((typeof stamp === 'number' ? stamp : now()) - origin);
      return t > last ? t : last;
    }

    /* Appends one event unless the session is full or past its hour (then it is counted).
     * The keys of a password or one-time-code field (`secret`) are held as a burst while they
     * come at most RHYTHM_GAP apart, then written evenly spread from the burst's first key to
     * its last: their count, order, start and end stay, each key's own time does not. */
    function record(type, t, field, secret) {
      if (events.length + (burst ? burst[3].length : 0) >= MAX_EVENTS - 1 || t > MAX_T) {
        dropped++;
        return;
      }
      last = t;
      if (secret && burst && burst[0] === field && t - burst[2] <= RHYTHM_GAP) {
        burst[2] = t;
        burst[3].push(type);
        return;
      }
      flush();
      if (secret) {
        burst = [field, t, t, [type]];
        return;
      }
      var event = { t: t, type: type };
      if (field) event.field = field;
      events.push(event);
    }

    function flush() {
      if (!burst) return;
      var n = burst[3].length;
      for (var i = 0; i < n; i++) {
        var t = n > 1 ? burst[1] + Math.round(i * (burst[2] - burst[1]) / (n - 1)) : burst[1];
        events.push({ t: t, type: burst[3][i], field: burst[0] });
      }
      burst = null;
    }

    function isSecret(el, field) {
      return field === 'password' || field === 'otp' || el.type === 'password';
    }

    function listen(target, type, handle) {
      if (!target || !target.addEventListener) return;
      var listener = function (event) {
        if (result || (!event.isTrusted && !UNTRUSTED)) return;
        try {
          handle(event, time(event.timeStamp));
        } catch (ignored) { /* never break the page */ }
      };
      var how = { capture: true, passive: true };
      target.addEventListener(type, listener, how);
      listeners.push([target, type, listener, how]);
    }

    listen(root, 'beforeinput', function (event) {
      var el = event.target;
      caret = isField(el) ? [el, el.selectionStart] : null;
    });

    /* The browser sends beforeinput before every edit of its own (typing, IME, dictation,
     * paste, drop, deletion); document.execCommand sends input events, trusted, without one:
     * such an edit is the page's script, not the person, and is not recorded. */
    listen(root, 'input', function (event, t) {
      var el = event.target;
      var native = !!caret && caret[0] === el;
      var before = native ? caret[1] : null;
      caret = null;
      var kind = inputKind(event.inputType);
      if (!native || !kind || !isField(el)) return;
      var field = fieldOf(el);
      if (kind === 'delete') {
        record(kind, t, field, isSecret(el, field));
      } else if (kind === 'paste') {
        record(kind, t, field);
      } else if (kind === 'type') {
        // Characters inserted: how far the caret moved (never the text). Composition
        // updates replace what they composed, and some fields have no caret: one each.
        var after = el.selectionStart;
        var count = event.inputType !== 'insertCompositionText' && typeof before === 'number' &&
          typeof after === 'number' && after > before ? after - before : 1;
        for (var i = 0; i < count; i++) record('keyDown', t, field, isSecret(el, field));
      }
    });

    listen(root, 'paste', function (event, t) {
      if (isField(event.target)) record('paste', t, fieldOf(event.target));
    });

    listen(root, 'focusin', function (event, t) {
      if (isField(event.target)) record('fieldFocus', t, fieldOf(event.target));
    });

    listen(root, 'focusout', function (event, t) {
      if (isField(event.target)) record('fieldBlur', t, fieldOf(event.target));
    });

    listen(root, 'pointerdown', function (event, t) {
      record('tap', t);
    });

    listen(root, 'scroll', function (event, t) {
      if (t - lastScroll < SCROLL_GAP) return;
      lastScroll = t;
      record('scroll', t);
    });

    listen(doc, 'visibilitychange', function (event, t) {
      record(doc.visibilityState === 'hidden' ? 'appBackground' : 'appForeground', t);
    });

    var orientation = global.screen && global.screen.orientation;
    if (orientation && orientation.addEventListener) {
      listen(orientation, 'change', function (event, t) { record('orientationChange', t); });
    } else {
      listen(global, 'orientationchange', function (event, t) { record('orientationChange', t); });
    }

    /* Ends the session: adds submit, removes every listener and returns the Interaction
     * object. A second call returns the same object again (a fresh copy). */
    self.finish = function () {
      if (!result) {
        for (var i = 0; i < listeners.length; i++) {
          var l = listeners[i];
          try {
            l[0].removeEventListener(l[1], l[2], l[3]);
          } catch (ignored) { /* a target gone away */ }
        }
        listeners = [];
        flush();
        var t = time();
        events.push({ t: t > MAX_T ? MAX_T : t, type: 'submit' });
        result = { events: events, source: source(dropped) };
        ends(self);
      }
      return copy(result);
    };
  }

  function copy(interaction) {
    var events = [];
    for (var i = 0; i < interaction.events.length; i++) {
      var e = interaction.events[i];
      events.push(e.field ? { t: e.t, type: e.type, field: e.field } : { t: e.t, type: e.type });
    }
    var s = interaction.source;
    return { events: events, source: source(s.droppedEvents) };
  }

  /* The session InsightCapture.finish() ends: the first one started, and once it has ended
   * the next one started. One started while it runs is a session of its own, which only its
   * handle finishes: it cannot take the place of the page's. */
  var owner = null;
  var ownerEnded = false;

  function ends(session) {
    if (session === owner) ownerEnded = true;
  }

  var kit = Object.freeze({
    version: VERSION,
    /* Begins a session and returns its handle, whose finish() ends it: sessionStart is t = 0.
     * Options: `fields` (CSS selector to field kind), `root` (where to listen, default
     * document). Never throws: without a document it records nothing. */
    start: function (options) {
      var session;
      try {
        session = Object.freeze(new Session(options, ends));
      } catch (ignored) {
        return Object.freeze({ finish: function () { return { source: source(0) }; } });
      }
      if (!owner || ownerEnded) {
        owner = session;
        ownerEnded = false;
      }
      return session;
    },
    /* Finishes the page's session (`owner`); without one (start() never called), an
     * interaction with no events: insightd reads it as nothing observed (`unknown`). */
    finish: function () {
      return owner ? owner.finish() : { source: source(0) };
    }
  });

  // Defined once: a second copy of the kit, or any later script, cannot replace it.
  try {
    Object.defineProperty(global, 'InsightCapture', { value: kit, enumerable: true });
  } catch (ignored) { /* already defined by the copy that loaded first */ }
})(typeof globalThis !== 'undefined' ? globalThis : this);
