import { describe, expect, it } from "vitest";
import { validateConfig } from "../../../plugins/config.ts";
import { type PathMatch, Registry, type Resolution } from "../../../core/registry/registry.ts";

/** A registry over services that went through config validation, so defaults apply. */
function registryOf(services: Array<Record<string, unknown>>): Registry {
  const result = validateConfig({ services });
  if (!result.ok) throw new Error(`invalid test config: ${result.problems.join("; ")}`);
  return new Registry(result.config.services);
}

function valueOf<T>(resolution: Resolution<T>): T {
  if (!resolution.ok) throw new Error(`expected success, got ${resolution.error.status}: ${resolution.error.message}`);
  return resolution.value;
}

function errorOf<T>(resolution: Resolution<T>): { status: number; type: string; message: string } {
  if (resolution.ok) throw new Error("expected an error");
  const { status, type, message } = resolution.error;
  return { status, type, message };
}

function mustMatch(registry: Registry, path: string): PathMatch {
  const match = registry.matchPath(path);
  if (!match) throw new Error(`no match for ${path}`);
  return match;
}

describe("Registry.matchPath", () => {
  const registry = registryOf([
    { type: "llm", model: "chat-small", operations: { chat: ["/v1/chat/completions"] } },
    { type: "llm", model: "chat-large", default: true, operations: { chat: ["/v1/chat/completions"] } },
    { type: "proxy", model: "anything", operations: { all: ["/v1/*"] } },
    { type: "proxy", model: "deep", operations: { all: ["/v1/audio/*"] } },
    { type: "triton", model: "resnet", operations: { infer: ["/v2/models/{model}/infer"] } },
    { type: "triton", model: "bert", operations: { infer: ["/v2/models/{model}/infer"] } },
  ]);

  it("matches an exact path with every service configured on it", () => {
    const match = mustMatch(registry, "/v1/chat/completions");
    expect(match.pattern).toBe("/v1/chat/completions");
    expect(match.services.map((s) => s.model)).toEqual(["chat-small", "chat-large"]);
    expect(match.modelFromPath).toBeUndefined();
  });

  it("prefers an exact path over a wildcard covering it", () => {
    expect(mustMatch(registry, "/v1/chat/completions").pattern).toBe("/v1/chat/completions");
  });

  it("matches every path under a wildcard prefix, and nothing outside it", () => {
    expect(mustMatch(registry, "/v1/a/b").pattern).toBe("/v1/*");
    expect(mustMatch(registry, "/v1/embeddings").pattern).toBe("/v1/*");
    expect(mustMatch(registry, "/v1/chat/completions/extra").pattern).toBe("/v1/*");
    expect(registry.matchPath("/v2/x")).toBeUndefined();
    expect(registry.matchPath("/v1x/a")).toBeUndefined();
  });

  it("lets the longest wildcard win", () => {
    const match = mustMatch(registry, "/v1/audio/transcriptions");
    expect(match.pattern).toBe("/v1/audio/*");
    expect(match.services.map((s) => s.model)).toEqual(["deep"]);
  });

  it("picks the longest wildcard whatever the config order", () => {
    const reversed = registryOf([
      { type: "a", model: "deep", operations: { x: ["/api/v1/*"] } },
      { type: "a", model: "shallow", operations: { x: ["/api/*"] } },
    ]);
    expect(mustMatch(reversed, "/api/v1/x").services[0].model).toBe("deep");
    expect(mustMatch(reversed, "/api/v2/x").services[0].model).toBe("shallow");
  });

  it("captures the {model} segment of a template", () => {
    const match = mustMatch(registry, "/v2/models/resnet/infer");
    expect(match.pattern).toBe("/v2/models/{model}/infer");
    expect(match.modelFromPath).toBe("resnet");
    expect(match.services.map((s) => s.model)).toEqual(["resnet", "bert"]);
  });

  it("decodes the {model} segment and does not let it span segments", () => {
    expect(mustMatch(registry, "/v2/models/org%2Fmodel/infer").modelFromPath).toBe("org/model");
    expect(registry.matchPath("/v2/models/a/b/infer")).toBeUndefined();
    expect(registry.matchPath("/v2/models//infer")).toBeUndefined();
  });

  it("answers undefined for a path no service serves", () => {
    expect(registry.matchPath("/")).toBeUndefined();
    expect(registry.matchPath("/v3/anything")).toBeUndefined();
  });

  it("answers undefined when no service has operations", () => {
    expect(registryOf([{ type: "a" }]).matchPath("/v1/x")).toBeUndefined();
  });
});

