/**
 * Usage over time from `GET /-/usage/report` (one service type; daily, weekly or monthly
 * buckets) as charts of requests, tokens and, when the report carries it, cost; the report's
 * groups (per consumer, model or key) when it has them; and the top consumers from `GET /-/usage`.
 * Per key, a group is an API key's id, or a consumer's name for requests that came without a
 * key: the table puts them in columns of their own, with each key's consumer from `GET /-/keys`.
 */
import type { ConsolePanel } from "../../core/console/panel.ts";

export const usagePanel: ConsolePanel = {
  id: "usage",
  title: "Usage",
  script: String.raw`gatewayConsole.panel({
  id: "usage",
  render: function (root, ui) {
    var RANGES = { daily: 30, weekly: 12 * 7, monthly: 365 };
    var UNITS = { daily: "day", weekly: "week", monthly: "month" };
    var day = function (ms) { return new Date(ms).toISOString().slice(0, 10); };
    // Bucket names: YYYYMMDD, YYYY-Www, YYYYMM; the chart shows MM-DD, Www, YYYY-MM.
    var short = function (bucket) {
      if (/^\d{8}$/.test(bucket)) return bucket.slice(4, 6) + "-" + bucket.slice(6);
      if (/^\d{6}$/.test(bucket)) return bucket.slice(0, 4) + "-" + bucket.slice(4);
      return bucket.replace(/^\d{4}-/, "");
    };
    var tokens = function (t) { return t && typeof t.tokens === "object" ? (t.tokens.prompt || 0) + (t.tokens.completion || 0) : typeof (t && t.tokens) === "number" ? t.tokens : undefined; };
    var cost = function (t) { return t && t.cost !== undefined ? (typeof t.cost === "number" ? t.cost : t.cost.total) : undefined; };
    // Key ids are "key_" and 32 hex digits; the first 8 tell keys apart (the tooltip has the whole id).
    var KEY_ID = /^key_[0-9a-f]{32}$/;
    var shortId = function (id) { return KEY_ID.test(id) ? id.slice(0, 12) + "…" : id; };
    // Each key's consumer, from the first 1000 keys; none when the key API is off or refused.
    var keyOwners = function () {
      var owners = {};
      var page = function (offset) {
        return ui.api("GET", "keys?limit=100&offset=" + offset).then(function (p) {
          p.keys.forEach(function (k) { owners[k.id] = k.consumer; });
          return offset + p.limit < Math.min(p.total, 1000) ? page(offset + p.limit) : owners;
        });
      };
      return page(0).catch(function () { return owners; });
    };

    var type = ui.el("select", { "data-control": "type" });
    var period = ui.el("select", { "data-control": "period" }, ["daily", "weekly", "monthly"].map(function (p) { return ui.el("option", { value: p }, p); }));
    var groupBy = ui.el("select", { "data-control": "group-by" }, ["consumer", "model", "key", "mode"].map(function (g) { return ui.el("option", { value: g }, "per " + g); }));
    var out = ui.el("div", {});
    var controls = ui.el("div", { class: "controls" },
      ui.el("label", {}, "Service type ", type), ui.el("label", {}, "Period ", period), ui.el("label", {}, "Groups ", groupBy), ui.button("Refresh", load));
    var card = ui.section("Usage over time");
    card.appendChild(controls);
    card.appendChild(out);
    root.appendChild(card);
    [type, period, groupBy].forEach(function (s) { s.addEventListener("change", load); });

    function load() {
      if (!type.value) { ui.fill(out, ui.message("No service types are configured.", "empty")); return; }
      var now = Date.now();
      var to = day(now), from = day(now - (RANGES[period.value] - 1) * 86400000);
      var query = "type=" + encodeURIComponent(type.value) + "&period=" + period.value + "&from=" + from + "&to=" + to + "&total=true&group_by=" + groupBy.value;
      var perKey = groupBy.value === "key";
      return Promise.all([
        ui.api("GET", "usage/report?" + query),
        ui.api("GET", "usage?type=" + encodeURIComponent(type.value) + "&limit=10"),
        perKey ? keyOwners() : {},
      ]).then(function (answers) {
        var report = answers[0], top = answers[1], owners = answers[2];
        var buckets = report.buckets || [];
        var parts = [];
        var total = report.total || {};
        var summary = "Total " + from + " to " + to + ": " + ui.fmt.number(total.requests) + " requests";
        if (tokens(total) !== undefined) summary += ", " + ui.fmt.number(tokens(total)) + " tokens";
        if (cost(total) !== undefined) summary += ", cost " + ui.fmt.cost(cost(total));
        parts.push(ui.el("p", { "data-summary": "" }, summary));
        parts.push(ui.barChart(buckets.map(function (b) { return { label: short(b.bucket), value: b.requests || 0 }; }), { title: "Requests per " + UNITS[period.value], id: "requests" }));
        if (buckets.some(function (b) { return tokens(b) !== undefined; })) {
          parts.push(ui.barChart(buckets.map(function (b) { return { label: short(b.bucket), value: tokens(b) || 0 }; }), { title: "Tokens (prompt + completion)", id: "tokens" }));
        }
        if (buckets.some(function (b) { return cost(b) !== undefined; })) {
          parts.push(ui.barChart(buckets.map(function (b) { return { label: short(b.bucket), value: cost(b) || 0 }; }), { title: "Cost", id: "cost" }));
        }
        if (Array.isArray(report.groups)) {
          var groups = report.groups.slice().sort(function (a, b) { return (b.cost || 0) - (a.cost || 0) || b.requests - a.requests; });
          var isKey = function (g) { return perKey && (Object.prototype.hasOwnProperty.call(owners, g.key) || KEY_ID.test(g.key)); };
          var consumerOf = function (g) { return isKey(g) ? owners[g.key] || "" : g.key; };
          var label = function (g) {
            if (!perKey) return g.key;
            if (!isKey(g)) return g.key + " (no key)";
            return shortId(g.key) + (consumerOf(g) ? " (" + consumerOf(g) + ")" : "");
          };
          parts.push(ui.el("h2", {}, "Per " + groupBy.value));
          // Cost when anything was priced (unpriced groups carry cost 0), else requests.
          var priced = groups.some(function (g) { return g.cost > 0; });
          parts.push(ui.rankChart(groups.slice(0, 15).map(function (g) {
            return { label: label(g), title: perKey && isKey(g) ? g.key + (consumerOf(g) ? " (" + consumerOf(g) + ")" : "") : label(g), value: priced ? g.cost : g.requests, attrs: { "data-group": g.key } };
          }), { title: (priced ? "Cost" : "Requests") + " per " + groupBy.value, id: "groups", format: priced ? ui.fmt.cost : ui.fmt.number }));
          var named = perKey ? [
            { title: "API key", value: function (g) { return isKey(g) ? ui.el("code", { title: g.key }, shortId(g.key)) : "(none)"; } },
            { title: "Consumer", value: consumerOf },
          ] : [{ title: groupBy.value, value: function (g) { return g.key; } }];
          parts.push(ui.table(named.concat([
            { title: "Requests", numeric: true, value: function (g) { return ui.fmt.number(g.requests); } },
            { title: "Tokens", numeric: true, value: function (g) { return ui.fmt.number(tokens(g)); } },
            { title: "Cost", numeric: true, value: function (g) { return ui.fmt.cost(cost(g)); } },
          ]), groups.map(function (g) { return Object.assign({ __attrs: { "data-group": g.key } }, g); }), { "data-table": "usage-groups" }));
        }
        parts.push(ui.el("h2", {}, "Top consumers (all time, by requests of " + type.value + ")"));
        var usageOf = function (c) { return (c.usage || []).filter(function (u) { return u.service_type === type.value; })[0] || { total: {} }; };
        parts.push(ui.table([
          { title: "Consumer", value: function (c) { return c.consumer; } },
          { title: "Requests", numeric: true, value: function (c) { return ui.fmt.number(usageOf(c).total.requests); } },
          { title: "Tokens", numeric: true, value: function (c) { return ui.fmt.number(tokens(usageOf(c).total)); } },
          { title: "Cost", numeric: true, value: function (c) { return ui.fmt.cost(cost(usageOf(c).total)); } },
          { title: "Last active", value: function (c) { return ui.fmt.date(c.last_active); } },
        ], top.consumers || [], { "data-table": "top-consumers" }));
        ui.fill(out, parts);
      }, function (error) {
        ui.fill(out, ui.message(error.message, "error"));
      });
    }

    return ui.api("GET", "config").then(function (config) {
      var types = [];
      (config.services || []).forEach(function (s) { if (types.indexOf(s.type) < 0) types.push(s.type); });
      types.forEach(function (t) { type.appendChild(ui.el("option", { value: t }, t)); });
      return load();
    });
  },
});
`,
};
