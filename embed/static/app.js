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
    liveRefresh();
    selectAll();
    jobLive();
  });
})();
