/** Batches: every owner's batches with their progress, newest first, a page at a time; or how to turn batches on. */
import type { ConsolePanel } from "../../core/console/panel.ts";

export const batchesPanel: ConsolePanel = {
  id: "batches",
  title: "Batches",
  script: String.raw`gatewayConsole.panel({
  id: "batches",
  render: function (root, ui) {
    var card = ui.section("Batches");
    root.appendChild(card);
    var LIMIT = 50;

    function progress(b) {
      var c = b.request_counts, done = c.completed + c.failed;
      var share = c.total > 0 ? Math.round((done / c.total) * 100) : 0;
      return ui.el("span", { "data-progress": String(share) },
        ui.el("progress", { max: String(Math.max(c.total, 1)), value: String(done) }),
        " " + done + " / " + c.total + (c.failed > 0 ? " (" + c.failed + " failed)" : "") + (b.in_flight > 0 ? ", " + b.in_flight + " running" : ""));
    }

    function unix(s) { return s ? ui.fmt.date(new Date(s * 1000).toISOString()) : ""; }

    /** cursors: the "after" of each page shown so far (the first is undefined). */
    function load(cursors) {
      var after = cursors[cursors.length - 1];
      return ui.api("GET", "batches?limit=" + LIMIT + (after ? "&after=" + encodeURIComponent(after) : "")).then(function (page) {
        ui.fill(card, card.firstChild,
          ui.el("p", {}, "Every owner's batches, newest first. A line runs as its owner's own request, at most batches.concurrency lines of a model at once across the deployment."),
          ui.table([
            { title: "Batch", value: function (b) { return b.id; } },
            { title: "API", value: function (b) { return b.api; } },
            { title: "Owner", value: function (b) { return b.owner || "(anonymous)"; } },
            { title: "Status", value: function (b) { return b.status; } },
            { title: "Progress", value: progress },
            { title: "Created", value: function (b) { return unix(b.created_at); } },
            { title: "Expires", value: function (b) { return unix(b.expires_at); } },
          ], page.data.map(function (b) { return Object.assign({ __attrs: { "data-batch": b.id } }, b); }), { "data-table": "batches" }),
          ui.el("div", { class: "pager" },
            ui.button("Newest", function () { return load([undefined]); }, { disabled: cursors.length === 1 }),
            ui.button("Older", function () { return load(cursors.concat([page.last_id])); }, { disabled: !page.has_more })));
      }, function (error) {
        if (error.status !== 404) throw error;
        ui.fill(card, card.firstChild,
          ui.el("p", { "data-batches-off": "" }, "Batches are off. Turn them on with batches.enabled: true to serve /v1/files, /v1/batches and /v1/messages/batches (see docs/batches.md)."));
      });
    }

    return load([undefined]);
  },
});
`,
};
