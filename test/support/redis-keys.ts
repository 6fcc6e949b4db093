/**
 * Deletes the keys matching `patterns` in one database of the suite's redis-server: for test
 * files that share a database, each clearing only the keys of the plugin it tests.
 */
import { createClient } from "redis";

export async function clearRedisKeys(url: string, database: number, patterns: readonly string[]): Promise<void> {
  const client = createClient({ url, database });
  await client.connect();
  try {
    for (const pattern of patterns) {
      for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 500 })) {
        const list = Array.isArray(keys) ? keys : [keys];
        if (list.length > 0) await client.del(list);
      }
    }
  } finally {
    await client.close();
  }
}