describe("Registry.resolveSync (docs/design.md#model-resolution)", () => {
  const registry = registryOf([
    { type: "llm", model: "small", operations: { chat: ["/v1/chat/completions"] } },
    { type: "llm", model: "large", operations: { chat: ["/v1/chat/completions"] } },
    { type: "emb", model: "embed", operations: { embed: ["/v1/embeddings"] } },
    { type: "llm", model: "mini", operations: { complete: ["/v1/completions"] } },
    { type: "llm", model: "maxi", default: true, operations: { complete: ["/v1/completions"] } },
    { type: "triton", model: "resnet", operations: { infer: ["/v2/models/{model}/infer"] } },
    { type: "triton", model: "bert", operations: { infer: ["/v2/models/{model}/infer"] } },
  ]);
  const resolve = (path: string, model?: string) => registry.resolveSync(mustMatch(registry, path), model, { method: "POST", path });

  it("picks the service named by the body's model", () => {
    expect(valueOf(resolve("/v1/chat/completions", "large")).model).toBe("large");
    expect(valueOf(resolve("/v1/chat/completions", "small")).model).toBe("small");
  });

  it("answers 404 for an unknown model, listing the models of that path only", () => {
    expect(errorOf(resolve("/v1/chat/completions", "gpt-9"))).toEqual({
      status: 404,
      type: "not_found_error",
      message: 'model "gpt-9" is not available on /v1/chat/completions; available models: small, large',
    });
  });

  it("answers 404 for a model configured on another path", () => {
    expect(errorOf(resolve("/v1/chat/completions", "embed")).status).toBe(404);
  });

  it("uses the only service of the path when no model is given", () => {
    expect(valueOf(resolve("/v1/embeddings")).model).toBe("embed");
    expect(valueOf(resolve("/v1/embeddings", "")).model).toBe("embed");
  });

  it("uses the default service when no model is given", () => {
    expect(valueOf(resolve("/v1/completions")).model).toBe("maxi");
    expect(valueOf(resolve("/v1/completions", "mini")).model).toBe("mini");
  });

  it("answers 400 listing the models when none is given, several serve the path and none is the default", () => {
    expect(errorOf(resolve("/v1/chat/completions"))).toEqual({
      status: 400,
      type: "invalid_request_error",
      message: 'several models serve /v1/chat/completions and none is the default; set "model" to one of: small, large',
    });
  });

  it("takes the model from the {model} path segment, before the body's model", () => {
    expect(valueOf(resolve("/v2/models/bert/infer")).model).toBe("bert");
    expect(valueOf(resolve("/v2/models/resnet/infer", "bert")).model).toBe("resnet");
  });

  it("answers 404 for an unknown {model} segment, listing the models", () => {
    expect(errorOf(resolve("/v2/models/gpt/infer"))).toEqual({
      status: 404,
      type: "not_found_error",
      message: 'model "gpt" is not available on /v2/models/gpt/infer; available models: resnet, bert',
    });
  });
});

