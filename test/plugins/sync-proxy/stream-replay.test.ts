import { describe, expect, it } from "vitest";
import { StreamReplay } from "../../../plugins/sync-proxy/stream-replay.ts";

function source(chunks: string[]): { stream: ReadableStream<Uint8Array>; pulled: () => number } {
  let index = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (index === chunks.length) return controller.close();
        controller.enqueue(new TextEncoder().encode(chunks[index++]));
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, pulled: () => index };
}

async function take(stream: ReadableStream<Uint8Array>, count: number): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  for (let i = 0; i < count; i++) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text;
}

async function all(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text();
}

describe("StreamReplay", () => {
  it("gives the next attempt what an earlier one took, then the rest of the body", async () => {
    const client = source(["a", "b", "c", "d"]);
    const replay = new StreamReplay(client.stream, 1024);
    const first = replay.next();
    expect(client.pulled()).toBe(0);
    expect(await take(first!, 2)).toBe("ab");
    expect(await all(replay.next()!)).toBe("abcd");
  });

  it("refuses another attempt once more than the limit went out", async () => {
    const replay = new StreamReplay(source(["1234", "5678", "9"]).stream, 6);
    expect(await take(replay.next()!, 2)).toBe("12345678");
    expect(replay.next()).toBeUndefined();
  });

  it("stops a superseded attempt from taking chunks meant for the next one", async () => {
    const replay = new StreamReplay(source(["a", "b"]).stream, 1024);
    const stale = replay.next()!;
    const fresh = replay.next()!;
    await expect(take(stale, 1)).rejects.toThrow("superseded");
    expect(await all(fresh)).toBe("ab");
  });
});
