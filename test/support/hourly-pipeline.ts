// Imported first by a test file (before workflow.ts): the sample pipeline
// with hourly chunks, 1,100 of them up to sample day 2: one full window of
// the default size (1,000 chunks) and one of 100, in that file's module
// graph. Vitest gives each test file its own modules, so other files keep
// the daily chunks. The bench runs the same at ten years (bench/long-batch.ts).
import { LONG_BATCH_CONCURRENCY, LONG_BATCH_TO_DAY } from '../../bench/long-batch.ts';
import { useHourlySample } from '../../local/sample-data.ts';

/** Hours in the batch. */
export const HOURS = 1_100;
/** The batch ends at the start of sample day TO_DAY; the sample's rows fill its last days. */
export const TO_DAY = LONG_BATCH_TO_DAY;

useHourlySample({ hours: HOURS, toDay: TO_DAY, maxConcurrency: LONG_BATCH_CONCURRENCY });
