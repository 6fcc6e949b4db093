/**
 * `POST /jobs/{service_type}` (docs/design.md#job-submission). The request runs through the core
 * pipeline, so `admit` (type-level limits) happens before the body is read; this mode's `resolve`
 * streams the upload into the object store and resolves the model; its handler saves and
 * queues the job. Nothing is left half-created: every answer other than the 202 deletes
 * the uploaded file, and the record, tombstone, index entry and queue entry are one
 * atomic write.
 *
 * The file is stored under the new job's id before the model is known (the `model` field
 * may come after the file part). When `model` precedes the file, its extension and size
 * limits apply while streaming; otherwise the largest limit of the type applies while
 * streaming and the resolved model's limits are checked once the body is read.
 */
import type { Context } from "hono";
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors, GatewayError } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import { type CallerModels, EVERY_MODEL, type JobTarget } from "../../core/registry/registry.ts";
import type { SubmissionCounter } from "./metrics.ts";
import { type FilePart, type FormRules, readMultipartForm, sanitizeFilename } from "../../core/request-body/multipart-form.ts";
import type { KvJobStore } from "./store.ts";
import type { JobAccepted, JobRecord } from "../../core/jobs/types.ts";
import { checkExtension, checkSize, maxUploadBytes } from "./upload-rules.ts";

interface Upload {
  key: string;
  size: number;
  filename: string;
  mimeType: string;
}

/** The job fields read from the form (each must come once). */
const JOB_FORM: FormRules = { singleValued: new Set(["model", "operation", "callback_url"]), what: "the job" };

function validCallback(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw errors.badRequest(`callback_url "${value.slice(0, 200)}" is not an absolute URL; send an http:// or https:// address`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw errors.badRequest(`callback_url must be an http:// or https:// address, got "${url.protocol}"`);
  }
  return url.toString();
}

/** The form named a model hidden from the caller before its file part: nothing more is read. */
class HiddenModelNamed extends Error {
  constructor(readonly service: ServiceConfig) {
    super(`model "${service.model}" is hidden from the caller`);
  }
}

/** One submission: the state shared by the mode's resolve and handle steps. */
class Submission {
  readonly id: string;
  upload?: Upload;
  target?: JobTarget;
  callbackUrl?: string;
  saved = false;
  /** The models this caller sees and may use: only those are auto-selected, size the upload limit or are named in errors. */
  private caller: CallerModels = EVERY_MODEL;

  constructor(
    private readonly api: PluginApi,
    private readonly store: KvJobStore,
    private readonly counter: SubmissionCounter,
  ) {
    this.id = api.ids.newId();
  }

  async resolve(ctx: RequestContext): Promise<Response | undefined> {
    const type = ctx.serviceType;
    this.caller = this.api.modelAccess.of(ctx);
    // A type of which the caller sees no model is unknown to them: refused like a type
    // nothing serves, before the upload is read.
    const services = this.api.registry.servicesOfType(type).filter(this.caller.sees);
    if (services.length === 0) throw this.api.registry.unknownType(type, this.caller);
    for (const hook of this.store.submissionHooks) {
      const answer = await hook.beforeUpload?.(ctx);
      if (answer) return answer;
    }

    let form: Awaited<ReturnType<typeof readMultipartForm>>;
    try {
      form = await readMultipartForm(ctx.request, (part, fieldsSoFar) => this.storeFile(type, services, part, fieldsSoFar), JOB_FORM);
    } catch (error) {
      if (error instanceof HiddenModelNamed) return await this.hiddenModel(ctx, error.service);
      throw error;
    }
    if (!form.hadFile) {
      throw errors.badRequest(
        form.fields.has("file")
          ? 'the "file" field must be a file upload (a multipart part with a filename), not a text field'
          : 'missing the "file" part: send the input as multipart/form-data field "file"',
      );
    }
    this.callbackUrl = validCallback(form.fields.get("callback_url"));
    if (this.callbackUrl !== undefined) {
      // Accepting a callback nobody will send would lose the notification without a word.
      if (!this.api.has("webhooks")) {
        throw errors.badRequest(
          "callback_url is not accepted: webhooks are turned off in this deployment (plugins: {webhooks: false}); poll GET /jobs/{type}/{id} instead",
        );
      }
      // Refused targets (metadata, private networks) fail now, not at delivery time.
      const refused = await this.api.use("webhooks").validateCallbackUrl(this.callbackUrl);
      if (refused !== null) throw errors.badRequest(`callback_url is not accepted: ${refused}`);
    }
    const resolved = this.api.registry.resolveJob(type, form.fields.get("model"), form.fields.get("operation"), this.caller);
    if (!resolved.ok) throw resolved.error;
    // Before its upload rules: they would tell the caller that the model exists.
    if (!this.caller.sees(resolved.value.service)) return await this.hiddenModel(ctx, resolved.value.service);
    const upload = this.upload;
    if (!upload) throw new Error("unreachable: the file part was handled without storing it");
    checkExtension(resolved.value.service, upload.filename);
    checkSize(resolved.value.service, upload.size);
    this.target = resolved.value;
    ctx.service = resolved.value.service;
    return undefined;
  }

