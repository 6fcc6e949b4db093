/** Backends: each service's backends, healthy or ejected (until when), and failures in a row. */
import type { ConsolePanel } from "./panel.ts";

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
        card.replaceChildren(card.firstChild,
          ui.el("p", {}, "Ejected backends sit out (a Retry-After, or failures in a row) until the time shown; the state is this gateway process's own."),
          ui.table([
            { title: "Service type", value: function (b) { return b.service_type; } },
            { title: "Model", value: function (b) { return b.model; } },
            { title: "URL", value: function (b) { return b.url; } },
            { title: "State", value: function (b) { return ui.el("span", { class: "state-" + b.state }, b.state); } },
            { title: "Ejected until", value: function (b) { return ui.fmt.date(b.ejected_until); } },
            { title: "Failures in a row", numeric: true, value: function (b) { return b.consecutive_failures; } },
          ], data.backends, { "data-table": "backends" }),
          ui.button("Refresh", load));
      });
    }
    return load();
  },
});
`,
};
