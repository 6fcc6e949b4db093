/**
 * The admin console: a page at `/-/console` with a tab per panel the installed plugins declare
 * (usage, queues, webhooks, API keys, backends; the running config is its own), each showing
 * `/-/` endpoints with the admin token the operator enters. Hand-written HTML, CSS and JS served by the gateway itself (offline, no
 * build step, ~40 KB): nothing to download, nothing to keep up to date. See docs/console.md.
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { APP_CSS, APP_JS } from "./client/app.ts";
import { consoleSection } from "./config.ts";
import { CONSOLE_CSP, consolePage } from "./page.ts";
import { configPanel } from "./panels/config.ts";
import { consolePanels } from "./panels/layout.ts";
import { consoleOpenApi } from "./openapi.ts";

const JS = "text/javascript; charset=utf-8";
// The admin token never goes into a cached or shared response; the files are small anyway.
const NO_STORE = { "cache-control": "no-store", "x-content-type-options": "nosniff" };

export default definePlugin({
  name: "console",
  section: consoleSection,
  // The page and its scripts hold no data: a browser must load them before the token is typed in.
  optionalDependsOn: ["admin"],
  enabled: (config) => config.console.enabled,
  openapi: consoleOpenApi,
  // The core's running config and reload; every other panel comes with the plugin whose endpoints it shows.
  consolePanels: [configPanel],
  setup(api) {
    const panels = consolePanels(api.contributions);
    const page = consolePage(panels);
    // One script: the client, then each panel registering itself (one request, one audit line).
    const script = [APP_JS, ...panels.map((panel) => `// panel: ${panel.id}\n${panel.script}`)].join("\n");

    const files = ["/-/console", "/-/console/app.js", "/-/console/app.css"];
    if (api.has("admin")) { for (const path of files) api.use("admin").allowWithoutToken(path); }
    // Without the token the page still comes (its form asks for the token) but as a 401: the
    // console answers like every admin endpoint, and a browser renders the form all the same.
    const admin = api.has("admin") ? api.use("admin") : undefined;
    api.routes.get(
      "/-/console",
      (c) =>
        c.html(page, admin && !admin.accepts(c.req.raw.headers) ? 401 : 200, {
          ...NO_STORE,
          "content-security-policy": CONSOLE_CSP,
          "referrer-policy": "no-referrer",
        }),
    );
    api.routes.get("/-/console/app.js", (c) => c.body(script, 200, { ...NO_STORE, "content-type": JS }));
    api.routes.get("/-/console/app.css", (c) => c.body(APP_CSS, 200, { ...NO_STORE, "content-type": "text/css; charset=utf-8" }));
  },
});