  async handle(ctx: RequestContext): Promise<Response> {
    const target = this.target;
    const upload = this.upload;
    if (!target || !upload) throw new Error("unreachable: handle runs after a successful resolve");
    const accepted: JobAccepted = {
      job_id: this.id,
      service_type: ctx.serviceType,
      model: this.store.modelOf(target.service),
      status: "pending",
    };
    for (const hook of this.store.submissionHooks) {
      const answer = await hook.beforeSave?.(ctx, accepted);
      if (answer) return answer;
    }
    const now = new Date(this.api.clock.now()).toISOString();
    const job: JobRecord = {
      id: this.id,
      status: "pending",
      service_type: ctx.serviceType,
      model: accepted.model,
      created_at: now,
      updated_at: now,
      consumer_name: ctx.principal.consumer,
      user_type: ctx.principal.userType,
      api_key_id: ctx.principal.keyId,
      api_key_cost_period_ms: ctx.principal.limits && ctx.principal.limits.costRate > 0 ? ctx.principal.limits.costPeriodMs : undefined,
      priority: ctx.priority,
      callback_url: this.callbackUrl,
      operation: target.operation,
      path: target.path,
      input_key: upload.key,
      filename: upload.filename,
      content_type: upload.mimeType,
      size: upload.size,
      // Looked up now, not at setup: the relay joins this request's trace when tracing is on.
      traceparent: this.api.has("tracing") ? this.api.use("tracing").traceparent() : undefined,
    };
    try {
      await this.store.create(job);
    } catch (error) {
      this.api.log.error("job_save_failed", { job_id: job.id, error });
      throw errors.storeUnavailable("the job could not be saved: the key-value store is unavailable; nothing was queued, try again");
    }
    this.saved = true;
    this.counter.submitted({ priority: job.priority, serviceType: job.service_type, model: job.model, consumer: job.consumer_name });
    this.api.emit("job.submitted", { job });
    for (const hook of this.store.submissionHooks) {
      try {
        await hook.afterSave?.(ctx, job);
      } catch (error) {
        this.api.log.error("submission_hook_failed", { hook: hook.name, job_id: job.id, error });
      }
    }
    return new Response(JSON.stringify(accepted), { status: 202, headers: { "content-type": "application/json" } });
  }

  /** The visibility stage's answer for a model hidden from the caller (the unknown model's 404, counted as hidden). */
  private async hiddenModel(ctx: RequestContext, service: ServiceConfig): Promise<Response> {
    ctx.service = service;
    return (await this.api.pipeline.runStage("visibility", ctx)) ?? this.api.modelAccess.notFound(ctx, service.model).toResponse();
  }

  /** Any answer but the 202: the uploaded file must not outlive the request. */
  async discard(): Promise<void> {
    if (this.saved || !this.upload) return;
    try {
      await this.api.objects.delete(this.upload.key);
    } catch (error) {
      this.api.log.warn("upload_cleanup_failed", { key: this.upload.key, error });
    }
  }

  private async storeFile(type: string, services: readonly ServiceConfig[], part: FilePart, fieldsSoFar: ReadonlyMap<string, string>): Promise<void> {
    const filename = sanitizeFilename(part.filename);
    const early = this.earlyService(type, fieldsSoFar.get("model"));
    if (early) checkExtension(early, filename);
    const limit = early ? maxUploadBytes(early) : Math.max(...services.map(maxUploadBytes));
    let received = 0;
    let exceeded = false;
    const counted = part.stream.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          received += chunk.byteLength;
          if (received > limit) {
            exceeded = true;
            controller.error(new Error("upload size limit reached"));
            return;
          }
          controller.enqueue(chunk);
        },
      }),
    );
    const key = this.store.keys.inputObject(this.id);
    try {
      const { size } = await this.api.objects.put(key, counted, { contentType: part.mimeType });
      this.upload = { key, size, filename, mimeType: part.mimeType };
    } catch (error) {
      if (exceeded) {
        const where = early ? `model "${early.model}"` : `service type "${type}"`;
        throw errors.tooLarge(`the file is larger than ${formatMb(limit)} MB, the max_file_size_mb of ${where}; send a smaller file`);
      }
      if (error instanceof GatewayError) throw error;
      this.api.log.error("upload_store_failed", { key, error });
      throw errors.internal("the upload could not be stored: the object store failed; no job was created, try again");
    }
  }

  /**
   * The service the `model` field names, when it came before the file. An unknown model is
   * the 404 at once, and a hidden one stops the form there too (HiddenModelNamed), for the
   * same 404: its own upload rules would tell the caller it exists.
   */
  private earlyService(type: string, model: string | undefined): ServiceConfig | undefined {
    if (model === undefined || model === "") return undefined;
    const service = this.api.registry.servicesOfType(type).find((s) => s.model === model);
    if (!service) throw this.api.registry.unknownJobModel(type, model, this.caller);
    if (!this.caller.sees(service)) throw new HiddenModelNamed(service);
    return service;
  }
}

function formatMb(bytes: number): string {
  return String(Math.round((bytes / (1024 * 1024)) * 100) / 100);
}

export function submitHandler(api: PluginApi, store: KvJobStore, counter: SubmissionCounter) {
  return async function submitJob(c: Context): Promise<Response> {
    const ctx = api.newContext(c.req.raw, "async", c.req.param("type") ?? "");
    const submission = new Submission(api, store, counter);
    const response = await api.pipeline.run(ctx, {
      resolve: (ctx) => submission.resolve(ctx),
      handle: (ctx) => submission.handle(ctx),
    });
    await submission.discard();
    return response;
  };
}
