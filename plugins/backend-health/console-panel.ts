/**
 * Backends: each service's backends, healthy or ejected (until when), failures in a row, and
 * since the process started (or last reloaded) its ejections, attempts, failures and error rate.
 */
import type { ConsolePanel } from "../../core/console/panel.ts";

export const backendsPanel: ConsolePanel = {
  id: "backends",
  title: "Backends",
  script: String.raw`gatewayConsole.panel({
  id: "backends",
  render: function (root, ui) {
    var card = ui.section("Backend health");
    root.appendChild(card);
    function load() {
      return ui.api("GET", "backends").then(function (data) {
        ui.fill(card, card.firstChild,
          ui.el("p", {}, "Ejected backends sit out (a Retry-After, or failures in a row) until the time shown; the state is this gateway process's own. Ejections, attempts and failures count since " + ui.fmt.date(data.since) + " (the process's start or last reload)."),
          ui.table([
            { title: "Service type", value: function (b) { return b.service_type; } },
            { title: "Model", value: function (b) { return b.model; } },
            { title: "URL", value: function (b) { return b.url; } },
            { title: "State", value: function (b) { return ui.el("span", { class: "state-" + b.state }, b.state); } },
            { title: "Ejected until", value: function (b) { return ui.fmt.date(b.ejected_until); } },
            { title: "Failures in a row", numeric: true, value: function (b) { return b.consecutive_failures; } },
            { title: "Ejections", numeric: true, value: function (b) { return ui.fmt.number(b.ejections); } },
            { title: "Attempts", numeric: true, value: function (b) { return ui.fmt.number(b.requests); } },
            { title: "Failures", numeric: true, value: function (b) { return ui.fmt.number(b.failures); } },
            { title: "Error rate", numeric: true, value: function (b) { return b.requests ? ui.fmt.number(Math.round(b.failures / b.requests * 1000) / 10) + " %" : "-"; } },
          ], data.backends.map(function (b) { return Object.assign({ __attrs: { "data-url": b.url, "data-service": b.service_type } }, b); }), { "data-table": "backends" }),
          ui.button("Refresh", load));
      });
    }
    return load();
  },
});
`,
};
