/**
 * A request mode, loaded like any user plugin: the gateway answers the sync requests of the
 * services marked `echo: true` itself, through this plugin, instead of forwarding them to a
 * backend.
 *
 *   plugins:
 *     load: [./examples/echo-mode.ts]
 *   echo:
 *     prefix: "you said: "
 *   services:
 *     - type: echo
 *       model: parrot
 *       echo: true
 *       operations: { say: [/v1/echo] }
 *
 *   curl -d '{"input": "hello"}' -H 'content-type: application/json' localhost:8080/v1/echo
 *   # {"model":"parrot","output":"you said: hello","consumer":null}
 *
 * The sync proxy owns the route (every path a service's `operations` declare), reads the body
 * and resolves the model; the first registered mode that accepts the service then answers.
 * The request runs the whole pipeline: identity, visibility, policies and limits apply, and it
 * is counted in the gateway's metrics under `mode="sync"`, as any sync request.
 */
import { definePlugin, errors, type RequestContext, type ServiceConfig, type SyncBody, type SyncMode, Type } from "inference-gateway/plugin";

/** The field this plugin adds to every `services[]` entry (defaulted, so always present). */
interface EchoFields {
  echo: boolean;
}

export default definePlugin({
  name: "echo-mode",
  // The sync proxy provides the `syncModes` service and owns the route.
  dependsOn: ["sync-proxy"],
  section: {
    key: "echo",
    schema: Type.Object({ prefix: Type.String({ default: "echo: ", description: "Put before the input in every answer" }) }, { additionalProperties: false }),
  },
  serviceFields: {
    schema: Type.Object({ echo: Type.Boolean({ default: false, description: "true: the echo mode answers this service's requests; no backend is called" }) }),
  },
  setup(api) {
    const { prefix } = api.section;
    const echo: SyncMode = {
      mode: "sync",
      accepts: (service: ServiceConfig) => (service as ServiceConfig & EchoFields).echo,
      async handle(ctx: RequestContext, body: SyncBody): Promise<Response> {
        // A thrown GatewayError is answered as the gateway's error body: {"error":{"message","type","code"}}.
        if (body.kind !== "json" || typeof body.value.input !== "string") {
          throw errors.badRequest('send a JSON body with a string "input", e.g. {"input": "hello"}');
        }
        return Response.json({ model: ctx.service?.model ?? "", output: prefix + body.value.input, consumer: ctx.principal.consumer ?? null });
      },
    };
    api.use("syncModes").register(echo);
  },
});
