/**
 * API keys (`/-/keys`): the list, paged and filtered by consumer; create; disable and enable
 * (PATCH); rotate; revoke. A new or rotated secret is shown once, in a box of the page only:
 * never put in sessionStorage or anywhere else, and gone when the box is dismissed or the tab
 * changes. Without admin.token the gateway answers 403 to every call, and the panel says so.
 * The running config says whether keys are on: with neither `auth.mode: api_key` nor
 * `auth.api_key.secret` there is no key API, and the panel says how to turn it on; with the
 * secret in another mode keys can be issued but are not checked yet, and the panel says that.
 */
import type { ConsolePanel } from "../../../core/console/panel.ts";

export const keysPanel: ConsolePanel = {
  id: "keys",
  title: "API keys",
  script: String.raw`gatewayConsole.panel({
  id: "keys",
  render: function (root, ui) {
    var LIMIT = 20;
    var secretBox = ui.el("div", {});
    var list = ui.section("API keys");
    var form = ui.section("Create a key");
    var consumerFilter = ui.el("input", { type: "text", "data-control": "consumer-filter", placeholder: "any consumer" });
    var out = ui.el("div", {});
    // A form, so Enter in the field filters too.
    var filter = ui.el("form", { class: "controls" }, ui.el("label", {}, "Consumer ", consumerFilter), ui.el("button", { type: "submit", "data-action": "filter" }, "Filter"));
    filter.addEventListener("submit", function (event) { event.preventDefault(); load(0); });
    list.appendChild(filter);
    list.appendChild(out);

    // The secret, in this box only (a DOM text node), until dismissed.
    function showSecret(title, secret, note) {
      var copied = ui.el("span", { class: "copied" });
      var copy = ui.button("Copy", function () {
        return navigator.clipboard.writeText(secret).then(function () { copied.textContent = "Copied."; }, function () { copied.textContent = "Copying failed: select the text and copy it."; });
      }, { "data-action": "copy-secret" });
      ui.fill(secretBox, ui.el("section", { class: "card secret", role: "alert", "data-secret-box": "" },
        ui.el("h2", {}, title),
        ui.el("p", {}, "This is the only time the gateway shows this secret: it keeps only a hash. Copy it now and hand it over safely."),
        ui.el("code", { class: "secret-value", "data-secret": "" }, secret), " ", copy, " ", copied,
        note ? ui.el("p", {}, note) : null,
        ui.el("p", {}, ui.button("I have copied it: hide", function () { ui.fill(secretBox); }, { "data-action": "hide-secret" }))));
    }

    function forbidden(error) {
      if (error && error.status === 403) {
        ui.fill(root, ui.section("API keys"));
        root.firstChild.appendChild(ui.message(error.message, "error"));
        root.firstChild.appendChild(ui.el("p", {}, "Managing keys needs an admin token: set admin.token in the gateway's configuration, reload, and sign in to the console with it."));
        return true;
      }
      return false;
    }

    // A disabled key: "status":"disabled", or (older gateways) "status":"active" with "enabled":false.
    function enabled(k) { return k.status !== "disabled" && k.enabled !== false; }
    function status(k) {
      if (k.status === "revoked") return "revoked";
      if (k.expires_at && Date.parse(k.expires_at) <= Date.now()) return "expired";
      return enabled(k) ? "enabled" : "disabled";
    }

    function act(promise, offset, text) {
      return promise.then(function () { return load(offset); }).then(function () { out.appendChild(ui.message(text, "info")); });
    }

    function load(offset) {
      var query = "keys?limit=" + LIMIT + "&offset=" + offset + (consumerFilter.value.trim() ? "&consumer=" + encodeURIComponent(consumerFilter.value.trim()) : "");
      return ui.api("GET", query).then(function (page) {
        ui.fill(out,
          ui.table([
            // The id too: usage per key (group_by=key) names keys by it.
            { title: "Prefix / id", value: function (k) { return [ui.el("code", {}, k.prefix), ui.el("small", { class: "key-id" }, k.id)]; } },
            { title: "Consumer", value: function (k) { return k.consumer; } },
            { title: "User type", value: function (k) { return k.user_type || ""; } },
            { title: "Models", value: function (k) { return k.models.length ? k.models.join(", ") : "(all)"; } },
            { title: "Status", value: function (k) { return ui.el("span", { class: "key-" + status(k), "data-status": status(k) }, status(k)); } },
            { title: "Expires", value: function (k) { return ui.fmt.date(k.expires_at) || "never"; } },
            { title: "Created", value: function (k) { return ui.fmt.date(k.created_at); } },
            { title: "", value: function (k) {
              if (k.status === "revoked") return "";
              return ui.el("span", { class: "actions" },
                ui.button(enabled(k) ? "Disable" : "Enable", function () {
                  return act(ui.api("PATCH", "keys/" + encodeURIComponent(k.id), { enabled: !enabled(k) }), offset, (enabled(k) ? "Disabled " : "Enabled ") + k.prefix + ".");
                }, { "data-action": enabled(k) ? "disable" : "enable" }), " ",
                ui.button("Rotate", function () {
                  return ui.api("POST", "keys/" + encodeURIComponent(k.id) + "/rotate", {}).then(function (r) {
                    showSecret("New secret of " + k.consumer + "'s key " + r.prefix, r.key, "The previous secret keeps working until " + ui.fmt.date(r.previous_valid_until) + ".");
                    return load(offset);
                  });
                }, { "data-action": "rotate" }), " ",
                ui.button("Revoke", function () {
                  if (!window.confirm("Revoke " + k.consumer + "'s key " + k.prefix + "? It stops working for good.")) return;
                  return act(ui.api("DELETE", "keys/" + encodeURIComponent(k.id)), offset, "Revoked " + k.prefix + ".");
                }, { class: "danger", "data-action": "revoke" }));
            } },
          ], page.keys.map(function (k) { return Object.assign({ __attrs: { "data-key": k.id } }, k); }), { "data-table": "keys" }),
          ui.pager(page, load));
      }, function (error) {
        if (!forbidden(error)) ui.fill(out, ui.message(error.message, "error"));
      });
    }

    // The creation form: empty fields are left out of the body.
    var input = function (name, attrs) { return ui.el("input", Object.assign({ name: name, "data-field": name, type: "text" }, attrs || {})); };
    var fields = {
      consumer: input("consumer", { required: true, placeholder: "team-search" }),
      user_type: input("user_type", { placeholder: "(none)" }),
      models: input("models", { placeholder: "chat-*, embed-* (empty: all)" }),
      expires_at: input("expires_at", { type: "datetime-local" }),
      rate: input("rate", { type: "number", min: 0, step: 1 }),
      period: input("period", { placeholder: "1m" }),
      token_rate: input("token_rate", { type: "number", min: 0, step: 1 }),
      token_period: input("token_period", { placeholder: "1h" }),
      cost_rate: input("cost_rate", { type: "number", min: 0, step: "any" }),
      cost_period: input("cost_period", { placeholder: "24h" }),
    };
    var row = function (label, node) { return ui.el("label", { class: "field" }, label + " ", node); };
    var formMessage = ui.el("div", {});
    var create = ui.el("form", { "data-form": "create-key" },
      ui.el("div", { class: "controls" }, row("Consumer", fields.consumer), row("User type", fields.user_type), row("Models (globs)", fields.models), row("Expires (UTC)", fields.expires_at)),
      ui.el("div", { class: "controls" }, row("Requests", fields.rate), row("per", fields.period), row("Tokens", fields.token_rate), row("per", fields.token_period), row("Cost", fields.cost_rate), row("per", fields.cost_period)),
      ui.el("button", { type: "submit", "data-action": "create" }, "Create key"), formMessage);
    form.appendChild(create);
    create.addEventListener("submit", function (event) {
      event.preventDefault();
      var v = function (name) { return fields[name].value.trim(); };
      var body = { consumer: v("consumer") };
      if (v("user_type")) body.user_type = v("user_type");
      if (v("models")) body.models = v("models").split(",").map(function (m) { return m.trim(); }).filter(Boolean);
      if (v("expires_at")) body.expires_at = v("expires_at") + (v("expires_at").length === 16 ? ":00Z" : "Z");
      if (v("rate") || v("token_rate") || v("cost_rate")) {
        body.limits = {};
        if (v("rate")) { body.limits.rate = Number(v("rate")); body.limits.period = v("period") || "1m"; }
        if (v("token_rate")) { body.limits.token_rate = Number(v("token_rate")); body.limits.token_period = v("token_period") || "1h"; }
        if (v("cost_rate")) { body.limits.cost_rate = Number(v("cost_rate")); body.limits.cost_period = v("cost_period") || "24h"; }
      }
      ui.fill(formMessage);
      ui.api("POST", "keys", body).then(function (created) {
        showSecret("Secret of " + created.consumer + "'s new key " + created.prefix, created.key);
        create.reset();
        return load(0);
      }).catch(function (error) {
        if (!forbidden(error)) ui.fill(formMessage, ui.message(error.message, "error"));
      });
    });

    // Off: no key API to call. The steps are docs/api-keys.md's move from header identity to keys.
    function off(mode, tokenSet) {
      // "$" + "{": this script sits in a template literal.
      var yaml = (tokenSet ? "" : "admin:\n  token: $" + "{GATEWAY_ADMIN_TOKEN}\n") + "auth:\n  mode: " + mode + "\n  api_key:\n    secret: $" + "{GATEWAY_API_KEY_SECRET}";
      return ui.el("section", { class: "card", "data-keys-off": "" },
        ui.el("h2", {}, "API keys are off"),
        ui.el("p", {}, "This gateway runs with auth.mode: " + mode + " and no auth.api_key.secret, so it neither issues nor checks API keys (its /-/keys endpoints are not served)."),
        ui.el("p", {}, "To turn them on, set auth.api_key.secret (the secret the gateway hashes keys with; keep it stable)" + (tokenSet ? "" : " and admin.token (the key API needs it)") + " in the gateway's configuration and reload it (the Config tab, or POST /-/reload):"),
        ui.el("pre", {}, yaml),
        ui.el("p", {}, "This panel then issues keys, and clients can start sending them. Once every client has one, set auth.mode: api_key and reload: from then on a request needs a key, and the key names its consumer. See API keys in the gateway's docs (docs/api-keys.md)."));
    }

    return ui.api("GET", "config").then(function (config) {
      var auth = config.auth || {};
      var mode = auth.mode || "none";
      // The running config shows a set secret as "***" and an unset one as "".
      var secretSet = Boolean(auth.api_key && auth.api_key.secret);
      if (mode !== "api_key" && !secretSet) return void root.appendChild(off(mode, Boolean(config.admin && config.admin.token)));
      if (mode !== "api_key") {
        root.appendChild(ui.message("auth.mode is " + mode + ": the gateway does not check API keys yet. Keys issued here name their callers once auth.mode is api_key (set it and reload).", "info"));
      }
      root.appendChild(secretBox);
      root.appendChild(list);
      root.appendChild(form);
      return load(0);
    });
  },
});
`,
};
