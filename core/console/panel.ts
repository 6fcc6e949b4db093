/**
 * One view of the admin console: a tab in the page and a script that fills it. A plugin
 * declares its panels (`definePlugin({ consolePanels })`); the console plugin serves them.
 * The script runs in the browser and registers itself with
 * `gatewayConsole.panel({ id, render(root, ui) })` (plugins/console/client/app.ts says what
 * `ui` offers: API calls with the admin token, element building, tables, charts). Kept as a string so the same module serves on Node and Deno,
 * in the repository and from the npm package, with no file reads. The script is plain
 * ES2017 written without template literals (it sits inside one).
 */
export interface ConsolePanel {
  /** URL-safe: the tab is `#<id>`. The script is served within `/-/console/app.js`, after the client. */
  id: string;
  title: string;
  script: string;
}
