// Imported by a test file after group-pipelines.ts (before workflow.ts):
// the mirror as a swap with snapshotReaders 'in-place' too, so that every
// member of the group `sales` is rewritten in place (with
// wide-in-place-pipeline.ts for the sample), in that file's module graph.

import { definePipeline } from '../../domain/define-pipeline.ts';
import { pipelines } from '../../pipelines/index.ts';
import { defineSalesGroup, MIRROR, MIRROR_SPEC } from './group-pipelines.ts';

pipelines[pipelines.findIndex((p) => p.name === MIRROR.name)] = definePipeline({ ...MIRROR_SPEC, snapshotReaders: 'in-place' });
defineSalesGroup();
