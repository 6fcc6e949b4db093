/**
 * The console's tabs: every installed plugin's panels (`definePlugin({ consolePanels })`), the
 * built-in ones in the order the console has always shown them, then any other by plugin name.
 */
import type { ConsolePanel } from "../../../core/console/panel.ts";
import { PluginError } from "../../../core/plugins/host.ts";
import { inLayout } from "../../../core/plugins/layout.ts";
import type { PluginContributions } from "../../../core/plugins/types.ts";

/** Panel ids of the built-in plugins, in tab order. */
const PANEL_LAYOUT: readonly string[] = ["usage", "queues", "webhooks", "keys", "backends", "config"];

/** Throws a PluginError when two panels share an id: both would claim the same tab. */
export function consolePanels(plugins: readonly PluginContributions[]): ConsolePanel[] {
  const byName = [...plugins].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const panels: Array<{ plugin: string; panel: ConsolePanel }> = [];
  for (const { name: plugin, consolePanels: declared } of byName) {
    for (const panel of declared ?? []) {
      const other = panels.find((entry) => entry.panel.id === panel.id);
      if (other) {
        throw new PluginError(
          `plugins "${other.plugin}" and "${plugin}" both declare the console panel "${panel.id}"; give one of them another id`,
          undefined,
          "GW_PLUGIN_DUPLICATE",
        );
      }
      panels.push({ plugin, panel });
    }
  }
  return inLayout(panels, (entry) => entry.panel.id, PANEL_LAYOUT).map((entry) => entry.panel);
}