describe("Registry.resolveJob (docs/design.md#model-resolution)", () => {
  const registry = registryOf([
    { type: "ocr", model: "tesseract", operations: { scan: ["/scan", "/scan/v2"] } },
    { type: "asr", model: "whisper-s", operations: { transcribe: ["/transcribe"] } },
    { type: "asr", model: "whisper-l", default: true, operations: { transcribe: ["/asr/transcribe"], translate: ["/asr/translate", "/x"] } },
    { type: "img", model: "sd", operations: { generate: ["/gen"] } },
    { type: "img", model: "flux", operations: { generate: ["/gen"] } },
    { type: "raw", model: "plain" },
  ]);

  it("answers 404 for an unknown type, listing the configured types", () => {
    expect(errorOf(registry.resolveJob("video", undefined, undefined))).toEqual({
      status: 404,
      type: "not_found_error",
      message: 'unknown service type "video"; configured types: ocr, asr, img, raw',
    });
  });

  it("answers 404 for a type named like an object property", () => {
    expect(errorOf(registry.resolveJob("constructor", undefined, undefined)).status).toBe(404);
  });

  it("auto-selects the only model of a type, and its only operation", () => {
    expect(valueOf(registry.resolveJob("ocr", undefined, undefined))).toMatchObject({
      service: { model: "tesseract" },
      operation: "scan",
      path: "/scan",
    });
  });

  it("answers with an empty operation for a model without operations", () => {
    expect(valueOf(registry.resolveJob("raw", undefined, undefined))).toMatchObject({ service: { model: "plain" }, operation: "", path: "" });
  });

  it("uses the default model when none is given", () => {
    expect(valueOf(registry.resolveJob("asr", undefined, "translate"))).toMatchObject({ service: { model: "whisper-l" } });
  });

  it("answers 400 listing the models when several serve the type and none is the default", () => {
    expect(errorOf(registry.resolveJob("img", undefined, undefined))).toEqual({
      status: 400,
      type: "invalid_request_error",
      message: 'several models serve service type "img" and none is the default; set "model" to one of: sd, flux',
    });
  });

  it("picks the requested model", () => {
    expect(valueOf(registry.resolveJob("img", "flux", undefined)).service.model).toBe("flux");
    expect(valueOf(registry.resolveJob("asr", "whisper-s", undefined))).toMatchObject({
      service: { model: "whisper-s" },
      operation: "transcribe",
      path: "/transcribe",
    });
  });

  it("answers 404 for an unknown model, listing the models of the type", () => {
    expect(errorOf(registry.resolveJob("img", "dalle", undefined))).toEqual({
      status: 404,
      type: "not_found_error",
      message: 'model "dalle" is not available for service type "img"; available models: sd, flux',
    });
  });

  it("answers 404 for a model of another type", () => {
    expect(errorOf(registry.resolveJob("img", "tesseract", undefined)).status).toBe(404);
  });

  it("answers 400 listing the operations when the model has several and none is chosen", () => {
    expect(errorOf(registry.resolveJob("asr", "whisper-l", undefined))).toEqual({
      status: 400,
      type: "invalid_request_error",
      message: 'model "whisper-l" has several operations; choose one with the "operation" field: transcribe, translate',
    });
    expect(errorOf(registry.resolveJob("asr", undefined, "")).status).toBe(400);
  });

  it("answers 400 listing the operations for an unknown operation", () => {
    expect(errorOf(registry.resolveJob("asr", "whisper-l", "summarize"))).toEqual({
      status: 400,
      type: "invalid_request_error",
      message: 'unknown operation "summarize" for model "whisper-l"; available operations: transcribe, translate',
    });
    expect(errorOf(registry.resolveJob("raw", undefined, "scan")).message).toBe(
      'unknown operation "scan" for model "plain"; available operations: (none)',
    );
  });

  it.each(["constructor", "toString", "__proto__", "hasOwnProperty"])("answers 400 for the operation name %j", (operation) => {
    expect(errorOf(registry.resolveJob("asr", "whisper-l", operation)).status).toBe(400);
  });

  it("uses the first path of the chosen operation", () => {
    expect(valueOf(registry.resolveJob("asr", "whisper-l", "translate"))).toMatchObject({ operation: "translate", path: "/asr/translate" });
    expect(valueOf(registry.resolveJob("ocr", undefined, "scan"))).toMatchObject({ operation: "scan", path: "/scan" });
  });
});

