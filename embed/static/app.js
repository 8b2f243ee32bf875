// queue web UI: optional niceties. Every page works without this file
// (and theme.js, which only applies a stored theme before the first paint).
// - Live pages (<body data-refresh="N">): an event stream (/api/events)
//   makes the page re-read itself, at most about once a second, and swap
//   its [data-live][id] regions; a poll every N seconds backs it up. A bar
//   says when the page last updated and can pause it; a banner (role=alert)
//   says when the server cannot be reached or the page cannot be refreshed.
// - Times (<time data-abs> beside <span data-rel>): UTC as the server wrote
//   them, or the browser's zone, one choice for the whole UI; the relative
//   texts are kept current.
// - Theme: light, dark or the OS's (theme.js applies it early).
// - Tables: each cell gets its column's name (data-label) so narrow
//   screens can show rows as cards; "select all" boxes; buttons marked
//   data-needs-selection are disabled while no row is ticked.
// - A job's running attempt: its log and progress (jobLive).
(function () {
  "use strict";

  var THEME_KEY = "queue.theme", TZ_KEY = "queue.tz", PAUSE_KEY = "queue.live.paused";

  function store(kind) {
    try {
      var s = window[kind];
      var probe = "queue.probe";
      s.setItem(probe, "1");
      s.removeItem(probe);
      return s;
    } catch (e) {
      return null; // storage off (privacy settings): choices last for this page only
    }
  }
  var local = store("localStorage"), session = store("sessionStorage");
  function get(s, k) { return s ? s.getItem(k) : null; }
  function put(s, k, v) {
    if (!s) return;
    if (v === null || v === "") s.removeItem(k); else s.setItem(k, v);
  }

  // ---- Time ----

  // skew is the server's clock minus the browser's, from the page's
  // data-now, so relative times agree with the server's even when the
  // browser's clock is off. Under 10 s it is the page's way here (render,
  // network), not a clock: ignored.
  var skew = 0;
  function learnNow(iso) {
    var t = Date.parse(iso || "");
    if (isNaN(t)) return;
    skew = t - Date.now();
    if (Math.abs(skew) < 10000) skew = 0;
  }
  function now() { return Date.now() + skew; }

  function browserTime() { return get(local, TZ_KEY) === "local"; }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // zoneName is the short name of the browser's zone at d: "CET", "EST";
  // en-US names American zones, en-GB European ones, else "GMT+5:30".
  var zoneFormats = null;
  function zoneName(d) {
    if (!window.Intl || !Intl.DateTimeFormat) return "";
    if (!zoneFormats) {
      zoneFormats = ["en-US", "en-GB"].map(function (l) {
        try { return new Intl.DateTimeFormat(l, { timeZoneName: "short" }); } catch (e) { return null; }
      }).filter(Boolean);
    }
    var first = "";
    for (var i = 0; i < zoneFormats.length; i++) {
      var part = zoneFormats[i].formatToParts(d).filter(function (p) { return p.type === "timeZoneName"; })[0];
      var name = part ? part.value : "";
      if (!first) first = name;
      if (name && !/^(GMT|UTC)[+-−]/.test(name)) return name;
    }
    return first;
  }
  function zoneID() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return ""; }
  }

  // absText writes d as the server does ("2026-12-02 05:10:03 UTC"), in
  // UTC or, when chosen, the browser's zone ("2026-12-02 06:10:03 CET").
  function absText(d) {
    if (!browserTime()) {
      return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
        pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds()) + " UTC";
    }
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + " " + zoneName(d);
  }
  // clockText is the time of day of d in the chosen zone: "05:31:02 UTC".
  function clockText(d) {
    var s = absText(d);
    return s.substring(11);
  }

  // relText says how far t is from the server's now, rounded as the
  // server's relTime does (ui/pages_view.go): "just now", "40 s ago",
  // "in 12 min", "1 h 58 min ago", "in 3 d 4 h".
  function relText(t) {
    var ms = now() - t, future = ms < 0;
    if (future) ms = -ms;
    var secs = Math.round(ms / 1000), mins = Math.round(ms / 60000), hours = Math.round(ms / 3600000), s;
    if (secs < 2) return "just now";
    if (secs < 60) s = secs + " s";
    else if (mins < 60) s = mins + " min";
    else if (mins < 24 * 60) s = two(Math.floor(mins / 60), "h", mins % 60, "min");
    else s = two(Math.floor(hours / 24), "d", hours % 24, "h");
    return future ? "in " + s : s + " ago";
  }
  function two(big, bu, small, su) { return small ? big + " " + bu + " " + small + " " + su : big + " " + bu; }

  // showTimes writes each time[data-abs] under root in the chosen zone
  // (the server's UTC text is kept in data-utc to go back to it).
  function showTimes(root) {
    root.querySelectorAll("time[data-abs]").forEach(function (el) {
      if (!el.hasAttribute("data-utc")) el.setAttribute("data-utc", el.textContent);
      var t = Date.parse(el.getAttribute("datetime") || "");
      if (isNaN(t)) return;
      el.textContent = browserTime() ? absText(new Date(t)) : el.getAttribute("data-utc");
    });
  }
  // tickRel keeps every [data-rel] beside a time current.
  function tickRel(root) {
    root.querySelectorAll("[data-rel]").forEach(function (el) {
      var box = el.closest(".when") || el.parentNode;
      var time = box && box.querySelector("time[datetime]");
      var t = time ? Date.parse(time.getAttribute("datetime")) : NaN;
      if (isNaN(t)) return;
      var text = relText(t);
      el.textContent = /^\(/.test(el.textContent) ? "(" + text + ")" : text;
    });
  }
  function zoneNote() {
    var note = document.querySelector("[data-tz-note]");
    if (!note) return;
    if (browserTime()) {
      var id = zoneID(), abbr = zoneName(new Date());
      note.textContent = "Times are shown in your browser's time zone" + (id ? ", " + id : "") + (abbr && abbr !== id ? " (" + abbr + ")" : "") + ".";
    } else {
      note.textContent = "Times are shown in UTC.";
    }
  }

  // ---- Preferences: theme and time zone ----

  function prefs() {
    var box = document.querySelector("[data-prefs]");
    if (!box) return;
    var theme = box.querySelector("[data-pref-theme]"), tz = box.querySelector("[data-pref-tz]");
    var media = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
    if (theme) {
      theme.value = document.documentElement.getAttribute("data-theme") || "";
      theme.addEventListener("change", function () {
        put(local, THEME_KEY, theme.value);
        if (theme.value) document.documentElement.setAttribute("data-theme", theme.value);
        else document.documentElement.removeAttribute("data-theme");
      });
      var sys = theme.querySelector('option[value=""]');
      var name = function () { if (sys) sys.textContent = "System (" + (media && media.matches ? "dark" : "light") + ")"; };
      name();
      if (media && media.addEventListener) media.addEventListener("change", name);
    }
    if (tz) {
      var id = zoneID(), opt = tz.querySelector('option[value="local"]');
      if (opt && id) opt.title = id;
      tz.value = browserTime() ? "local" : "utc";
      tz.addEventListener("change", function () {
        put(local, TZ_KEY, tz.value === "local" ? "local" : "");
        showTimes(document);
        tickRel(document);
        zoneNote();
        if (live.status) live.status();
      });
    }
    box.hidden = false;
  }

  // ---- Tables ----

  // labelCells gives each body cell of the tables under root its column's
  // header text (data-label), which narrow screens show as the card's labels.
  function labelCells(root) {
    var tables = [].slice.call(root.querySelectorAll("table.table"));
    var own = root.closest ? root.closest("table.table") : null;
    if (own) tables.push(own);
    tables.forEach(function (table) {
      var head = table.tHead && table.tHead.rows[0];
      if (!head) return;
      var names = [];
      [].forEach.call(head.cells, function (th) {
        var name = th.textContent.replace(/[▲▼]/g, "").replace(/\s+/g, " ").trim();
        for (var i = 0; i < (th.colSpan || 1); i++) names.push(name);
      });
      [].forEach.call(table.tBodies, function (tb) {
        [].forEach.call(tb.rows, function (tr) {
          var col = 0;
          [].forEach.call(tr.cells, function (td) {
            if (names[col] && !td.hasAttribute("data-label")) td.setAttribute("data-label", names[col]);
            col += td.colSpan || 1;
          });
        });
      });
    });
  }

  function ticked(boxes) {
    var n = 0;
    boxes.forEach(function (b) { if (b.checked) n++; });
    return n;
  }
  function rowBoxes(scope) {
    if (!scope) return [];
    var list = scope.elements ? [].slice.call(scope.elements) : [].slice.call(scope.querySelectorAll("input"));
    return list.filter(function (e) { return e.type === "checkbox" && e.name === "id"; });
  }

  // selection shows the "select all" boxes of tables with rows to tick,
  // sets their state from the rows, and disables the buttons marked
  // data-needs-selection while none of the rows of their form (or
  // table) is ticked.
  function selection() {
    document.querySelectorAll("input[data-select-all]").forEach(function (all) {
      var table = all.closest("table");
      var boxes = table ? [].slice.call(table.querySelectorAll("tbody input[type=checkbox][name=id]")) : [];
      all.hidden = !boxes.length;
      if (!boxes.length) return;
      var n = ticked(boxes);
      all.checked = n === boxes.length;
      all.indeterminate = n > 0 && n < boxes.length;
    });
    document.querySelectorAll("[data-needs-selection]").forEach(function (b) {
      var scope = b.form || b.closest("table");
      var none = ticked(rowBoxes(scope)) === 0;
      b.disabled = none;
      if (none) b.setAttribute("title", "Tick one or more rows first");
      else if (b.getAttribute("title") === "Tick one or more rows first") b.removeAttribute("title");
    });
  }
  document.addEventListener("change", function (e) {
    var el = e.target;
    if (el.matches && el.matches("input[data-select-all]")) {
      var table = el.closest("table");
      if (table) table.querySelectorAll("tbody input[type=checkbox][name=id]").forEach(function (b) { b.checked = el.checked; });
    }
    if (el.type === "checkbox") selection();
  });

  // enhance does what the page's static parts need, for root (the
  // document, or a region just swapped in).
  function enhance(root) {
    showTimes(root);
    labelCells(root);
    selection();
  }

  // ---- Live pages ----

  // The events of the stream (/api/events); any of them may change what
  // a live page shows.
  var EVENTS = ["job.submitted", "job.started", "job.succeeded", "job.retry_scheduled", "job.dead_lettered", "job.cancelled",
    "job.cancel_requested", "job.snoozed", "job.debounced", "job.expired", "job.lease_lost", "job.rescheduled",
    "job.reprioritized", "job.progress", "job.deleted", "dlq.replayed", "dlq.purged", "queue.paused", "queue.resumed",
    "settings.changed", "worker.changed", "workflow.submitted", "workflow.blocked", "workflow.running",
    "workflow.done", "workflow.cancelled", "message"];

  var live = {};

  function liveUpdates() {
    var secs = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
    var bar = document.querySelector("[data-livebar]");
    if (!secs || !bar || !window.fetch || !window.DOMParser) return;
    var text = bar.querySelector("[data-live-status]"), button = bar.querySelector("[data-live-pause]");
    var banner = document.querySelector("[data-down-banner]");
    var S = {
      paused: get(session, PAUSE_KEY) === "1",
      es: null, open: false, retry: 2000, reconnect: 0,
      timer: 0, inflight: false, again: false, lastStart: 0, lastOK: new Date(now()),
      stale: false, held: "", down: null, why: "", watch: 0, checking: false, gone: false
    };
    document.querySelectorAll("[data-nojs-live]").forEach(function (el) { el.hidden = true; });

    // streamURL: the page's own stream (data-events), else every event,
    // or its queue's when the page is filtered by one.
    function streamURL() {
      var el = document.querySelector("[data-events]");
      if (el && el.getAttribute("data-events")) return el.getAttribute("data-events");
      var q = new URLSearchParams(window.location.search).get("queue");
      return "/api/events" + (q ? "?queue=" + encodeURIComponent(q) : "");
    }

    function status() {
      var at = clockText(S.lastOK), s;
      bar.classList.toggle("is-paused", S.paused);
      bar.classList.toggle("is-down", !!S.down && !S.paused);
      if (S.paused) s = "Paused · showing " + at;
      else if (S.down) s = "Not updating · last updated " + at;
      else if (S.held) s = "Live · updates held " + S.held + " · updated " + at;
      else if (S.open) s = "Live · updated " + at;
      else s = "Live (every " + secs + " s) · updated " + at;
      text.textContent = s;
      button.setAttribute("aria-pressed", S.paused ? "true" : "false");
      if (S.down && !S.paused) {
        var since = clockText(S.down);
        banner.textContent = S.why === "gone" ?
          "What this page shows no longer exists (the server answered 404 at " + since + "); updates have stopped." :
          S.why === "auth" ?
          "Your session has ended (the server refused this page at " + since + "); reload to log in again. What you see may be out of date." :
          S.why ? "The server could not refresh this page since " + since + " (it answered " + S.why + "); what you see may be out of date." :
          "Cannot reach the server since " + since + "; what you see may be out of date.";
        banner.hidden = false;
      } else {
        banner.hidden = true;
      }
    }
    live.status = status;

    // timed is fetch that gives up after ms.
    function timed(url, opts, ms) {
      var ctl = window.AbortController ? new AbortController() : null;
      opts.credentials = "same-origin";
      opts.cache = "no-store";
      if (ctl) opts.signal = ctl.signal;
      window.setTimeout(function () { if (ctl) ctl.abort(); }, ms);
      return fetch(url, opts);
    }

    function trouble(why) {
      if (!S.down) S.down = new Date(now());
      S.why = why;
      status();
      planCheck();
    }

    // check asks the server whether it is there (any answer will do),
    // every 3 s while the stream is down or the page cannot be refreshed;
    // when it answers again, the page is refreshed (which lifts the banner).
    function check() {
      if (S.checking || S.paused || S.gone) return;
      S.checking = true;
      timed("/readyz", { method: "HEAD" }, 3000)
        .then(function () {
          if (S.down) schedule(true);
          if (!S.es && !S.reconnect) connect(); // a refused stream waits for its backoff
        }, function () {
          trouble("");
        })
        .then(function () {
          S.checking = false;
          planCheck();
        });
    }
    function planCheck() {
      window.clearTimeout(S.watch);
      S.watch = 0;
      if (!S.paused && !S.gone && !document.hidden && (S.down || !S.open)) S.watch = window.setTimeout(check, 3000);
    }

    function connect() {
      if (S.paused || S.gone || S.es || !window.EventSource) return;
      window.clearTimeout(S.reconnect);
      S.reconnect = 0;
      var es = new EventSource(streamURL());
      S.es = es;
      es.onopen = function () {
        S.open = true;
        S.retry = 2000;
        if (S.down || S.stale) schedule(true); // missed events while away
        status();
      };
      es.onerror = function () {
        S.open = false;
        if (es.readyState === 2) { // closed for good (the stream was refused): a new one later
          if (S.es === es) S.es = null;
          later(S.retry);
          S.retry = Math.min(S.retry * 2, 60000);
        }
        status();
        check();
      };
      var onEvent = function () { schedule(false); };
      EVENTS.forEach(function (t) { es.addEventListener(t, onEvent); });
      es.addEventListener("overflow", function () { // the stream fell behind: a fresh one soon, and a refresh
        es.close();
        if (S.es === es) S.es = null;
        S.open = false;
        later(1000 + Math.random() * 2000); // a burst (a bulk action) would overflow a stream opened at once
        schedule(false);
      });
    }
    // later opens a new stream after ms: the only way a refused or
    // overflowed stream comes back, so neither can loop.
    function later(ms) {
      window.clearTimeout(S.reconnect);
      S.reconnect = window.setTimeout(function () { S.reconnect = 0; connect(); }, ms);
    }
    function disconnect() {
      if (S.es) S.es.close();
      S.es = null;
      S.open = false;
      window.clearTimeout(S.reconnect);
      S.reconnect = 0;
    }

    // hold says why the regions must not be swapped now: the user is
    // typing in a form inside one, has ticked rows in one, or moves
    // through one with the keyboard (a swap would drop the focus; a mouse
    // user's focus, not :focus-visible, does not hold it).
    function hold() {
      var a = document.activeElement;
      if (a && a.closest && a.closest("[data-live]")) {
        if (a.matches("input:not([type=checkbox]):not([type=radio]), select, textarea")) return "while you type";
        if (focusVisible(a)) return "while the keyboard focus is in them";
      }
      var rows = document.querySelectorAll("[data-live] input[type=checkbox][name=id]");
      for (var i = 0; i < rows.length; i++) if (rows[i].checked) return "while rows are ticked";
      return "";
    }

    function focusVisible(el) {
      try { return el.matches(":focus-visible"); } catch (e) { return true; }
    }

    // schedule plans a refresh: at once when none ran this past second,
    // else one second after the last began; events meanwhile join it.
    function schedule(soon) {
      if (S.paused || S.gone || S.timer) return;
      var wait = soon ? 0 : Math.max(150, S.lastStart + 1000 - Date.now());
      S.timer = window.setTimeout(function () { S.timer = 0; refresh(); }, wait);
    }

    function refresh() {
      if (S.paused || S.gone) return;
      if (S.inflight) { S.again = true; return; }
      if (document.hidden) { S.stale = true; return; }
      var why = hold(); // no read while it could not be shown
      if (why) { S.held = why; S.stale = true; status(); return; }
      S.inflight = true;
      S.lastStart = Date.now();
      timed(window.location.href, { headers: { "Accept": "text/html", "X-Queue-Live": "1" }, redirect: "manual" }, 5000)
        .then(function (r) {
          // A page that answers 400 or 409 is still the page (its form
          // with the message): shown, not a server problem.
          if (r.ok || (r.status >= 400 && r.status < 500 && [401, 403, 404, 429].indexOf(r.status) < 0)) return r.text();
          var err = new Error("status " + r.status);
          err.why = r.status === 401 || r.status === 403 || r.type === "opaqueredirect" ? "auth" : r.status === 404 ? "gone" : String(r.status);
          throw err;
        })
        .then(function (html) {
          if (S.paused) return;
          swap(html);
          S.lastOK = new Date(now());
          S.down = null;
          S.why = "";
        }, function (err) {
          if (err && err.why === "gone") { // deleted meanwhile: nothing more to follow
            S.gone = true;
            disconnect();
          }
          if (err && err.why) trouble(err.why);
          else check(); // no answer: is the server gone?
        })
        .then(function () {
          S.inflight = false;
          status();
          planCheck();
          if (S.again) { S.again = false; schedule(false); }
        });
    }

    function swap(html) {
      var why = hold();
      S.held = why;
      if (why) { S.stale = true; return; }
      S.stale = false;
      var doc = new DOMParser().parseFromString(html, "text/html");
      learnNow(doc.body && doc.body.getAttribute("data-now"));
      document.querySelectorAll("[data-live][id]").forEach(function (el) {
        var fresh = doc.getElementById(el.id);
        if (!fresh) return;
        var open = [].map.call(el.querySelectorAll("details"), function (d) { return d.open; });
        var node = document.importNode(fresh, true);
        el.replaceWith(node);
        var ds = node.querySelectorAll("details");
        if (ds.length === open.length) [].forEach.call(ds, function (d, i) { d.open = open[i]; });
        enhance(node);
      });
      window.dispatchEvent(new CustomEvent("queue:live-swap"));
    }

    function setPaused(p) {
      S.paused = p;
      put(session, PAUSE_KEY, p ? "1" : "");
      window.clearTimeout(S.timer);
      S.timer = 0;
      if (p) {
        disconnect();
        window.clearTimeout(S.watch);
      } else {
        connect();
        schedule(true);
      }
      status();
    }
    button.addEventListener("click", function () { setPaused(!S.paused); });

    // A refresh held back (hidden tab, typing, ticked rows) runs once the
    // reason is gone.
    var resume = function () { if (S.stale && !S.paused && !hold()) { S.held = ""; schedule(false); } };
    // A hidden tab lets go of its stream: a browser holds at most six
    // connections to a server over HTTP/1.1, and each open tab's stream
    // would take one. Shown again, it catches up.
    document.addEventListener("visibilitychange", function () {
      if (document.hidden) {
        disconnect();
        window.clearTimeout(S.watch);
        return;
      }
      if (S.paused) return;
      connect();
      S.stale = true;
      resume();
    });
    document.addEventListener("focusout", function () { window.setTimeout(resume, 0); });
    document.addEventListener("change", resume);
    window.addEventListener("pagehide", disconnect);
    window.addEventListener("pageshow", function (e) { if (e.persisted && !S.paused) { connect(); schedule(true); } });

    window.setInterval(function () { if (!S.paused) schedule(false); }, secs * 1000);
    bar.hidden = false;
    if (!document.hidden) connect();
    status();
  }

  // ---- A job's running attempt ----

  // The job page of a running attempt (#job-live with data-log-follow):
  // follows its log over Server-Sent Events (GET /api/jobs/{id}/log?follow=true,
  // the page's session cookie is enough) and appends each line, and reads
  // the job each second to move the progress bar, until the attempt ends.
  // Lines are set as text, never as HTML.
  function jobLive() {
    var box = document.getElementById("job-live");
    var follow = box && box.getAttribute("data-log-follow");
    if (!follow || !window.EventSource || !window.fetch) return;
    var jobURL = box.getAttribute("data-job-url");
    var table = document.getElementById("job-log");
    var body = table.querySelector("tbody");
    var bar = document.getElementById("job-progress");
    var text = document.getElementById("job-progress-text");
    var status = document.getElementById("job-live-status");
    var es = new EventSource(follow);
    var timer = 0;
    function cell(row, cls, value) {
      var td = document.createElement("td");
      td.className = cls;
      td.textContent = value;
      row.appendChild(td);
    }
    es.addEventListener("job.log", function (e) {
      var d = JSON.parse(e.data);
      var row = document.createElement("tr");
      row.className = "log-" + d.stream;
      cell(row, "nowrap mono log-at", (d.at || "").substring(11, 23));
      cell(row, "log-stream", d.stream);
      cell(row, "log-line mono", d.line);
      body.appendChild(row);
      labelCells(table);
      table.hidden = false;
    });
    function progress() {
      fetch(jobURL, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (j) {
          if (!j) return;
          if (typeof j.progress === "number") {
            bar.value = j.progress;
            bar.textContent = j.progress + "%";
            text.textContent = j.progress + "%" + (j.progress_message ? " · " + j.progress_message : "");
          }
          if (j.status !== "processing") window.clearInterval(timer);
        })
        .catch(function () {});
    }
    timer = window.setInterval(progress, 1000);
    es.addEventListener("end", function (e) {
      es.close();
      window.clearInterval(timer);
      progress();
      var d = JSON.parse(e.data);
      if (status) status.textContent = "Attempt " + d.attempt + " is over (" + d.status + "); reload for the whole page.";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    learnNow(document.body.getAttribute("data-now"));
    prefs();
    zoneNote();
    enhance(document);
    liveUpdates();
    jobLive();
    window.setInterval(function () { tickRel(document); }, 30000);
  });
  // A page restored from the back/forward cache keeps its ticks: the
  // buttons follow them.
  window.addEventListener("pageshow", selection);
})();
