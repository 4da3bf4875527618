// Imported first by a test file (before workflow.ts): the wide sample
// pipeline (wide-pipeline.ts) published by replace-intervals.
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { replaceSample, widened } from './wide-pipeline.ts';

replaceSample(widened({ ...salesOrderLines, publishMode: 'replace-intervals' }));
