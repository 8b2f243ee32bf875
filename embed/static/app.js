// queue web UI: optional niceties. Every page works without this file.
// - Pages whose <body> has data-refresh="N" reload their [data-live]
//   regions every N seconds from the same URL (same origin, same cookies),
//   while the tab is visible and no form inside the region has focus.
// - A "select all" checkbox for tables of selectable rows.
(function () {
  "use strict";

  function liveRefresh() {
    var secs = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
    if (!secs || !window.fetch || !window.DOMParser) return;
    var status = document.querySelector("[data-live-status]");
    var busy = false;
    function tick() {
      if (busy || document.hidden) return;
      var active = document.activeElement;
      if (active && active.closest && active.closest("[data-live] form")) return;
      busy = true;
      fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" }, redirect: "manual" })
        .then(function (r) {
          if (!r.ok) throw new Error("status " + r.status);
          return r.text();
        })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          document.querySelectorAll("[data-live][id]").forEach(function (el) {
            var fresh = doc.getElementById(el.id);
            if (fresh) el.replaceWith(document.importNode(fresh, true));
          });
          if (status) status.textContent = "Live: updated " + new Date().toLocaleTimeString();
        })
        .catch(function () {
          if (status) status.textContent = "Live refresh paused (server unreachable); reload to retry.";
        })
        .then(function () { busy = false; });
    }
    if (status) status.textContent = "Live: refreshing every " + secs + " s";
    window.setInterval(tick, secs * 1000);
  }

  function selectAll() {
    document.querySelectorAll("input[data-select-all]").forEach(function (all) {
      var table = all.closest("table");
      if (!table) return;
      var boxes = function () { return table.querySelectorAll("tbody input[type=checkbox][name=id]"); };
      if (!boxes().length) return;
      all.hidden = false;
      all.addEventListener("change", function () {
        boxes().forEach(function (b) { b.checked = all.checked; });
      });
      table.addEventListener("change", function (e) {
        if (e.target === all) return;
        var list = boxes(), n = 0;
        list.forEach(function (b) { if (b.checked) n++; });
        all.checked = n === list.length;
        all.indeterminate = n > 0 && n < list.length;
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    liveRefresh();
    selectAll();
  });
})();
