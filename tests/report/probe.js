// Injected by test_browser.py before anything else in a report page; see that file.
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push("error: " + (e.message || (e.target && (e.target.src || e.target.href)) || e));
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    errors.push("rejection: " + e.reason);
  });
  var original = console.error;
  console.error = function () {
    errors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
  function firstKeys(table, col) {
    var out = [];
    for (var i = 0; i < table.tBodies[0].rows.length && out.length < 5; i++) {
      var r = table.tBodies[0].rows[i];
      if (!r.hidden) { out.push(r.cells[col].getAttribute("data-v")); }
    }
    return out;
  }
  window.addEventListener("load", function () {
    var out = {errors: errors, figures: [], tables: {}, resources: 0, interaction: null};
    try {
      out.resources = performance.getEntriesByType("resource").length;
      document.querySelectorAll("figure").forEach(function (fig) {
        var svg = fig.querySelector("svg");
        var r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
        var box = svg ? svg.getBBox() : {width: 0, height: 0};
        out.figures.push({id: fig.id, width: r.width, height: r.height,
                          drawn_width: box.width, drawn_height: box.height,
                          shapes: svg ? svg.querySelectorAll(
                            "path, use, rect, line, polyline, circle, text").length : 0});
      });
      document.querySelectorAll("table[id]").forEach(function (t) {
        out.tables[t.id] = t.tBodies[0].rows.length;
      });
      var points = document.getElementById("points-table");
      if (points) {
        var heads = points.tHead.rows[0].cells, col = -1;
        for (var i = 0; i < heads.length; i++) {
          if (heads[i].title === "total_time_s") { col = i; }
        }
        heads[col].click();
        var ascending = firstKeys(points, col);
        heads[col].click();
        var descending = firstKeys(points, col);
        var only = document.getElementById("points-table-only");
        only.value = "error";
        only.dispatchEvent(new Event("change"));
        var shown = 0;
        Array.prototype.forEach.call(points.tBodies[0].rows, function (r) {
          shown += r.hidden ? 0 : 1;
        });
        out.interaction = {ascending: ascending, descending: descending, errors_shown: shown,
                           count: document.getElementById("points-table-count").textContent};
        only.value = "all";
        only.dispatchEvent(new Event("change"));
      }
    } catch (e) {
      errors.push("probe: " + e);
    }
    var pre = document.createElement("pre");
    pre.id = "__probe";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  });
})();
