// Every alarm of the stack, as synthesized: per pipeline its run alarms on
// the metrics the handlers write (by all their dimensions, or CloudWatch
// would never match them), per function its Lambda alarms, each paging and
// clearing through the on-call topic, each naming a runbook section that
// docs/runbook.md has; and the topic's subscriptions from context.
import { readFileSync } from 'node:fs';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { buildApp } from '../../lib/app.ts';
import { AtomicPublishStack } from '../../lib/atomic-publish-stack.ts';
import { PROJECT_ROOT } from '../../lib/project.ts';
import { RUNBOOK, RUNBOOK_FILE, runbookAnchor, runbookLine } from '../../lib/publish-monitoring.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { headingAnchors } from '../support/markdown.ts';
import { useCdkOutdir } from './cdk-outdir.ts';

const outdir = useCdkOutdir();
let stack: AtomicPublishStack;
let template: Template;

const logicalId = (s: AtomicPublishStack, element: unknown) => s.getLogicalId(element as CfnElement);
const topicRef = (s: AtomicPublishStack) => ({ Ref: logicalId(s, s.topic.node.defaultChild) });
const alarmProps = (s: AtomicPublishStack, label: string) => {
  const alarm = s.alarms[label];
  expect(alarm, label).toBeDefined();
  return Template.fromStack(s).toJSON().Resources[logicalId(s, alarm!.node.defaultChild)].Properties as Record<string, unknown>;
};
const dimensionsOf = (props: Record<string, unknown>) =>
  Object.fromEntries((props.Dimensions as { Name: string; Value: unknown }[]).map((d) => [d.Name, d.Value]));

beforeAll(() => {
  ({ stack } = buildApp({ bundling: false, outdir }));
  template = Template.fromStack(stack);
});

describe('per pipeline, alarms on its runs', () => {
  const RUN_ALARMS = [
    ['ReconcileFailed', 'ReconcileFailed', 'Sum', RUNBOOK.ReconcileFailed, /reconciliation failed: the gate blocked a batch \(CheckFailedError\)/],
    [
      'PublishFailed',
      'PublishFailed',
      'Sum',
      RUNBOOK.PublishFailed,
      /publish failed: a batch passed the gate but its publish into analytics\.\w+ did not commit/,
    ],
    ['OutOfBand', 'OutOfBandChange', 'Sum', RUNBOOK.OutOfBand, /out-of-band change \(drift\): analytics\.\w+ no longer matched the fingerprint/],
    ['ExecutionStopped', 'ExecutionStopped', 'Sum', RUNBOOK.ExecutionStopped, /an execution was aborted or timed out; no failure alert was sent/],
  ] as const;

  it.each(RUN_ALARMS)(
    '%s: one %s in 5 minutes pages, with the service and Pipeline dimensions the handler writes',
    (label, metric, statistic, section, meaning) => {
      for (const pipeline of pipelines) {
        const props = alarmProps(stack, `${label}:${pipeline.name}`);
        expect(props).toMatchObject({
          Namespace: 'AtomicPublish',
          MetricName: metric,
          Statistic: statistic,
          Period: 300,
          Threshold: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          EvaluationPeriods: 1,
          TreatMissingData: 'notBreaching',
          AlarmActions: [topicRef(stack)],
          OKActions: [topicRef(stack)],
        });
        expect(dimensionsOf(props)).toEqual({ service: 'atomic-publish', Pipeline: pipeline.name });
        expect(props.AlarmDescription).toMatch(new RegExp(`^atomic-publish: pipeline ${pipeline.name}: `));
        expect(props.AlarmDescription).toMatch(meaning);
        expect(props.AlarmDescription).toContain(runbookLine(section));
      }
    },
  );

  it('pages on a run slower than half the SLA by default, or than freshness.expectedRunMinutes when the spec says', () => {
    const props = alarmProps(stack, 'SlowRun:sales_order_lines');
    expect(props).toMatchObject({
      Namespace: 'AtomicPublish',
      MetricName: 'RunDurationSeconds',
      Statistic: 'Maximum',
      Period: 300,
      Threshold: 720 * 60,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
      OKActions: [topicRef(stack)],
    });
    expect(dimensionsOf(props)).toEqual({ service: 'atomic-publish', Pipeline: 'sales_order_lines' });
    expect(props.AlarmDescription).toContain('longer than 720 minutes (half its 1440-minute SLA)');

    const declared = new AtomicPublishStack(new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } }), 'Slow', {
      warehouse: { database: 'dev', workgroupName: 'wg' },
      pipelines: [definePipeline({ ...salesOrderLines, freshness: { slaMinutes: 1440, expectedRunMinutes: 45 } })],
    });
    const slow = alarmProps(declared, 'SlowRun:sales_order_lines');
    expect(slow.Threshold).toBe(45 * 60);
    expect(slow.AlarmDescription).toContain('longer than 45 minutes (freshness.expectedRunMinutes)');
  });
});

