/** Queues: depth, processing and oldest pending job per model; a model's relay dead letters with their errors, and discard. */
import type { ConsolePanel } from "../../core/console/panel.ts";

export const queuesPanel: ConsolePanel = {
  id: "queues",
  title: "Queues",
  script: String.raw`gatewayConsole.panel({
  id: "queues",
  render: function (root, ui) {
    var overview = ui.section("Queues per model");
    var letters = ui.section("Relay dead letters");
    root.appendChild(overview);
    root.appendChild(letters);
    letters.hidden = true;

    function loadQueues() {
      return ui.api("GET", "queues").then(function (data) {
        ui.fill(overview, overview.firstChild, ui.table([
          { title: "Model", value: function (q) { return q.model; } },
          { title: "Pending", numeric: true, value: function (q) { return ui.fmt.number(q.pending); } },
          { title: "Processing", numeric: true, value: function (q) { return ui.fmt.number(q.processing); } },
          { title: "Oldest pending", numeric: true, value: function (q) { return ui.fmt.seconds(q.oldest_pending_age_seconds); } },
          { title: "Dead letters", numeric: true, value: function (q) { return ui.fmt.number(q.deadletter); } },
          { title: "", value: function (q) { return q.deadletter > 0 ? ui.button("Show dead letters", function () { return loadLetters(q.model, 0); }, { "data-action": "show-deadletters" }) : ""; } },
        ], data.queues.map(function (q) { return Object.assign({ __attrs: { "data-model": q.model } }, q); }), { "data-table": "queues" }), ui.button("Refresh", loadQueues));
      });
    }

    function loadLetters(model, offset) {
      return ui.api("GET", "relay/deadletter?model=" + encodeURIComponent(model) + "&limit=20&offset=" + offset).then(function (page) {
        letters.hidden = false;
        var discard = function (ids) {
          var body = ids ? { model: model, ids: ids } : { model: model };
          return ui.api("POST", "relay/deadletter/discard", body).then(function (result) {
            return Promise.all([loadQueues(), loadLetters(model, 0)]).then(function () {
              letters.appendChild(ui.message("Discarded " + result.discarded + " dead letter(s) of " + model + ".", "info"));
            });
          });
        };
        ui.fill(letters,
          ui.el("h2", {}, "Relay dead letters of " + model),
          ui.el("p", {}, "Jobs the relay gave up on. Their input files are gone, so they cannot be rerun: discard them once you know why they failed."),
          ui.table([
            { title: "Job", value: function (j) { return j.job_id; } },
            { title: "Status", value: function (j) { return j.status; } },
            { title: "Error", value: function (j) { return j.error || "(the record has expired)"; } },
            { title: "Failed at", value: function (j) { return ui.fmt.date(j.failed_at); } },
            { title: "", value: function (j) { return ui.button("Discard", function () { return discard([j.job_id]); }, { class: "danger", "data-action": "discard" }); } },
          ], page.jobs.map(function (j) { return Object.assign({ __attrs: { "data-job": j.job_id } }, j); }), { "data-table": "relay-deadletters" }),
          ui.pager(page, function (next) { return loadLetters(model, next); }),
          page.total > 0 ? ui.button("Discard all " + page.total + " of " + model, function () { return discard(undefined); }, { class: "danger", "data-action": "discard-all" }) : null);
      });
    }

    return loadQueues();
  },
});
`,
};
