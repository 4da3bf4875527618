/** A dashboard for the benchmarks: one connection reading a table over and over, timing each read. */
import type pg from 'pg';

/** A read: when it started (epoch ms, comparable with execution events' timestamps) and how long it took. */
export interface TimedRead {
  readonly at: number;
  readonly ms: number;
}

/** Starts reading `SELECT COUNT(*) FROM <table>` (a trusted name) in a loop; `stop()` ends it and returns every read. */
export function pollReads(client: pg.Client, table: string): { stop(): Promise<TimedRead[]> } {
  const reads: TimedRead[] = [];
  let reading = true;
  const loop = (async () => {
    while (reading) {
      const at = performance.timeOrigin + performance.now();
      const started = performance.now();
      await client.query(`SELECT COUNT(*) FROM ${table}`);
      reads.push({ at, ms: performance.now() - started });
    }
  })();
  return {
    async stop() {
      reading = false;
      await loop;
      return reads;
    },
  };
}
