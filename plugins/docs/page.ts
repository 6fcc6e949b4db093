/**
 * The interactive docs page: Swagger UI from the `swagger-ui-dist` package, every asset
 * served by the gateway itself (it works offline and behind a strict CSP). URLs are
 * relative to /docs, so the page also works when a proxy mounts the gateway under a prefix.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";

/** Files of swagger-ui-dist the page loads, with their content types. */
export const UI_ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "index.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
};

/** Our initializer (the package's own points at a public demo). It reads the page's JSON config. */
export const INIT_SCRIPT = `window.addEventListener("load", function () {
  var config = JSON.parse(document.getElementById("docs-config").textContent);
  window.ui = SwaggerUIBundle({
    urls: config.urls,
    "urls.primaryName": config.urls[0].name,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout"
  });
});
`;

export const PAGE_CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'self'";

/** `<` escaped so the JSON cannot close the script element it sits in. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c");
}

/** The page; the top bar offers the gateway's document and each visible model backend's own. */
export function docsPage(documented: readonly ServiceConfig[]): string {
  const urls = [
    { url: "openapi.yaml", name: "Gateway" },
    ...documented.map((s) => ({ url: `docs/spec/${encodeURIComponent(s.type)}/${encodeURIComponent(s.model)}`, name: `${s.model} (${s.type} backend)` })),
  ];
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>Inference gateway API</title>
    <link rel="stylesheet" type="text/css" href="docs/assets/swagger-ui.css">
    <link rel="stylesheet" type="text/css" href="docs/assets/index.css">
    <link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="docs/assets/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script type="application/json" id="docs-config">${scriptJson({ urls })}</script>
    <script src="docs/assets/swagger-ui-bundle.js" charset="UTF-8"></script>
    <script src="docs/assets/swagger-ui-standalone-preset.js" charset="UTF-8"></script>
    <script src="docs/assets/init.js" charset="UTF-8"></script>
  </body>
</html>
`;
}
