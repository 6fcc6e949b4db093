/** Webhooks: the retry queue, and the dead letters with their last error, redelivered one by one or all. */
import type { ConsolePanel } from "../../core/console/panel.ts";

export const webhooksPanel: ConsolePanel = {
  id: "webhooks",
  title: "Webhooks",
  script: String.raw`gatewayConsole.panel({
  id: "webhooks",
  render: function (root, ui) {
    var retries = ui.section("Retry queue");
    var letters = ui.section("Dead letters");
    root.appendChild(retries);
    root.appendChild(letters);

    function loadRetries(offset) {
      return ui.api("GET", "webhooks/retries?limit=20&offset=" + offset).then(function (page) {
        ui.fill(retries, retries.firstChild,
          ui.el("p", {}, "Deliveries waiting for their next attempt, or being attempted now."),
          ui.table([
            { title: "Job", value: function (d) { return d.job_id; } },
            { title: "URL", value: function (d) { return d.url; } },
            { title: "Attempts", numeric: true, value: function (d) { return d.attempts; } },
            { title: "Next attempt", value: function (d) { return ui.fmt.date(d.due_at); } },
            { title: "Last error", value: function (d) { return d.last_error || ""; } },
          ], page.deliveries, { "data-table": "webhook-retries" }),
          ui.pager(page, loadRetries));
      });
    }

    function loadLetters(offset) {
      return ui.api("GET", "webhooks/deadletter?limit=20&offset=" + offset).then(function (page) {
        var redeliver = function (ids) {
          return ui.api("POST", "webhooks/deadletter/redeliver", ids ? { ids: ids } : {}).then(function (result) {
            var text = "Redelivered " + result.redelivered + " webhook(s).";
            (result.skipped || []).forEach(function (s) { text += " " + s.id + ": " + s.reason + "."; });
            return Promise.all([loadLetters(0), loadRetries(0)]).then(function () { letters.appendChild(ui.message(text, "info")); });
          });
        };
        ui.fill(letters, letters.firstChild,
          ui.el("p", {}, "Webhooks that failed every attempt. A redelivery sends the same notification again, signed anew, with every attempt of webhooks.max_retries ahead of it."),
          ui.table([
            { title: "Job", value: function (d) { return d.job_id; } },
            { title: "URL", value: function (d) { return d.url; } },
            { title: "Attempts", numeric: true, value: function (d) { return d.attempts; } },
            { title: "Failed at", value: function (d) { return ui.fmt.date(d.failed_at); } },
            { title: "Last error", value: function (d) { return d.last_error; } },
            { title: "", value: function (d) { return ui.button("Redeliver", function () { return redeliver([d.id]); }, { "data-action": "redeliver" }); } },
          ], page.deliveries.map(function (d) { return Object.assign({ __attrs: { "data-delivery": d.id } }, d); }), { "data-table": "webhook-deadletters" }),
          ui.pager(page, loadLetters),
          page.total > 0 ? ui.button("Redeliver all " + page.total, function () { return redeliver(undefined); }, { "data-action": "redeliver-all" }) : null);
      });
    }

    return Promise.all([loadRetries(0), loadLetters(0)]);
  },
});
`,
};
