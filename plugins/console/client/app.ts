/**
 * The console's client, served as /-/console/app.js: the admin token (asked for once,
 * kept in sessionStorage, sent as `Authorization: Bearer` on every API call), the tabs, and
 * what every panel gets as `ui`:
 *   ui.api(method, path, body?)  -> parsed JSON; throws Error(message of the error body)
 *   ui.el(tag, attrs?, ...children), ui.fill(node, ...children), ui.table(columns, rows),
 *   ui.barChart(points, options), ui.rankChart(points, options)
 *   ui.section(title), ui.message(text, kind), ui.button(label, onClick, attrs?)
 *   ui.pager(page, onChange), ui.fmt.{number, cost, seconds, date}
 * Paths are relative to /-/ ("queues" is /-/queues). Data is put in the page as text, never
 * as HTML. No template literals: this file sits inside one.
 */
export const APP_JS = String.raw`(function () {
  "use strict";
  var TOKEN_KEY = "gateway-console-token";
  var panels = [];
  var current = null;

  function token() { return sessionStorage.getItem(TOKEN_KEY); }

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      var value = attrs[name];
      if (value === undefined || value === null || value === false) return;
      if (name.indexOf("on") === 0) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    });
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function append(node, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) return child.forEach(function (c) { append(node, c); });
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  /** node's children replaced by these, skipping null like el() (replaceChildren writes "null"). */
  function fill(node) {
    var children = Array.prototype.slice.call(arguments, 1);
    node.textContent = "";
    append(node, children);
    return node;
  }

  function ApiError(message, status) { this.message = message; this.status = status; }
  ApiError.prototype = Object.create(Error.prototype);

  function api(method, path, body) {
    var headers = { accept: "application/json" };
    var t = token();
    if (t) headers.authorization = "Bearer " + t;
    // Never from the browser cache: an admin view must show the state now.
    var init = { method: method, headers: headers, cache: "no-store" };
    if (body !== undefined) { headers["content-type"] = "application/json"; init.body = JSON.stringify(body); }
    return fetch(path, init).then(function (response) {
      return response.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (response.status === 401) { signIn("The gateway refused the admin token (401); enter it again."); }
        if (!response.ok) {
          var message = data && data.error && data.error.message ? data.error.message : "HTTP " + response.status;
          throw new ApiError(method + " /-/" + path + ": " + message, response.status);
        }
        return data;
      });
    });
  }

  var fmt = {
    number: function (n) { return n === undefined || n === null ? "" : Number(n).toLocaleString("en-US", { maximumFractionDigits: 4 }); },
    seconds: function (s) {
      if (s === null || s === undefined) return "-";
      if (s < 120) return s + " s";
      if (s < 7200) return Math.round(s / 60) + " min";
      return Math.round(s / 360) / 10 + " h";
    },
    /** Money: up to six decimals, so a fraction of a cent still shows (0.000078). */
    cost: function (n) { return n === undefined || n === null ? "" : Number(n).toLocaleString("en-US", { maximumFractionDigits: 6 }); },
    date: function (text) { return text ? String(text).replace("T", " ").replace(/\.\d+Z$/, "Z") : ""; },
  };

  function message(text, kind) { return el("p", { class: "message " + (kind || "info"), role: kind === "error" ? "alert" : "status" }, text); }
  function section(title) { return el("section", { class: "card" }, el("h2", {}, title)); }
  function button(label, onClick, attrs) {
    var b = el("button", Object.assign({ type: "button" }, attrs || {}), label);
    b.addEventListener("click", function () {
      b.disabled = true;
      Promise.resolve().then(onClick).catch(function (e) { b.parentNode && b.parentNode.appendChild(message(e.message, "error")); }).then(function () { b.disabled = false; });
    });
    return b;
  }

  /** columns: [{ title, value(row) -> text or node, numeric? }] */
  function table(columns, rows, attrs) {
    if (rows.length === 0) return message("Nothing here.", "empty");
    return el("table", attrs || {},
      el("thead", {}, el("tr", {}, columns.map(function (c) { return el("th", { class: c.numeric ? "num" : null }, c.title); }))),
      el("tbody", {}, rows.map(function (row) {
        return el("tr", row.__attrs || {}, columns.map(function (c) { return el("td", { class: c.numeric ? "num" : null }, c.value(row)); }));
      })));
  }

  /** A page of a listing: "Previous" / "Next" and where we are. page: { total, limit, offset }. */
  function pager(page, onChange) {
    var last = page.offset + page.limit >= page.total;
    return el("div", { class: "pager" },
      button("Previous", function () { return onChange(Math.max(0, page.offset - page.limit)); }, { disabled: page.offset === 0 }),
      el("span", {}, page.total === 0 ? "0" : (page.offset + 1) + "-" + Math.min(page.total, page.offset + page.limit) + " of " + page.total),
      button("Next", function () { return onChange(page.offset + page.limit); }, { disabled: last }));
  }

  var SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }
  /** An axis label: two significant digits below 1 (0.00023), else at most two decimals. */
  function tick(v) { return v === 0 ? "0" : v < 1 ? String(Number(v.toPrecision(2))) : fmt.number(Math.round(v * 100) / 100); }
  /** Bars with a label under each: points [{ label, value }], options { title, unit, id }. */
  function barChart(points, options) {
    var width = 760, height = 220, left = 56, bottom = 40, top = 16;
    // Scaled to the largest value however small (costs are fractions of a cent); 1 when all are 0.
    var max = Math.max.apply(null, points.map(function (p) { return p.value; }).concat([0]));
    if (!(max > 0)) max = 1;
    var chart = svg("svg", { viewBox: "0 0 " + width + " " + height, class: "chart", role: "img", "aria-label": options.title, "data-chart": options.id || "" });
    var plotW = width - left - 8, plotH = height - top - bottom;
    var step = plotW / Math.max(points.length, 1);
    chart.appendChild(svg("line", { x1: left, y1: top + plotH, x2: width - 8, y2: top + plotH, class: "axis" }));
    [0, 0.5, 1].forEach(function (f) {
      var y = top + plotH - f * plotH;
      chart.appendChild(svg("text", { x: left - 6, y: y + 4, "text-anchor": "end", class: "tick" }, tick(max * f)));
    });
    var every = Math.ceil(points.length / 12);
    points.forEach(function (p, i) {
      var h = (p.value / max) * plotH;
      var bar = svg("rect", { x: left + i * step + step * 0.15, y: top + plotH - h, width: Math.max(step * 0.7, 1), height: Math.max(h, 0), class: "bar", "data-label": p.label, "data-value": p.value });
      bar.appendChild(svg("title", {}, p.label + ": " + fmt.number(p.value) + (options.unit ? " " + options.unit : "")));
      chart.appendChild(bar);
      if (i % every === 0) chart.appendChild(svg("text", { x: left + i * step + step / 2, y: height - bottom + 16, "text-anchor": "middle", class: "tick" }, p.label));
    });
    // The caption above its chart: below, it read as the title of the next one.
    return el("figure", {}, el("figcaption", {}, options.title), chart);
  }
  /**
   * One row per point, its label left of its bar and its value right of it: for named groups,
   * whose labels are too long to sit under vertical bars. points [{ label, value, title?, attrs? }],
   * options { title, id, format? }. HTML, so the text keeps its size in a narrow window.
   */
  function rankChart(points, options) {
    var max = Math.max.apply(null, points.map(function (p) { return p.value; }).concat([0]));
    if (!(max > 0)) max = 1;
    var format = options.format || fmt.number;
    return el("figure", {}, el("figcaption", {}, options.title),
      el("div", { class: "rank", role: "list", "aria-label": options.title, "data-chart": options.id || "" }, points.map(function (p) {
        var bar = svg("svg", { class: "rank-bar", viewBox: "0 0 100 10", preserveAspectRatio: "none", "aria-hidden": "true" });
        bar.appendChild(svg("rect", { x: 0, y: 0, height: 10, width: (p.value / max) * 100, class: "bar", "data-label": p.label, "data-value": p.value }));
        return el("div", Object.assign({ class: "rank-row", role: "listitem" }, p.attrs || {}),
          el("span", { class: "rank-label", title: p.title || p.label }, p.label), bar, el("span", { class: "rank-value" }, format(p.value)));
      })));
  }

  var ui = { api: api, el: el, fill: fill, table: table, pager: pager, barChart: barChart, rankChart: rankChart, section: section, message: message, button: button, fmt: fmt };

  function show(id) {
    var panel = panels.filter(function (p) { return p.id === id; })[0] || panels[0];
    if (!panel) return;
    current = panel.id;
    document.querySelectorAll("#tabs a").forEach(function (a) { a.classList.toggle("active", a.getAttribute("data-tab") === panel.id); });
    var main = document.getElementById("main");
    main.textContent = "";
    var root = el("div", { class: "panel", "data-panel": panel.id });
    main.appendChild(root);
    Promise.resolve().then(function () { return panel.render(root, ui); }).catch(function (e) {
      root.appendChild(message(e.message, "error"));
    });
  }

  function signIn(reason) {
    sessionStorage.removeItem(TOKEN_KEY);
    document.getElementById("tabs").hidden = true;
    document.getElementById("sign-out").hidden = true;
    var main = document.getElementById("main");
    main.textContent = "";
    var input = el("input", { type: "password", id: "token", name: "token", autocomplete: "off", placeholder: "admin.token" });
    var form = el("form", { class: "card sign-in" },
      el("h2", {}, "Admin token"),
      reason ? message(reason, "error") : null,
      el("p", {}, "The console calls the gateway's /-/ endpoints with this token (Authorization: Bearer). It is kept in this tab only (sessionStorage). Leave it empty if the gateway sets no admin.token."),
      el("label", { for: "token" }, "Token "), input, " ",
      el("button", { type: "submit" }, "Open the console"));
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value);
      start();
    });
    main.appendChild(form);
    input.focus();
  }

  function start() {
    if (token() === null) return signIn();
    document.getElementById("tabs").hidden = false;
    document.getElementById("sign-out").hidden = false;
    show(location.hash.slice(1));
  }

  window.gatewayConsole = {
    panel: function (definition) { panels.push(definition); },
  };

  window.addEventListener("hashchange", function () { if (token() !== null && location.hash.slice(1) !== current) show(location.hash.slice(1)); });
  window.addEventListener("DOMContentLoaded", function () {
    // Panels registered themselves as their scripts ran; keep the order of the tabs.
    var order = Array.prototype.map.call(document.querySelectorAll("#tabs a"), function (a) { return a.getAttribute("data-tab"); });
    panels.sort(function (a, b) { return order.indexOf(a.id) - order.indexOf(b.id); });
    document.getElementById("sign-out").addEventListener("click", function () { signIn(); });
    start();
  });
})();
`;

