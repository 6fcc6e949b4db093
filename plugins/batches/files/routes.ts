/**
 * The OpenAI Files endpoints, for batch input and output files: upload (multipart `file` +
 * `purpose`), list, retrieve, download and delete. A create answers 200 with the File object,
 * as OpenAI's does.
 */
import { errors, GatewayError } from "../../../core/errors.ts";
import type { PluginApi } from "../../../core/plugins/types.ts";
import { type FilePart, type FormRules, readMultipartForm, sanitizeFilename } from "../../../core/request-body/multipart-form.ts";
import { answering, type Caller, identifyCaller, json, listLimit } from "../caller.ts";
import { idTime } from "../ids.ts";
import { capped } from "../upload-cap.ts";
import { type FilePurpose, type FileRecord, type FileStore, fileView, UPLOAD_PURPOSES } from "./store.ts";

const FILE_FORM: FormRules = { singleValued: new Set(["purpose"]), what: "the file" };
const MIB = 1024 * 1024;
const LIST_DEFAULT = 100;
const LIST_MAX = 10_000;

function purposeProblem(purpose: string | undefined): GatewayError | undefined {
  if (purpose !== undefined && (UPLOAD_PURPOSES as readonly string[]).includes(purpose)) return undefined;
  const got = purpose === undefined || purpose === "" ? 'no "purpose" field' : `purpose "${purpose.slice(0, 50)}"`;
  return errors.badRequest(`${got}: this gateway accepts files for the batch API only; send purpose ${UPLOAD_PURPOSES.map((p) => `"${p}"`).join(" or ")}`);
}

export function registerFileRoutes(api: PluginApi, files: FileStore): void {
  const maxBytes = Math.floor(api.config.batches.max_file_size_mb * MIB);

  /** The caller's file, or the 404 a missing one (or another consumer's) gets. */
  const ownFile = async (caller: Caller, id: string): Promise<FileRecord> => {
    const file = await files.get(id);
    if (!file || !caller.owns(file.owner)) throw errors.notFound(`no file "${id.slice(0, 100)}"; list your files with GET /v1/files`);
    return file;
  };

  api.routes.post(
    "/v1/files",
    answering(api.log, "files.create", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const id = files.newFileId();
      let stored: { filename: string; contentType: string; bytes: number } | undefined;
      const store = async (part: FilePart, fieldsSoFar: ReadonlyMap<string, string>) => {
        // A purpose sent before the file is checked before its bytes are read.
        if (fieldsSoFar.has("purpose")) {
          const problem = purposeProblem(fieldsSoFar.get("purpose"));
          if (problem) throw problem;
        }
        const upload = capped(part.stream, maxBytes);
        try {
          const { size } = await api.objects.put(files.objectKey(id), upload.stream, { contentType: part.mimeType });
          stored = { filename: sanitizeFilename(part.filename), contentType: part.mimeType, bytes: size };
        } catch (error) {
          if (upload.exceeded()) {
            throw errors.tooLarge(
              `the file is larger than ${api.config.batches.max_file_size_mb} MB (batches.max_file_size_mb); split it into smaller batches`,
            );
          }
          if (error instanceof GatewayError) throw error;
          api.log.error("batch_file_store_failed", { file_id: id, error });
          throw errors.internal("the file could not be stored: the object store failed; try again");
        }
      };
      const form = await readMultipartForm(c.req.raw, store, FILE_FORM);
      if (!form.hadFile || !stored) {
        throw errors.badRequest(
          form.fields.has("file")
            ? 'the "file" field must be a file upload (a part with a filename), not a text field'
            : 'missing the "file" part: send the JSONL file as multipart/form-data field "file"',
        );
      }
      const problem = purposeProblem(form.fields.get("purpose"));
      if (problem) {
        await api.objects.delete(files.objectKey(id)).catch(() => {});
        throw problem;
      }
      const purpose = form.fields.get("purpose") as FilePurpose;
      try {
        const file = await files.save(id, { owner: caller.owner, filename: stored.filename, purpose, contentType: stored.contentType }, stored.bytes);
        return json(fileView(file));
      } catch (error) {
        await api.objects.delete(files.objectKey(id)).catch(() => {});
        throw error;
      }
    }),
  );

  api.routes.get(
    "/v1/files",
    answering(api.log, "files.list", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const limit = listLimit(c.req.query("limit"), LIST_DEFAULT, LIST_MAX);
      const after = c.req.query("after");
      if (after !== undefined && after !== "" && idTime(after, "file-") === undefined) {
        throw errors.badRequest(`query parameter "after" must be a file id (the last id of the previous page); got "${after.slice(0, 100)}"`);
      }
      const purpose = c.req.query("purpose");
      const page = await files.list(caller.owner, { after: after || undefined, limit, purpose: purpose || undefined });
      const data = page.items.map(fileView);
      return json({ object: "list", data, has_more: page.hasMore, first_id: page.items[0]?.id ?? null, last_id: page.items.at(-1)?.id ?? null });
    }),
  );

  api.routes.get(
    "/v1/files/:id",
    answering(api.log, "files.retrieve", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      return json(fileView(await ownFile(caller, c.req.param("id") ?? "")));
    }),
  );

  api.routes.get(
    "/v1/files/:id/content",
    answering(api.log, "files.content", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const file = await ownFile(caller, c.req.param("id") ?? "");
      const stored = await files.content(file);
      if (!stored) throw errors.notFound(`the content of file "${file.id}" is gone (deleted or past batches.retention)`);
      const headers: Record<string, string> = { "content-type": file.content_type || "application/octet-stream" };
      if (stored.size !== undefined) headers["content-length"] = String(stored.size);
      return new Response(stored.body, { status: 200, headers });
    }),
  );

  api.routes.delete(
    "/v1/files/:id",
    answering(api.log, "files.delete", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const file = await ownFile(caller, c.req.param("id") ?? "");
      if (!(await files.delete(file))) throw errors.notFound(`no file "${file.id}"; it was deleted a moment ago`);
      return json({ id: file.id, object: "file", deleted: true });
    }),
  );
}