describe('per watched pipeline, the live drift alarm', () => {
  it('pages while the live watch last found the table drifted: LiveDrift of the Pipeline dimension it writes, one hour-long watch period, a skipped watch keeping the state', () => {
    const props = alarmProps(stack, 'LiveDrift:sales_order_lines');
    expect(props).toMatchObject({
      Namespace: 'AtomicPublish',
      MetricName: 'LiveDrift',
      Statistic: 'Maximum',
      Period: 3600,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'ignore',
      AlarmActions: [topicRef(stack)],
      OKActions: [topicRef(stack)],
    });
    expect(dimensionsOf(props)).toEqual({ Pipeline: 'sales_order_lines' });
    expect(props.AlarmDescription).toMatch(
      /^atomic-publish: pipeline sales_order_lines: out-of-band change \(drift\) between runs: analytics\.sales_order_lines no longer matches/,
    );
    expect(props.AlarmDescription).toContain(runbookLine(RUNBOOK.OutOfBand));
  });

  it('exists for a swap by default and for an in-place mode only when outOfBand.watch asks', () => {
    const stackOf = (id: string, spec: Parameters<typeof definePipeline>[0]) =>
      new AtomicPublishStack(new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } }), id, {
        warehouse: { database: 'dev', workgroupName: 'wg' },
        pipelines: [definePipeline(spec)],
      });
    const inPlace = { ...salesOrderLines, publishMode: 'replace-intervals' as const };
    expect(stackOf('InPlace', inPlace).alarms['LiveDrift:sales_order_lines']).toBeUndefined();
    expect(stackOf('InPlaceWatched', { ...inPlace, outOfBand: { watch: true } }).alarms['LiveDrift:sales_order_lines']).toBeDefined();
    expect(stackOf('SwapUnwatched', { ...salesOrderLines, outOfBand: { watch: false } }).alarms['LiveDrift:sales_order_lines']).toBeUndefined();
  });
});

describe('per function, Lambda alarms', () => {
  it('pages on throttles of every function, and on errors only of those no Catch watches', () => {
    const steps = Object.keys(stack.functions).filter((name) => name !== 'CancelOrphans');
    const standalone = ['CancelOrphans', 'FreshnessMonitor', 'StartRun'];
    expect(stack.startRun).toBeDefined();
    const fns: Record<string, unknown> = { ...stack.functions, FreshnessMonitor: stack.freshnessMonitor.function, StartRun: stack.startRun };
    for (const name of [...steps, ...standalone]) {
      const throttles = alarmProps(stack, `Throttles:${name}`);
      expect(throttles).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Throttles',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack, (fns[name] as { node: { defaultChild: unknown } }).node.defaultChild) } }],
        Statistic: 'Sum',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [topicRef(stack)],
        OKActions: [topicRef(stack)],
      });
      expect(throttles.AlarmDescription).toContain(runbookLine(RUNBOOK.LambdaThrottles));
    }
    for (const name of standalone) {
      const errors = alarmProps(stack, `Errors:${name}`);
      expect(errors).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Errors', Statistic: 'Sum', Threshold: 1, TreatMissingData: 'notBreaching' });
      expect(errors.AlarmDescription).toContain(runbookLine(RUNBOOK.LambdaErrors));
    }
    // A step's error is its run's failure (RecordFailure pages it), or a transient one a retry absorbed.
    for (const name of steps) expect(stack.alarms[`Errors:${name}`], name).toBeUndefined();
  });
});

