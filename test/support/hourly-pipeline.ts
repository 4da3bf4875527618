// Imported first by a test file (before workflow.ts): the sample pipeline
// with hourly chunks over ten years of history (87,600 chunks up to sample
// day 2), in that file's module graph. Vitest gives each test file its own
// modules, so other files keep the daily chunks.
import { definePipeline } from '../../domain/spec.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { sampleDay } from '../../local/sample-data.ts';

/** Hours in the batch: ten years of hourly chunks. */
export const HOURS = 87_600;
/** The batch ends at the start of sample day TO_DAY; the sample's rows fill its last days. */
export const TO_DAY = 2;
/** Chunks loaded at once: tiny loads, so more than the sample's 4 keep the machine busy. */
export const MAX_CONCURRENCY = 16;

const HOUR_MS = 3_600_000;
const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
pipelines[index] = definePipeline({
  ...salesOrderLines,
  chunk: { ...salesOrderLines.chunk, grain: 'hour', maxConcurrency: MAX_CONCURRENCY },
  historyStart: new Date(sampleDay(TO_DAY).getTime() - HOURS * HOUR_MS).toISOString(),
});
