/**
 * What the reliability scenarios send a gateway process while a store fails: steady sync
 * traffic counted by status, job submissions, and the status and readiness reads.
 */
import type { GatewayProcess } from "./gateway-process.ts";

/**
 * A client's think time between two requests of the steady traffic. A client sending back to back
 * kept a core busy (Sentinel failover: 6,600 requests in its 19 s) and tested nothing more: the
 * scenarios ask that every request in a store's failure is answered, not how many there are. At
 * this pace the traffic is still steady: about 150 requests a second, dozens in every outage.
 */
const THINK_TIME_MS = 5;

/** Steady sync traffic in the background until `stop()`: every answer's status counted. */
export function steadyTraffic(gw: GatewayProcess, consumer: string): { stop(): Promise<Map<number, number>>; readonly sent: number } {
  const counts = new Map<number, number>();
  let stopped = false;
  let sent = 0;
  const loop = (async () => {
    while (!stopped) {
      sent++;
      let status = 0;
      try {
        const response = await fetch(`${gw.url}/v1/echo`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-consumer": consumer },
          body: JSON.stringify({ n: sent }),
        });
        await response.arrayBuffer();
        status = response.status;
      } catch {
        status = -1;
      }
      counts.set(status, (counts.get(status) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, THINK_TIME_MS));
    }
  })();
  return {
    get sent() {
      return sent;
    },
    async stop() {
      stopped = true;
      await loop;
      return counts;
    },
  };
}

export function submit(gw: GatewayProcess, content: string): Promise<Response> {
  const form = new FormData();
  form.append("file", new Blob([content], { type: "audio/wav" }), "clip.wav");
  return fetch(`${gw.url}/jobs/transcription`, { method: "POST", body: form, headers: { "x-consumer": "rel" } });
}

export async function jobStatus(gw: GatewayProcess, id: string): Promise<string> {
  const response = await fetch(`${gw.url}/jobs/transcription/${id}`);
  if (response.status !== 200) return `http ${response.status}`;
  return ((await response.json()) as { status: string }).status;
}

export async function readyStatus(gw: GatewayProcess): Promise<number> {
  const response = await fetch(`${gw.url}/health?ready=1`);
  await response.arrayBuffer();
  return response.status;
}