describe("resolution for one caller (docs/design.md#model-resolution, docs/design.md#model-visibility)", () => {
  const registry = registryOf([
    { type: "emb", model: "emb-pub", operations: { e: ["/v1/embeddings"] } },
    { type: "emb", model: "emb-hidden", default: true, operations: { e: ["/v1/embeddings"] } },
    { type: "tts", model: "voice-pub", operations: { e: ["/v1/tts"] } },
    { type: "tts", model: "voice-hidden", operations: { e: ["/v1/tts"] } },
    { type: "tts", model: "voice-denied", operations: { e: ["/v1/tts"] } },
    { type: "solo", model: "solo-hidden", operations: { e: ["/v1/solo"] } },
  ]);
  // Hidden models do not exist for this caller; a denied one exists (a policy answers 403) but is not offered.
  const sees = (s: { model: string }) => !s.model.endsWith("-hidden");
  const caller = { sees, mayUse: (s: { model: string }) => sees(s) && !s.model.endsWith("-denied") };
  const sync = (path: string, model?: string) => registry.resolveSync(mustMatch(registry, path), model, { method: "POST", path }, caller);
  const notFound = (message: string) => ({ status: 404, type: "not_found_error", message });

  it("auto-selects among the models the caller sees: a hidden default or a hidden second model does not count", () => {
    expect(valueOf(sync("/v1/embeddings")).model).toBe("emb-pub");
    expect(valueOf(registry.resolveJob("emb", undefined, undefined, caller)).service.model).toBe("emb-pub");
    // voice-denied exists for the caller: two candidates, no default.
    expect(errorOf(sync("/v1/tts")).message).toBe('several models serve /v1/tts and none is the default; set "model" to one of: voice-pub');
  });

  it("still finds a hidden model named outright (the visibility stage answers it)", () => {
    expect(valueOf(sync("/v1/embeddings", "emb-hidden")).model).toBe("emb-hidden");
    expect(valueOf(registry.resolveJob("solo", "solo-hidden", undefined, caller)).service.model).toBe("solo-hidden");
  });

  it("answers an unknown model with model_not_found, listing only the models the caller may use", () => {
    expect(errorOf(sync("/v1/tts", "nope"))).toEqual(notFound('model "nope" is not available on /v1/tts; available models: voice-pub'));
    expect(registry.unknownSyncModel(mustMatch(registry, "/v1/tts"), "nope", { method: "POST", path: "/v1/tts" }, caller).code).toBe("model_not_found");
    expect(errorOf(registry.resolveJob("tts", "nope", undefined, caller))).toEqual(
      notFound('model "nope" is not available for service type "tts"; available models: voice-pub'),
    );
    expect(registry.unknownJobModel("tts", "nope", caller).code).toBe("model_not_found");
  });

  it("names a model on a path where the caller may use none: model_not_found listing none; without a model, no route", () => {
    expect(errorOf(sync("/v1/solo", "other"))).toEqual(notFound('model "other" is not available on /v1/solo; available models: (none)'));
    expect(errorOf(sync("/v1/solo"))).toEqual(notFound("no route for POST /v1/solo"));
  });

  it("answers a job type whose every model is hidden like one nothing serves, naming nothing hidden", () => {
    const unknownType = notFound('unknown service type "solo"; configured types: emb, tts');
    expect(errorOf(registry.resolveJob("solo", undefined, undefined, caller))).toEqual(unknownType);
    expect(errorOf(registry.resolveJob("solo", "other", undefined, caller))).toEqual(unknownType);
    expect(registry.unknownJobModel("solo", "solo-hidden", caller).message).toBe(unknownType.message);
    expect(errorOf(registry.resolveJob("video", undefined, undefined, caller)).message).toBe('unknown service type "video"; configured types: emb, tts');
  });
});

describe("Registry lookups", () => {
  const registry = registryOf([
    { type: "llm", model: "a" },
    { type: "ocr" },
    { type: "llm", model: "b" },
  ]);

  it("lists types, services of a type and models in config order", () => {
    expect(registry.serviceTypes()).toEqual(["llm", "ocr"]);
    expect(registry.servicesOfType("llm").map((s) => s.model)).toEqual(["a", "b"]);
    expect(registry.servicesOfType("none")).toEqual([]);
    expect(registry.models().map((s) => s.model)).toEqual(["a", "b"]);
    expect(registry.findModel("b")?.type).toBe("llm");
    expect(registry.findModel("c")).toBeUndefined();
  });
});
