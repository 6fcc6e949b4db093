import { Type } from "@sinclair/typebox";
import { describe, expect, it } from "vitest";
import { expandEnv, expandString } from "../../../core/config/env.ts";
import { ConfigError, formatPath, loadConfig, parseConfigFile, parseConfigText, validateConfig } from "../../../plugins/config.ts";
import { fieldsOf, type GatewayConfig } from "../../../core/config/schema.ts";
import { jobLifetimeFields } from "../../../plugins/async-jobs/config.ts";
import { idempotencyFields } from "../../../plugins/idempotency/config.ts";

/** The problems of an invalid config (fails the test when it loads). */
function problemsOf(text: string, env: Record<string, string> = {}): string[] {
  try {
    loadConfig(text, env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error("expected the config to be rejected");
}

function load(text: string, env: Record<string, string> = {}): GatewayConfig {
  return loadConfig(text, env).config;
}

describe("environment expansion", () => {
  it("expands ${VAR}, ${VAR:-default} and unset variables", () => {
    const env = { HOST: "redis.local", EMPTY: "" };
    expect(expandString("${HOST}:6379", env)).toBe("redis.local:6379");
    expect(expandString("${MISSING:-fallback}", env)).toBe("fallback");
    expect(expandString("${HOST:-fallback}", env)).toBe("redis.local");
    expect(expandString("${EMPTY:-fallback}", env)).toBe("fallback");
    expect(expandString("a${MISSING}b", env)).toBe("ab");
    expect(expandString("no reference", env)).toBe("no reference");
  });

  it("expands strings inside nested maps and lists and leaves other values alone", () => {
    expect(expandEnv({ a: ["${X}", 3, true, null], b: { c: "${X:-d}" } }, { X: "x" })).toEqual({
      a: ["x", 3, true, null],
      b: { c: "x" },
    });
  });

  it("expands references in the config file", () => {
    const config = load(
      [
        "redis:",
        "  addr: ${REDIS_ADDR}",
        "  password: ${REDIS_PASSWORD:-changeme}",
        "server:",
        "  consumer_header: ${UNSET_HEADER}",
      ].join("\n"),
      { REDIS_ADDR: "redis://cache:6379" },
    );
    expect(config.redis.addr).toBe("redis://cache:6379");
    expect(config.redis.password).toBe("changeme");
    expect(config.server.consumer_header).toBe("");
  });

  it("converts numbers and booleans that come from the environment", () => {
    const text = ["server:", '  max_body_mb: "${MB:-4}"', "redis:", "  db: ${DB}", "audit_log:", "  enabled: ${AUDIT:-false}"].join("\n");
    const defaulted = load(text, { DB: "2" });
    expect(defaulted.server.max_body_mb).toBe(4);
    expect(defaulted.redis.db).toBe(2);
    expect(defaulted.audit_log.enabled).toBe(false);
    const set = load(text, { MB: "16", DB: "0", AUDIT: "true" });
    expect(set.server.max_body_mb).toBe(16);
    expect(set.audit_log.enabled).toBe(true);
  });

  it("keeps a secret containing YAML syntax as one string value", () => {
    const secret = 'p4ss: word\nserver: {addr: ":1"} # "quoted"';
    const config = load(["redis:", "  password: ${SECRET}", "webhooks:", "  signing_secret: ${SECRET}"].join("\n"), { SECRET: secret });
    expect(config.redis.password).toBe(secret);
    expect(config.webhooks.signing_secret).toBe(secret);
    expect(config.server.addr).toBe(":8080");
  });
});

describe("defaults (docs/design.md#services and docs/design.md#other-settings)", () => {
  it("fills every documented default when the file is empty", () => {
    const config = load("");
    expect(config.server).toMatchObject({
      addr: ":8080",
      read_timeout: "120s",
      write_timeout: "0s",
      idle_timeout: "120s",
      max_body_mb: 1,
      consumer_header: "",
      priority_header: "",
      user_type_header: "",
    });
    expect(config.metrics).toEqual({ top_consumers: 0, consumer_labels: false, default_metrics: true });
    expect(config.rate_limits).toEqual({});
    expect(config.redis).toMatchObject({ addr: "", password: "", db: 0, pending_max_age: "" });
    expect(config.object_store.encryption.key).toBe("");
    expect(fieldsOf(config, jobLifetimeFields).persists_result).toBe(false);
    expect(fieldsOf(config, jobLifetimeFields).job_ttl).toEqual({ global: "", completed: "", pending: "", failed: "" });
    expect(config.lifecycle.gc).toEqual({ enabled: false, interval: "15m", orphan_min_age: "5m", max_reap_attempts: 3 });
    expect(config.webhooks).toMatchObject({ max_retries: 3, retry_backoff: "30s", max_backoff: "10m", signing_secret: "" });
    expect(config.jobs).toEqual({ idempotency_ttl: "24h", expired_marker_ttl: "168h" });
    expect(config.usage.retention).toBe("");
    expect(config.policies).toBeUndefined();
    expect(config.auth.mode).toBe("none");
    expect(config.audit_log.enabled).toBe(false);
    expect(config.opentelemetry).toMatchObject({
      enabled: false,
      service_name: "svc/gateway",
      exporter: { endpoint: "", insecure: false, headers: {} },
      traces: { enabled: true, sample_ratio: 1, ignore_paths: ["/health", "/metrics", "/docs", "/openapi.yaml"] },
      metrics: { enabled: false, interval: "60s" },
      logs: { enabled: false },
    });
    expect(config.services).toEqual([]);
  });

  it("treats a file of only comments like an empty file", () => {
    expect(load("# nothing configured yet\n").server.addr).toBe(":8080");
  });

  it("fills the service and backend defaults", () => {
    const config = load(["services:", "  - type: ocr", "    backends:", "      - url: http://ocr:9000"].join("\n"));
    expect(config.services[0]).toMatchObject({
      type: "ocr",
      model: "",
      default: false,
      operations: {},
      inference_url: "",
      accepted_exts: [],
      max_file_size_mb: 100,
      inference_headers: {},
      provider: "",
      backend_model: "",
      response_cache_ttl: 0,
      max_concurrent_sync: 0,
      priority_reserved_sync: 0,
      token_limits: {},
      swagger_url: "",
      swagger_headers: {},
      deprecated: false,
    });
    expect(config.services[0].visibility).toBeUndefined();
    expect(config.services[0].backends).toEqual([
      {
        url: "http://ocr:9000",
        weight: 1,
        model: "",
        headers: {},
        provider: "",
        api_key: "",
        region: "",
        project: "",
        location: "",
        credentials_file: "",
        resource: "",
        deployment: "",
        api_version: "",
      },
    ]);
  });

  it("fills the rate limit and token limit fields a user leaves out", () => {
    const config = load(
      [
        "rate_limits:",
        "  llm:",
        '    "*":',
        "      rate: 60",
        "services:",
        "  - type: llm",
        "    model: small",
        "    token_limits:",
        "      free:",
        "        token_rate: 1000",
      ].join("\n"),
    );
    expect(config.rate_limits.llm["*"]).toEqual({
      rate: 60,
      period: "1m",
      token_rate: 0,
      token_period: "1m",
      max_concurrent: 0,
      processing_time: 0,
      processing_period: "1h",
      cost_rate: 0,
      cost_period: "24h",
    });
    expect(config.services[0].token_limits.free).toEqual({ token_rate: 1000, token_period: "1m", cost_rate: 0, cost_period: "24h" });
  });

  it("replaces the default ignore_paths list when one is set", () => {
    const config = load(["opentelemetry:", "  traces:", "    ignore_paths: [/internal]"].join("\n"));
    expect(config.opentelemetry.traces.ignore_paths).toEqual(["/internal"]);
  });

  it("keeps values that are set", () => {
    const config = load(["server:", '  addr: "127.0.0.1:9000"', "  read_timeout: 1m30s", "jobs:", "  expired_marker_ttl: 8760h"].join("\n"));
    expect(config.server.addr).toBe("127.0.0.1:9000");
    expect(config.server.read_timeout).toBe("1m30s");
    expect(config.server.idle_timeout).toBe("120s");
    expect(config.jobs.expired_marker_ttl).toBe("8760h");
  });
});

describe("problems", () => {
  it("lists every mistake of the file, each with its path", () => {
    const problems = problemsOf(
      [
        "server:",
        "  read_timout: 30s",
        "webhooks:",
        "  max_retries: many",
        "services:",
        "  - type: a",
        "  - type: b",
        "  - type: c",
        "    backends:",
        "      - weight: 2",
      ].join("\n"),
    );
    expect(problems).toHaveLength(3);
    expect(problems).toContain("services[2].backends[0].url: required (only an LLM provider can give a backend its address)");
    expect(problems).toContainEqual(expect.stringMatching(/^server\.read_timout: unknown key/));
    expect(problems).toContainEqual(expect.stringMatching(/^webhooks\.max_retries: expected integer, got "many"$/));
  });

  it("the thrown error's message lists the problems too", () => {
    expect(() => loadConfig("services:\n  - model: m\n", {})).toThrow(/invalid configuration:\n {2}services\[0\]\.type: required/);
  });

  it("names the path of an unknown key and the allowed key it is a misspelling of, at the top level, in a section and in a service", () => {
    expect(problemsOf("servics: []\n")).toEqual(['servics: unknown key; did you mean "services"?']);
    expect(problemsOf("webhooks:\n  timout: 5s\n")).toEqual(['webhooks.timout: unknown key; did you mean "timeout"?']);
    expect(problemsOf("services:\n  - type: a\n    oprations: { run: [/run] }\n")).toEqual(['services[0].oprations: unknown key; did you mean "operations"?']);
    // A plugin's per-service field is suggested like a core one; two swapped letters are one edit.
    expect(problemsOf("services:\n  - type: a\n    rerty: {}\n")).toEqual(['services[0].rerty: unknown key; did you mean "retry"?']);
    expect(problemsOf("services:\n  - type: a\n    retry: { attempts: 2 }\n")).toEqual([
      'services[0].retry.attempts: unknown key; did you mean "max_attempts"?',
    ]);
  });

  it("lists the keys allowed there when no key is close to the unknown one", () => {
    expect(problemsOf("server:\n  colour: blue\n")).toEqual([
      "server.colour: unknown key; the keys allowed here: addr, read_timeout, write_timeout, idle_timeout, backend_timeout, max_body_mb, consumer_header, priority_header, user_type_header, workers",
    ]);
  });

  it("names the path of a duration with days and asks for hours", () => {
    const problems = problemsOf("jobs:\n  expired_marker_ttl: 7d\nusage:\n  retention: 1d12h\n");
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^jobs\.expired_marker_ttl: invalid duration "7d": the "d" suffix is not supported, use hours/);
    expect(problems[1]).toMatch(/^usage\.retention: invalid duration "1d12h": .*use hours/);
  });

  it("names the path of a duration without a unit", () => {
    expect(problemsOf("webhooks:\n  retry_backoff: 30\n")).toEqual([
      expect.stringMatching(/^webhooks\.retry_backoff: invalid duration "30": use a number with a unit/),
    ]);
  });

  it("lists the allowed values of an enumeration", () => {
    expect(problemsOf("auth:\n  mode: ldap\n")).toEqual(['auth.mode: must be one of "none", "proxy", "oauth2", "api_key", got "ldap"']);
  });

  it("names each kind of value a union takes", () => {
    for (const value of ["0", "two", "-3"]) {
      expect(problemsOf(`server:\n  workers: ${value}\n`)).toEqual([
        `server.workers: must be an integer of at least 1 or "auto", got ${/^-?\d+$/.test(value) ? value : `"${value}"`}`,
      ]);
    }
    expect(load("server:\n  workers: auto\n").server.workers).toBe("auto");
    expect(load("services: []\n").server.workers).toBe(1);
  });

  it("reports a value out of range with the value given", () => {
    expect(problemsOf("opentelemetry:\n  traces:\n    sample_ratio: 2\n")).toEqual([
      expect.stringMatching(/^opentelemetry\.traces\.sample_ratio: .*1, got 2$/),
    ]);
  });

  it("rejects an encryption key of the wrong length, naming the path", () => {
    const problems = problemsOf("object_store:\n  encryption:\n    key: ${KEY}\n", { KEY: "ab".repeat(16) });
    expect(problems).toEqual(["object_store.encryption.key: must be 64 hex characters (32 bytes), got 32 characters"]);
  });

  it("rejects an encryption key that is not hex, and accepts a valid one", () => {
    expect(problemsOf("object_store:\n  encryption:\n    key: ${KEY}\n", { KEY: "zz".repeat(32) })).toEqual([
      expect.stringMatching(/^object_store\.encryption\.key: must be 64 hex characters/),
    ]);
    const key = "0123456789abcdef".repeat(4);
    expect(load("object_store:\n  encryption:\n    key: ${KEY}\n", { KEY: key }).object_store.encryption.key).toBe(key);
  });

  it("rejects policies without an auth mode", () => {
    expect(problemsOf("policies:\n  default: allow\n")).toEqual([
      "policies: set, but auth.mode is none; set auth.mode to proxy or oauth2 (policies need an authenticated principal)",
    ]);
    expect(load("auth:\n  mode: proxy\npolicies:\n  default: allow\n").policies?.default).toBe("allow");
  });

  it("rejects a second default model for the same type, naming both entries", () => {
    const text = [
      "services:",
      "  - {type: llm, model: a, default: true}",
      "  - {type: ocr, model: b, default: true}",
      "  - {type: llm, model: c, default: true}",
    ].join("\n");
    expect(problemsOf(text)).toEqual(['services[2].default: type "llm" already has a default model at services[0]']);
  });

  it("rejects the same model twice for a type, but allows it for another type", () => {
    const text = ["services:", "  - {type: llm, model: a}", "  - {type: ocr, model: a}", "  - {type: llm, model: a}"].join("\n");
    expect(problemsOf(text)).toEqual(['services[2].model: "a" is already defined for type "llm" at services[0]']);
  });

  it("checks backend addresses and rate limit windows", () => {
    const text = [
      "rate_limits:",
      "  llm:",
      "    free: {rate: 5, period: 0s}",
      "services:",
      "  - type: llm",
      "    backends: [{url: 'ftp://x'}]",
    ].join("\n");
    expect(problemsOf(text)).toEqual([
      "services[0].backends[0].url: must start with http:// or https://",
      "rate_limits.llm.free.period: must be positive when rate is set",
    ]);
  });

  it("accepts a service without model or without operations, as docs/design.md#services allows", () => {
    // Alone of its type: POST /jobs/asr with no model reaches it; no operations = async only.
    expect(load("services:\n  - type: asr\n").services[0]).toMatchObject({ model: "", operations: {} });
    // The type's default, or alone on one of its paths: a request without a model reaches it.
    const services = (withoutModel: string) =>
      `services:\n  - { type: chat, model: a, operations: { chat: [/v1/chat] } }\n  - { type: chat, ${withoutModel} }\n`;
    expect(load(services("default: true")).services[1].model).toBe("");
    expect(load(services("operations: { embed: [/v1/embed] }")).services[1].model).toBe("");
  });

  it("refuses a service without model that no request can reach: not alone of its type, not the default, alone on none of its paths", () => {
    const text = [
      "services:",
      "  - { type: chat, model: a, default: true, operations: { chat: [/v1/chat, '/v1/{model}/chat'] } }",
      "  - { type: chat, operations: { chat: [/v1/chat, '/v1/{model}/chat'] } }",
      "  - { type: asr, model: w }",
    ].join("\n");
    expect(problemsOf(text)).toEqual([
      'services[1].model: missing, and type "chat" has other services: a service without a model is chosen only as its type\'s default or as the only service on one of its paths, and this one is neither, so no request can reach it; set model (or default: true)',
    ]);
  });

  it("reports a YAML syntax error as a ConfigError mentioning YAML", () => {
    const problems = problemsOf("server:\n  addr: [oops\n");
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^line \d+, column \d+: YAML syntax: /);
    expect(() => parseConfigText("a: [1,\n b: }", {})).toThrow(ConfigError);
  });

  it("names the line and column of a YAML syntax error and quotes that line, with no dangling colon", () => {
    const problems = problemsOf("services:\n  - type: chat\n   model: a\n");
    expect(problems).toEqual(['line 3, column 1: YAML syntax: Sequence item without - indicator (the line reads "   model: a")']);
  });

  it("refuses a config file that is empty or holds only whitespace and comments, naming the fix", () => {
    for (const text of ["", "   \n\n", "# being edited\n\n# more\n", "---\n"]) {
      let problems: string[] = [];
      try {
        parseConfigFile(text, {});
      } catch (error) {
        problems = (error as ConfigError).problems;
      }
      expect(problems, JSON.stringify(text)).toEqual([expect.stringMatching(/^\(root\): the file is empty .*"services: \[\]"/)]);
    }
    // The smallest file a gateway with no services runs on.
    expect(parseConfigFile("services: []\n", {})).toEqual({ services: [] });
    expect(parseConfigFile("{}\n", {})).toEqual({});
  });

  it("checks server.addr, which a start and a reload refuse alike", () => {
    for (const addr of ["not-an-addr", ":99999", "127.0.0.1:", "host:port", ":-1"]) {
      expect(problemsOf(`server:\n  addr: "${addr}"\n`), addr).toEqual([
        `server.addr: "${addr}" is not host:port or :port (e.g. ":8080" or "127.0.0.1:8080", port 0-65535)`,
      ]);
    }
    for (const addr of [":8080", "127.0.0.1:9000", "[::1]:9000", "localhost:0", "8080"]) {
      expect(load(`server:\n  addr: "${addr}"\n`).server.addr, addr).toBe(addr);
    }
  });

  it('checks relay.metrics_addr like server.addr; "" (the default) means no listener', () => {
    expect(load("{}\n").relay.metrics_addr).toBe("");
    for (const addr of ["not-an-addr", ":99999", "127.0.0.1:", "host:port"]) {
      expect(problemsOf(`relay:\n  metrics_addr: "${addr}"\n`), addr).toEqual([
        `relay.metrics_addr: "${addr}" is not host:port or :port (e.g. ":8080" or "127.0.0.1:8080", port 0-65535)`,
      ]);
    }
    for (const addr of ["", ":9091", "127.0.0.1:9091", "[::1]:9091"]) {
      expect(load(`relay:\n  metrics_addr: "${addr}"\n`).relay.metrics_addr, addr).toBe(addr);
    }
  });

  it("refuses 0s for durations whose zero the spec gives no meaning, naming the key and the default", () => {
    const problems = problemsOf('jobs:\n  idempotency_ttl: 0s\n  expired_marker_ttl: ""\nwebhooks:\n  timeout: "0"\n');
    expect(problems).toEqual([
      expect.stringMatching(/^jobs\.idempotency_ttl: must be a positive duration, got "0s" \(default "24h"/),
      expect.stringMatching(/^jobs\.expired_marker_ttl: must be a positive duration, got "" \(default "168h": .*never answer 410/),
      expect.stringMatching(/^webhooks\.timeout: must be a positive duration, got "0" \(default "10s"/),
    ]);
    const config = load("jobs:\n  idempotency_ttl: 1s\n  expired_marker_ttl: 1ms\nwebhooks:\n  timeout: 500ms\n");
    expect([fieldsOf(config, idempotencyFields).idempotency_ttl, config.jobs.expired_marker_ttl, config.webhooks.timeout]).toEqual(["1s", "1ms", "500ms"]);
  });

  it("bounds every Redis reply: redis.command_timeout defaults to 500ms and must be a positive duration", () => {
    expect(load("").redis.command_timeout).toBe("500ms");
    expect(load("redis:\n  command_timeout: 2s\n").redis.command_timeout).toBe("2s");
    expect(problemsOf("redis:\n  command_timeout: 0s\n")).toEqual([
      expect.stringMatching(/^redis\.command_timeout: must be a positive duration, got "0s" \(default "500ms": .*frozen Redis/),
    ]);
    expect(problemsOf("redis:\n  command_timeout: soon\n")).toEqual([expect.stringMatching(/^redis\.command_timeout: /)]);
  });

  it("rejects a file whose root is not a mapping", () => {
    expect(problemsOf("- just\n- a list\n")).toEqual(["(root): expected a mapping of sections (server:, services:, ...)"]);
  });

  it("formats JSON pointers as config paths", () => {
    expect(formatPath("/services/2/backends/0/url")).toBe("services[2].backends[0].url");
    expect(formatPath("/rate_limits/a~1b/*")).toBe("rate_limits.a/b.*");
    expect(formatPath("")).toBe("(root)");
  });
});

describe("the loaded config", () => {
  it("is deeply frozen", () => {
    const config = load("services:\n  - type: a\n    backends: [{url: 'http://a'}]\n");
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      (config.server as { addr: string }).addr = ":1";
    }).toThrow(TypeError);
    expect(() => {
      (config.services as unknown as unknown[]).push({});
    }).toThrow(TypeError);
    expect(() => {
      (config.services[0].backends[0] as { weight: number }).weight = 5;
    }).toThrow(TypeError);
    expect(config.server.addr).toBe(":8080");
  });
});

describe("plugin sections", () => {
  const section = {
    key: "greeter",
    schema: Type.Object(
      {
        greeting: Type.String({ default: "hello" }),
        times: Type.Integer({ minimum: 1, default: 1 }),
      },
      { additionalProperties: false, default: {} },
    ),
  };

  it("accepts the section key at the root, converts and defaults its values", () => {
    const result = validateConfig({ greeter: { times: "3" } }, [section]);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.extra.greeter).toEqual({ greeting: "hello", times: 3 });
    expect("greeter" in result.config).toBe(false);
    expect(Object.isFrozen(result.extra.greeter)).toBe(true);
  });

  it("defaults an absent section", () => {
    const result = validateConfig({}, [section]);
    expect(result.ok && result.extra.greeter).toEqual({ greeting: "hello", times: 1 });
  });

  it("reports the section's problems with the section path, together with core problems", () => {
    const result = validateConfig({ greeter: { times: 0, volume: 11 }, server: { adr: ":1" } }, [section]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toHaveLength(3);
    expect(result.problems).toContainEqual(expect.stringMatching(/^server\.adr: unknown key/));
    expect(result.problems).toContainEqual(expect.stringMatching(/^greeter\.times: expected integer to be greater or equal to 1, got 0$/));
    expect(result.problems).toContainEqual(expect.stringMatching(/^greeter\.volume: unknown key/));
  });

  it("is an unknown key when no plugin declares it", () => {
    const result = validateConfig({ greeter: {} });
    expect(result.ok ? [] : result.problems).toEqual([expect.stringMatching(/^greeter: unknown key; the keys allowed here: server, metrics, .*services/)]);
  });

  it("suggests a section of a plugin loaded at run time for a misspelt top-level key", () => {
    const result = validateConfig({ greetr: {} }, [section]);
    expect(result.ok ? [] : result.problems).toEqual(['greetr: unknown key; did you mean "greeter"?']);
  });

  it("loadConfig passes sections through", () => {
    expect(loadConfig("greeter:\n  greeting: ${G}\n", { G: "hi" }, [section]).extra.greeter).toEqual({ greeting: "hi", times: 1 });
  });
});