export const APP_CSS = `:root { font-family: system-ui, sans-serif; color: #1d2433; background: #f4f6fa; }
body { margin: 0; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.5rem; padding: 0.6rem 1.2rem; background: #1d2433; color: #fff; }
header h1 { font-size: 1.1rem; margin: 0; }
nav { display: flex; flex-wrap: wrap; gap: 0.2rem; flex: 1; }
#sign-out { margin-left: auto; }
/* A narrow window: the tabs get a row of their own below the title and wrap there. */
@media (max-width: 760px) { nav { order: 1; flex-basis: 100%; } }
nav a { color: #c9d3e6; text-decoration: none; padding: 0.35rem 0.7rem; border-radius: 4px; }
nav a.active, nav a:hover { background: #3a4662; color: #fff; }
main { padding: 1rem 1.2rem; max-width: 1200px; }
/* A wide table scrolls inside its card, not the page. */
.card { background: #fff; border: 1px solid #dde2ec; border-radius: 6px; padding: 0.8rem 1rem; margin-bottom: 1rem; overflow-x: auto; }
.card h2 { font-size: 1rem; margin: 0 0 0.6rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
th, td { text-align: left; padding: 0.3rem 0.5rem; border-bottom: 1px solid #eceff5; vertical-align: top; }
th { color: #5a6478; font-weight: 600; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
button { font: inherit; padding: 0.25rem 0.7rem; border: 1px solid #9aa5bb; background: #fff; border-radius: 4px; cursor: pointer; }
button:hover:not([disabled]) { background: #eef2fa; }
button[disabled] { opacity: 0.5; cursor: default; }
button.danger { border-color: #c0392b; color: #c0392b; }
header button { background: transparent; color: #c9d3e6; border-color: #56617a; }
.message { padding: 0.4rem 0.6rem; border-radius: 4px; margin: 0.4rem 0; }
.message.error { background: #fdecea; color: #8a1c12; }
.message.info { background: #eaf2fd; color: #133e7a; }
.message.empty { color: #7a8498; padding-left: 0; }
.controls { display: flex; gap: 0.8rem; align-items: center; flex-wrap: wrap; margin-bottom: 0.6rem; }
.pager { display: flex; gap: 0.6rem; align-items: center; margin-top: 0.5rem; }
.chart { width: 100%; height: auto; }
.chart .bar { fill: #3867d6; }
.chart .axis { stroke: #9aa5bb; }
.chart .tick { font-size: 11px; fill: #5a6478; }
figure { margin: 0 0 0.8rem; }
table + h2 { margin-top: 1.2rem; }
.rank { display: grid; grid-template-columns: minmax(0, max-content) minmax(4rem, 1fr) max-content; gap: 0.25rem 0.6rem; align-items: center; font-size: 0.85rem; margin-top: 0.4rem; }
.rank-row { display: contents; }
.rank-label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.rank-bar { width: 100%; height: 0.9rem; }
.rank .bar { fill: #3867d6; }
.rank-value { text-align: right; font-variant-numeric: tabular-nums; }
figcaption { font-size: 0.9rem; font-weight: 600; color: #5a6478; }
pre { background: #f7f8fb; padding: 0.6rem; overflow: auto; font-size: 0.85rem; }
.state-ejected { color: #c0392b; font-weight: 600; }
.state-healthy { color: #1e8449; }
.secret { border: 2px solid #d68910; background: #fef9e7; }
.key-id { display: block; font-size: 0.75rem; color: #7a8498; }
.secret-value { font-size: 1rem; padding: 0.2rem 0.4rem; background: #fff; border: 1px solid #d68910; user-select: all; word-break: break-all; }
.key-disabled, .key-expired, .key-revoked { color: #c0392b; }
.field input { padding: 0.2rem; }
.sign-in input { padding: 0.3rem; width: 22rem; }
`;
