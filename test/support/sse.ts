/** Reading a whole server-sent-events body, for tests that check streamed answers. */

/** The events of a body: each one's `event:` name (undefined when it has none) and its `data:` lines parsed as JSON. */
export function sseEvents(text: string): Array<{ event: string | undefined; data: Record<string, unknown> }> {
  return text
    .split(/\n\n/)
    .filter((block) => block.includes("data: "))
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7);
      return { event, data: JSON.parse(lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")) as Record<string, unknown> };
    });
}
