import { describe } from 'vitest';
import { latestEventTime } from '../../../domain/sql/emit-metrics.ts';
import { itIsASafeSingleStatement, pipeline } from './support.ts';

describe('single statements of EmitMetrics', () => {
  itIsASafeSingleStatement([['latestEventTime', latestEventTime(pipeline)]]);
});
