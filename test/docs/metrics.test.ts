// docs/reference/metrics.md lists every metric the tool writes, once, with
// the dimensions the alarms and the dashboard read it by (lib/metrics.ts),
// so the reference cannot drift from the names and dimensions in code.
import { readFileSync } from 'node:fs';
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { MetricName } from '../../domain/names.ts';
import { pipelineMetric } from '../../lib/metrics.ts';
import { PROJECT_ROOT } from '../../lib/project.ts';

const rows = readFileSync(`${PROJECT_ROOT}/docs/reference/metrics.md`, 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('| `'))
  .map((line) => line.split('|').map((cell) => cell.trim()));

describe('the metrics reference', () => {
  it('lists every metric name once, and no other', () => {
    expect(rows.map((row) => row[1]!.replaceAll('`', '')).sort()).toEqual(Object.values(MetricName).sort());
  });

  it('gives each metric the dimensions its alarms and graphs read it by', () => {
    for (const row of rows) {
      const name = row[1]!.replaceAll('`', '') as MetricName;
      const metric = pipelineMetric('p', name, { statistic: 'Sum', period: Duration.minutes(5) });
      expect(row[3], name).toBe(
        Object.keys(metric.dimensions ?? {})
          .map((d) => `\`${d}\``)
          .join(', '),
      );
    }
  });
});
