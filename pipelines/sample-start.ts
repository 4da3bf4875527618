/**
 * Where the sample pipelines' history starts. Fixed for the tests, the demo
 * and a deploy; `local up` moves it so that its sample ends today and a
 * plain run covers the sample's days (docs/decisions/sample-ends-today.md).
 * Read once, when the pipelines are defined: `local up` exports it for the
 * shells that run the CLI, and swaps its own registry's entries
 * (local/recent-sample.ts).
 */
export const SAMPLE_START_ENV = 'ATOMIC_PUBLISH_SAMPLE_START';
export const DEFAULT_SAMPLE_START = '2026-01-01';

/** A UTC day `YYYY-MM-DD` as the instant a pipeline's historyStart names. */
export function sampleHistoryStart(value: string | undefined = process.env[SAMPLE_START_ENV]): string {
  const day = value === undefined || value === '' ? DEFAULT_SAMPLE_START : value;
  const instant = new Date(`${day}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(instant.getTime()) || instant.toISOString().slice(0, 10) !== day) {
    throw new Error(`${SAMPLE_START_ENV} is ${JSON.stringify(day.slice(0, 40))}: give a day as YYYY-MM-DD (the first day of local up's sample)`);
  }
  return instant.toISOString().replace('.000Z', 'Z');
}
