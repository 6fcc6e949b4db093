/**
 * A minimal user plugin: its own config section and one route. Load it with
 *
 *   plugins:
 *     load: [./examples/hello-plugin.ts]
 *   hello:
 *     greeting: "hi there"
 */
import { definePlugin, Type } from "inference-gateway/plugin";

export default definePlugin({
  name: "hello",
  section: {
    key: "hello",
    schema: Type.Object(
      { greeting: Type.String({ default: "hello", description: "What GET /hello answers" }) },
      { additionalProperties: false },
    ),
  },
  setup(api) {
    const greeting = api.section.greeting;
    api.routes.get("/hello", (c) => c.json({ greeting }));
  },
});
