// Imported first by a test file (before workflow.ts): the sample pipeline
// published by replace-intervals, with a lookback of one day and the live watch, in that
// file's module graph. Vitest gives each test file its own modules, so
// other files keep the swap.

import { definePipeline } from '../../domain/define-pipeline.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';

/** Days before the newest complete one that a scheduled run loads again. */
export const LOOKBACK = 1;

const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
// Watched (outOfBand.watch, off by default in place): each publication records the live table's fingerprint.
pipelines[index] = definePipeline({ ...salesOrderLines, publishMode: 'replace-intervals', lookback: LOOKBACK, outOfBand: { watch: true } });
