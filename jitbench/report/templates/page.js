/* jitbench report pages: charts drawn when they come into view, sortable and filterable
   tables, case details, run picker, history selector, dark mode. Page state lives in the
   query string (?theme=dark&case=3&sort.measurements=4:asc…), so a link reopens the same
   view. Inline, allowed by its hash in the page's content-security policy. */
(function () {
  "use strict";
  var doc = document;
  var CONFIG = {
    displaylogo: false,
    responsive: true,
    toImageButtonOptions: { format: "png", scale: 2 },
  };

  // ---- state in the URL ------------------------------------------------------------
  var state = new URLSearchParams(window.location.search);
  function save() {
    var q = state.toString();
    try {
      history.replaceState(null, "", window.location.pathname + (q ? "?" + q : "") + window.location.hash);
    } catch (e) { /* some browsers refuse to rewrite file: URLs; the page still works */ }
  }
  function setState(key, value) {
    if (value === null || value === "") state.delete(key); else state.set(key, value);
    save();
  }

  // ---- theme -----------------------------------------------------------------------
  var darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  function themeChoice() {
    var t = state.get("theme");
    if (!t) { try { t = window.localStorage.getItem("jitbench-theme"); } catch (e) { t = null; } }
    return t === "dark" || t === "light" ? t : "auto";
  }
  function isDark() {
    var t = themeChoice();
    return t === "dark" || (t === "auto" && !!darkQuery && darkQuery.matches);
  }

  // ---- charts ----------------------------------------------------------------------
  var DARK = { bg: "#161b22", fg: "#d7dde5", grid: "#30363d", line: "#6e7681", note: "#aab4c0" };
  function themed(layout) {
    var l = JSON.parse(JSON.stringify(layout));
    if (!isDark()) return l;
    l.paper_bgcolor = DARK.bg;
    l.plot_bgcolor = DARK.bg;
    l.font = l.font || {};
    l.font.color = DARK.fg;
    Object.keys(l).forEach(function (k) {
      if (/^[xy]axis\d*$/.test(k)) {
        l[k].gridcolor = DARK.grid;
        l[k].linecolor = DARK.line;
        l[k].zerolinecolor = DARK.line;
      }
    });
    if (l.legend) l.legend.bgcolor = "rgba(0,0,0,0)";
    (l.annotations || []).forEach(function (a) {
      a.font = a.font || {};
      if (!a.font.color || /^#[0-4]{3,6}$/.test(a.font.color)) a.font.color = DARK.note;
      if (a.bgcolor) a.bgcolor = "rgba(22,27,34,0.85)";
    });
    (l.shapes || []).forEach(function (s) {
      if (s.line && (!s.line.color || /^#[0-4]{3,6}$/.test(s.line.color))) s.line.color = DARK.note;
    });
    if (l.coloraxis && l.coloraxis.colorbar) l.coloraxis.colorbar.outlinecolor = DARK.line;
    return l;
  }

  var figures = [];
  Array.prototype.forEach.call(doc.querySelectorAll("script.jb-figure"), function (el) {
    var target = doc.getElementById(el.getAttribute("data-target"));
    if (target) figures.push({ el: el, target: target, spec: null, drawn: false });
  });
  function shown(f) { return f.target.offsetParent !== null; }

  /* plotly.js is fetched when the first chart is about to be seen, not before: the text,
     banner and tables appear at once, and a page without charts never loads it. */
  var plotlySrc = doc.body.getAttribute("data-plotly");
  var plotlyState = "idle", waiting = [];
  function withPlotly(then) {
    if (typeof window.Plotly !== "undefined") { then(true); return; }
    waiting.push(then);
    if (plotlyState !== "idle") return;
    plotlyState = "loading";
    var script = doc.createElement("script");
    script.src = plotlySrc || "plotly.min.js";
    script.onload = function () { plotlyState = "ready"; flush(true); };
    script.onerror = function () { plotlyState = "failed"; flush(false); };
    doc.head.appendChild(script);
  }
  function flush(ok) {
    var todo = waiting;
    waiting = [];
    todo.forEach(function (then) { then(ok && typeof window.Plotly !== "undefined"); });
  }
  function draw(f) {
    if (f.drawn) return;
    f.drawn = true;
    withPlotly(function (ok) {
      if (!ok) {
        f.target.className += " plotly-missing";
        f.target.textContent = "Chart unavailable: " + (plotlySrc || "plotly.min.js") +
          " is missing next to this page.";
        return;
      }
      f.spec = JSON.parse(f.el.textContent);
      window.Plotly.newPlot(f.target, f.spec.data, themed(f.spec.layout), CONFIG);
    });
  }
  function redrawAll() {
    figures.forEach(function (f) {
      if (f.spec && f.target.classList.contains("js-plotly-plot"))
        window.Plotly.react(f.target, f.spec.data, themed(f.spec.layout), CONFIG);
    });
  }
  var observer = null;
  if ("IntersectionObserver" in window) {
    observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting) return;
        var f = figures.filter(function (g) { return g.target === e.target; })[0];
        if (f) { draw(f); observer.unobserve(f.target); }
      });
    }, { rootMargin: "0px" });
    figures.forEach(function (f) { observer.observe(f.target); });
  } else {
    figures.forEach(draw);
  }
  // Charts below the first screen: have plotly.js ready by the time the reader scrolls.
  if (plotlySrc && figures.length) {
    window.addEventListener("load", function () {
      var later = window.requestIdleCallback || function (f) { return setTimeout(f, 200); };
      later(function () { withPlotly(function () {}); }, { timeout: 1000 });
    });
  }
  /* Draw every chart that is on display now (screenshots, tests); returns how many
     charts are on display and how many of those are drawn (drawing may finish later). */
  window.jbRenderAll = function () {
    figures.forEach(function (f) { if (shown(f)) draw(f); });
    return window.jbCharts();
  };
  window.jbCharts = function () {
    var on = figures.filter(shown);
    return {
      total: figures.length,
      shown: on.length,
      drawn: on.filter(function (f) { return f.target.classList.contains("js-plotly-plot") ||
        f.target.classList.contains("plotly-missing"); }).length,
    };
  };

  function applyTheme() {
    doc.documentElement.setAttribute("data-theme", isDark() ? "dark" : "light");
    var button = doc.getElementById("theme-toggle");
    if (button) button.textContent = "theme: " + themeChoice();
    if (typeof window.Plotly !== "undefined") redrawAll();
  }
  var toggle = doc.getElementById("theme-toggle");
  if (toggle) {
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      var next = { auto: "dark", dark: "light", light: "auto" }[themeChoice()];
      try { window.localStorage.setItem("jitbench-theme", next); } catch (e) { /* private mode */ }
      setState("theme", next === "auto" ? null : next);
      applyTheme();
    });
  }
  if (darkQuery && darkQuery.addEventListener) darkQuery.addEventListener("change", applyTheme);
  applyTheme();

  // ---- tables: sort and filter ------------------------------------------------------
  function key(cell) {
    var v = cell ? cell.getAttribute("data-sort") : null;
    if (v === null || v === "") return [1, ""];
    var n = Number(v);
    return isNaN(n) ? [0, v.toLowerCase()] : [0, n];
  }
  function sortTable(table, col, asc) {
    var heads = table.tHead.rows[0].cells;
    for (var j = 0; j < heads.length; j++) heads[j].removeAttribute("aria-sort");
    if (!heads[col]) return;
    heads[col].setAttribute("aria-sort", asc ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var ka = key(a.cells[col]), kb = key(b.cells[col]);
      if (ka[0] !== kb[0]) return ka[0] - kb[0];   // blanks last either way
      if (ka[1] < kb[1]) return asc ? -1 : 1;
      if (ka[1] > kb[1]) return asc ? 1 : -1;
      return 0;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(doc.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      if (th.classList.contains("nosort")) return;
      th.tabIndex = 0;
      function click() {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        sortTable(table, col, asc);
        setState("sort." + table.id, col + ":" + (asc ? "asc" : "desc"));
      }
      th.addEventListener("click", click);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") click(); });
    });
    var saved = state.get("sort." + table.id);
    if (saved) {
      var parts = saved.split(":");
      sortTable(table, Number(parts[0]), parts[1] !== "desc");
    }
  });
  Array.prototype.forEach.call(doc.querySelectorAll("input.filter"), function (input) {
    var table = doc.getElementById(input.getAttribute("data-table"));
    if (!table) return;
    function apply() {
      var q = input.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        r.hidden = q !== "" && r.textContent.toLowerCase().indexOf(q) < 0;
      });
    }
    input.addEventListener("input", function () {
      apply();
      setState("q." + table.id, input.value);
    });
    var saved = state.get("q." + table.id);
    if (saved) { input.value = saved; apply(); }
  });

  // ---- one panel of a group shown at a time (case details, history workloads) -------
  function showPanel(group, id, scroll) {
    var found = null;
    Array.prototype.forEach.call(doc.querySelectorAll("[data-panel-group='" + group + "']"), function (p) {
      var on = p.getAttribute("data-panel") === id;
      p.hidden = !on;
      if (on) found = p;
    });
    Array.prototype.forEach.call(doc.querySelectorAll("[data-show-group='" + group + "']"), function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-show") === id ? "true" : "false");
    });
    var select = doc.querySelector("select[data-select-group='" + group + "']");
    if (select && found) select.value = id;
    if (found) {
      figures.forEach(function (f) { if (found.contains(f.target)) draw(f); });
      if (scroll) found.scrollIntoView({ block: "start" });
    }
    return found;
  }
  Array.prototype.forEach.call(doc.querySelectorAll("[data-show-group]"), function (b) {
    b.addEventListener("click", function (e) {
      e.preventDefault();
      var group = b.getAttribute("data-show-group"), id = b.getAttribute("data-show");
      if (showPanel(group, id, group === "case")) setState(group, id);
    });
  });
  Array.prototype.forEach.call(doc.querySelectorAll("select[data-select-group]"), function (s) {
    var group = s.getAttribute("data-select-group");
    s.addEventListener("change", function () {
      if (showPanel(group, s.value, false)) setState(group, s.value);
    });
    var saved = state.get(group);
    if (!(saved && showPanel(group, saved, false)) && s.getAttribute("data-default") !== null) {
      showPanel(group, s.getAttribute("data-default") || s.value, false);
    }
  });
  // Panels chosen by buttons (a case's details, the heatmap's mode) come back from the link.
  var groups = {};
  Array.prototype.forEach.call(doc.querySelectorAll("[data-show-group]"), function (b) {
    groups[b.getAttribute("data-show-group")] = true;
  });
  Object.keys(groups).forEach(function (group) {
    var saved = state.get(group);
    if (saved) showPanel(group, saved, group === "case");
  });

  // ---- index: pick two runs to compare -----------------------------------------------
  var picker = doc.getElementById("pick-bar");
  if (picker) {
    var pages = {};
    var pagesEl = doc.getElementById("compare-pages");
    if (pagesEl) pages = JSON.parse(pagesEl.textContent);
    var boxes = Array.prototype.slice.call(doc.querySelectorAll("input.pick"));
    var order = [];
    function refresh() {
      var chosen = order.map(function (id) {
        return boxes.filter(function (b) { return b.value === id; })[0];
      }).filter(Boolean);
      chosen.sort(function (a, b) { return a.getAttribute("data-started") < b.getAttribute("data-started") ? -1 : 1; });
      picker.hidden = chosen.length !== 2;
      setState("pick", order.join(",") || null);
      if (chosen.length !== 2) return;
      var base = chosen[0], head = chosen[1];
      doc.getElementById("pick-names").textContent =
        base.getAttribute("data-name") + " → " + head.getAttribute("data-name");
      var page = pages[base.value + "\n" + head.value];
      var link = doc.getElementById("pick-link");
      link.hidden = !page;
      if (page) link.setAttribute("href", page);
      doc.getElementById("pick-command").textContent = "jitbench report " +
        base.getAttribute("data-json") + " " + head.getAttribute("data-json") + " --out " +
        (doc.body.getAttribute("data-out") || ".");
    }
    boxes.forEach(function (b) {
      b.addEventListener("change", function () {
        order = order.filter(function (id) { return id !== b.value; });
        if (b.checked) order.push(b.value);
        while (order.length > 2) {
          var drop = order.shift();
          boxes.forEach(function (x) { if (x.value === drop) x.checked = false; });
        }
        refresh();
      });
    });
    (state.get("pick") || "").split(",").forEach(function (id) {
      boxes.forEach(function (b) { if (id && b.value === id) { b.checked = true; order.push(id); } });
    });
    order = order.slice(-2);
    refresh();
  }
})();