describe('every alarm', () => {
  it('pages and clears through the on-call topic, and names a runbook section docs/runbook.md has', () => {
    const headings = headingAnchors(readFileSync(`${PROJECT_ROOT}/${RUNBOOK_FILE}`, 'utf8'));
    const alarms = template.findResources('AWS::CloudWatch::Alarm');
    expect(Object.keys(alarms)).toHaveLength(Object.keys(stack.alarms).length);
    for (const [id, alarm] of Object.entries(alarms)) {
      const props = alarm.Properties as Record<string, unknown>;
      expect(props.AlarmActions, id).toEqual([topicRef(stack)]);
      expect(props.OKActions, id).toEqual([topicRef(stack)]);
      const anchor = /Runbook: docs\/runbook\.md, "([^"]+)" \(docs\/runbook\.md#([a-z0-9_-]+)\)\.$/.exec(String(props.AlarmDescription));
      expect(anchor, `${id}: ${props.AlarmDescription}`).not.toBeNull();
      expect(runbookAnchor(anchor![1]!)).toBe(anchor![2]);
      expect(headings.has(anchor![2]!), `${RUNBOOK_FILE} has no heading for #${anchor![2]}`).toBe(true);
      expect(String(props.AlarmDescription).length).toBeLessThanOrEqual(1024);
    }
  });
});

describe('metric writes', () => {
  it('are granted only into the AtomicPublish namespace, and only to the freshness monitor (the handlers write EMF to their logs)', () => {
    const granted: { policy: string; condition: unknown }[] = [];
    for (const [id, policy] of Object.entries(template.findResources('AWS::IAM::Policy'))) {
      const statements = (policy.Properties as { PolicyDocument: { Statement: { Action: string | string[]; Condition?: unknown }[] } }).PolicyDocument
        .Statement;
      for (const statement of statements) {
        const actions = ([] as string[]).concat(statement.Action);
        if (actions.some((a) => a === 'cloudwatch:PutMetricData' || a === 'cloudwatch:*' || a === '*'))
          granted.push({ policy: id, condition: statement.Condition });
      }
    }
    expect(granted).toEqual([
      { policy: expect.stringMatching(/^FreshnessMonitorPutMetricDataPolicy/), condition: { StringEquals: { 'cloudwatch:namespace': 'AtomicPublish' } } },
    ]);
  });
});

describe('subscriptions of the on-call topic', () => {
  it('subscribes every address of alarmEmail and every alarmHttpsUrls endpoint from context', () => {
    const { stack: other } = buildApp({
      bundling: false,
      outdir,
      context: { alarmEmail: 'oncall@example.com, data-team@example.com', alarmHttpsUrls: 'https://events.example.com/integration/abc/enqueue' },
    });
    const t = Template.fromStack(other);
    for (const address of ['oncall@example.com', 'data-team@example.com']) {
      t.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: address, TopicArn: topicRef(other) });
    }
    t.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'https',
      Endpoint: 'https://events.example.com/integration/abc/enqueue',
      TopicArn: topicRef(other),
    });
    expect(Object.keys(t.findResources('AWS::SNS::Subscription'))).toHaveLength(3);
    expect(Object.keys(template.findResources('AWS::SNS::Subscription', { Properties: { Protocol: Match.anyValue() } }))).toHaveLength(0);
  });

  it('refuses an endpoint that is not https:// and an address that is not one, at synth', () => {
    expect(() => buildApp({ bundling: false, outdir, context: { alarmHttpsUrls: 'http://events.example.com/x' } })).toThrow(
      /subscriptions\.httpsUrls: "http:\/\/events\.example\.com\/x" is not an https:\/\/ URL/,
    );
    expect(() => buildApp({ bundling: false, outdir, context: { alarmEmail: 'oncall' } })).toThrow(/alarm email "oncall" is not an email address/);
  });
});
