// Imported first by a test file (before workflow.ts): the wide sample
// pipeline (wide-pipeline.ts) as a swap with snapshotReaders 'in-place',
// whose live table can carry an IDENTITY column (docs/decisions/identity-columns.md).
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { replaceSample, widened } from './wide-pipeline.ts';

replaceSample(widened({ ...salesOrderLines, snapshotReaders: 'in-place' }));
