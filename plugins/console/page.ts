/**
 * The console page: a shell with a tab per panel that loads the stylesheet and one script
 * (the client followed by every panel's script, in tab order), both served by the gateway (offline, behind a strict CSP: no inline script).
 * URLs are relative to /-/console, so the page also works under a path prefix.
 */
import type { ConsolePanel } from "../../core/console/panel.ts";

export const CONSOLE_CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const escape = (text: string) => text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c] ?? c);

export function consolePage(panels: readonly ConsolePanel[]): string {
  const tabs = panels.map((panel) => `<a href="#${escape(panel.id)}" data-tab="${escape(panel.id)}">${escape(panel.title)}</a>`).join("");
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Inference gateway console</title>
    <link rel="stylesheet" href="console/app.css">
    <script src="console/app.js" defer></script>
  </head>
  <body>
    <header><h1>Inference gateway</h1><nav id="tabs" hidden>${tabs}</nav><button id="sign-out" type="button" hidden>Forget token</button></header>
    <main id="main"></main>
  </body>
</html>
`;
}
