/** Config: the running config with its secrets redacted, and a reload of the config file. */
import type { ConsolePanel } from "../../../core/console/panel.ts";

export const configPanel: ConsolePanel = {
  id: "config",
  title: "Config",
  script: String.raw`gatewayConsole.panel({
  id: "config",
  render: function (root, ui) {
    var card = ui.section("Running config");
    var result = ui.el("div", {});
    root.appendChild(card);
    function load() {
      return ui.api("GET", "config").then(function (config) {
        ui.fill(card, card.firstChild,
          ui.el("p", {}, "What this gateway runs now (not the file, which may have changed since). Secrets show as ***."),
          ui.el("div", { class: "controls" }, ui.button("Reload the config file", reload, { "data-action": "reload" }), result),
          ui.el("pre", { "data-config": "" }, JSON.stringify(config, null, 2)));
      });
    }
    function reload() {
      return ui.api("POST", "reload").then(function (answer) {
        ui.fill(result, ui.message("Reloaded: " + answer.services + " service(s).", "info"));
        return load();
      }, function (error) {
        ui.fill(result, ui.message(error.message, "error"));
      });
    }
    return load();
  },
});
`,
};
