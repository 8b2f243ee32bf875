// queue web UI: the theme the user chose (light or dark; none: follow the
// OS), set before the first paint, so a dark choice never flashes light.
// Loaded without defer from <head>; app.js offers the choice.
(function () {
  "use strict";
  try {
    var t = window.localStorage.getItem("queue.theme");
    if (t === "light" || t === "dark") document.documentElement.setAttribute("data-theme", t);
  } catch (e) { /* storage off: follow the OS */ }
})();
