// Imported first by a test file (before workflow.ts): the sample pipeline
// with chunks sized by data (chunk.targetRows), in that file's module
// graph. Vitest gives each test file its own modules, so other files keep
// the calendar chunks.

import { definePipeline } from '../../domain/define-pipeline.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';

export const TARGET_ROWS = 70;

const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
pipelines[index] = definePipeline({ ...salesOrderLines, chunk: { ...salesOrderLines.chunk, targetRows: TARGET_ROWS } });
