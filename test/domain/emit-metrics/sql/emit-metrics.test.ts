import { describe } from 'vitest';
import { latestEventTime } from '../../../../domain/emit-metrics/sql/emit-metrics.ts';
import { itIsASafeSingleStatement, pipeline } from '../../sql/support.ts';

describe('single statements of EmitMetrics', () => {
  itIsASafeSingleStatement([['latestEventTime', latestEventTime(pipeline)]]);
});
