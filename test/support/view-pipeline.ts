// Imported first by a test file (before workflow.ts): the sample pipeline,
// published through a view (publishVia 'view'), in that file's module graph.
// Vitest gives each test file its own modules, so other files keep the
// rename pipeline.

import { definePipeline } from '../../domain/define-pipeline.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';

const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
pipelines[index] = definePipeline({ ...salesOrderLines, publishVia: 'view' });
