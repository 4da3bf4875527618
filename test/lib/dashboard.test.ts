// The on-call dashboard as synthesized: the state of every alarm, then per
// pipeline its publish age against the SLA (a horizontal line), rows
// published, run durations against the expected run, failures by class,
// each on the metric the alarms read, by the same dimensions.
import type { CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../lib/app.ts';
import type { AtomicPublishStack } from '../../lib/atomic-publish-stack.ts';
import { pipelines } from '../../pipelines/index.ts';
import { useCdkOutdir } from './cdk-outdir.ts';

const outdir = useCdkOutdir();
let stack: AtomicPublishStack;
interface Widget {
  readonly type: string;
  readonly properties: {
    title?: string;
    alarms?: string[];
    metrics?: unknown[][];
    annotations?: { horizontal?: { value: number; label: string }[] };
    period?: number;
    stat?: string;
  };
}
let widgets: Widget[];

/** The dashboard body with every CloudFormation token written as `{Ref:<id>}` / `{GetAtt:<id>.<attr>}`: JSON again. */
function body(value: unknown): string {
  const join = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
  if (!join) return value as string;
  return join[1]
    .map((part) => {
      if (typeof part === 'string') return part;
      const p = part as { Ref?: string; 'Fn::GetAtt'?: string[] };
      return p.Ref ? `{Ref:${p.Ref}}` : `{GetAtt:${p['Fn::GetAtt']!.join('.')}}`;
    })
    .join(join[0]);
}

beforeAll(() => {
  ({ stack } = buildApp({ bundling: false, outdir }));
  const dashboards = Object.values(Template.fromStack(stack).findResources('AWS::CloudWatch::Dashboard'));
  expect(dashboards).toHaveLength(1);
  widgets = (JSON.parse(body(dashboards[0]!.Properties.DashboardBody)) as { widgets: Widget[] }).widgets;
});

const graph = (title: string) => {
  const found = widgets.find((w) => w.type === 'metric' && w.properties.title === title);
  expect(found, title).toBeDefined();
  return found!.properties;
};

describe('the dashboard', () => {
  it('shows the state of every alarm of the stack', () => {
    const shown = widgets.filter((w) => w.type === 'alarm').flatMap((w) => w.properties.alarms ?? []);
    const expected = Object.values(stack.alarms).map((a) => `{GetAtt:${stack.getLogicalId(a.node.defaultChild as CfnElement)}.Arn}`);
    expect(shown.sort()).toEqual(expected.sort());
  });

  it("draws each pipeline's publish age and data lag against its SLA, a horizontal line, by the monitor's dimension and period", () => {
    for (const pipeline of pipelines) {
      const age = graph(`${pipeline.name}: publish age vs SLA (seconds)`);
      expect(age.metrics).toEqual([
        ['AtomicPublish', 'PublishAgeSeconds', 'Pipeline', pipeline.name, { label: 'publish age', stat: 'Maximum' }],
        ['AtomicPublish', 'LiveDataLagSeconds', 'Pipeline', pipeline.name, { label: 'data lag', stat: 'Maximum' }],
      ]);
      // The monitor's rate, 5 minutes: CDK leaves the graph's period out when it is CloudWatch's default, 300 s.
      expect(age.period).toBeUndefined();
      expect(age.annotations?.horizontal).toEqual([
        expect.objectContaining({ value: pipeline.freshness.slaMinutes * 60, label: `SLA ${pipeline.freshness.slaMinutes} min` }),
      ]);
    }
  });

  it("draws rows published, the longest run against the expected run, and failures by class, by the handlers' dimensions", () => {
    for (const pipeline of pipelines) {
      const dims = ['Pipeline', pipeline.name, 'service', 'atomic-publish'];
      expect(graph(`${pipeline.name}: rows published`).metrics).toEqual([
        ['AtomicPublish', 'RowsPublished', ...dims, { label: 'rows published', stat: 'Sum', period: 3600 }],
      ]);
      const runs = graph(`${pipeline.name}: run duration (seconds)`);
      expect(runs.metrics).toEqual([['AtomicPublish', 'RunDurationSeconds', ...dims, { label: 'longest run', stat: 'Maximum', period: 3600 }]]);
      expect(runs.annotations?.horizontal).toEqual([expect.objectContaining({ value: (pipeline.freshness.slaMinutes / 2) * 60 })]);
      const failures = graph(`${pipeline.name}: failures`).metrics!.map((m) => m[1]);
      expect(failures).toEqual(['BatchFailed', 'ReconcileFailed', 'PublishFailed', 'OutOfBandChange', 'ExecutionStopped']);
    }
  });
});
