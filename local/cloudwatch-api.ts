// A local CloudWatch endpoint: the metrics the freshness monitor writes, and
// the stack's alarms as synthesized, evaluated on them. The real
// @aws-sdk/client-cloudwatch client works against it unchanged except for
// `endpoint`:
//
//   const cw = await startLocalCloudWatchApi({ alarms: alarmsFromTemplate(template), outbox });
//   const client = localCloudWatchClient(cw.endpoint); // local/aws-clients.ts
//   await client.send(new PutMetricDataCommand({ ... }));
//   await cw.evaluate(new Date(...));                  // the alarms at that instant; transitions go to the outbox
//
// It serves PutMetricData, GetMetricStatistics, GetMetricData (MetricStat
// queries) and DescribeAlarms. Time is the caller's: alarms are evaluated
// only by evaluate(now), never on a timer, so a test moves the clock
// without sleeping. The `AWS/` namespaces are reserved, as on AWS, for the
// services' own metrics: only a caller signing with
// LOCAL_AWS_SERVICE_ACCESS_KEY_ID (the local engine's Lambda service,
// local/lambda-metrics.ts) may write them.
// Wire: the client (3.11xx) speaks AWS JSON 1.0 with the target prefix
// `GraniteServiceVersion20100801.` (awsQueryCompatible); timestamps as epoch seconds.
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html
import { join } from 'node:path';
import { STATE_DIR } from '../lib/project.ts';
import { type AwsJsonCaller, type AwsJsonOperation, AwsServiceError, serviceErrorOf, startAwsJsonServer } from './aws-json-server.ts';
import { type AlarmState, evaluateAlarm, evaluationWindows, type MetricAlarm, type PeriodStats, statisticOf, type Statistic } from './cloudwatch-alarms.ts';
import { SnsOutbox } from './sns-outbox.ts';

const CONTENT_TYPE = 'application/x-amz-json-1.0';
const TARGET_PREFIX = 'GraniteServiceVersion20100801.';

/**
 * The access key id of the local engine's AWS services (the Lambda service
 * writing AWS/Lambda): the one caller the endpoint lets write an `AWS/`
 * namespace. Handlers sign with other keys (local/aws-clients.ts), so they
 * are refused there as CloudWatch refuses them.
 */
export const LOCAL_AWS_SERVICE_ACCESS_KEY_ID = 'local-aws-service';

/** GetMetricData's statistics served locally (percentiles are not: the endpoint keeps each period reduced). */
const METRIC_DATA_STATS: readonly Statistic[] = ['SampleCount', 'Average', 'Sum', 'Minimum', 'Maximum'];

/** PutMetricData's limits: metrics a request, dimensions a metric, how far a timestamp may lie in the past and ahead. */
export const PUT_METRIC_DATA_LIMITS = { metrics: 1000, dimensions: 30, pastMs: 14 * 24 * 3600_000, aheadMs: 2 * 3600_000 } as const;

export interface Datapoint {
  readonly timestamp: number;
  readonly stats: PeriodStats;
  readonly unit?: string;
}

export interface AlarmTransition {
  readonly alarmName: string;
  readonly from: AlarmState;
  readonly to: AlarmState;
  readonly at: string;
  readonly reason: string;
}

export interface LocalCloudWatchApi {
  readonly endpoint: string;
  /** Evaluates every alarm at `now`; returns the transitions (each one's actions already sent to the outbox). */
  evaluate(now: Date): AlarmTransition[];
  /** An alarm's state by its name. */
  state(alarmName: string): AlarmState;
  /** Every transition so far, oldest first. */
  readonly transitions: readonly AlarmTransition[];
  close(): Promise<void>;
}

export interface LocalCloudWatchOptions {
  /** The alarms to evaluate (local/cloudwatch-alarms.ts alarmsFromTemplate). */
  readonly alarms: readonly MetricAlarm[];
  /** Where alarm actions that name an SNS topic go. @default an outbox on .atomic-publish/outbox/alerts.jsonl */
  readonly outbox?: SnsOutbox;
  /** The clock PutMetricData checks timestamps against (two weeks back, two hours ahead). @default the real one */
  readonly clock?: () => Date;
  readonly host?: string;
  readonly port?: number;
}


const invalid = (message: string) => new AwsServiceError('InvalidParameterValueException', message);
// The model's ValidationException (its query-protocol code: ValidationError).
const validation = (message: string) => new AwsServiceError('ValidationException', message);

function metricKey(namespace: string, metricName: string, dimensions: Readonly<Record<string, string>>): string {
  return JSON.stringify([namespace, metricName, Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b))]);
}

function dimensionsOf(value: unknown): Record<string, string> {
  if (value === undefined) return {};
  if (!Array.isArray(value)) throw invalid('Dimensions must be a list');
  const dims: Record<string, string> = {};
  for (const d of value as { Name?: unknown; Value?: unknown }[]) {
    if (typeof d?.Name !== 'string' || typeof d?.Value !== 'string') throw invalid('Each dimension needs a Name and a Value');
    dims[d.Name] = d.Value;
  }
  return dims;
}

/** A datum's values as one period's stats: Value, Values with Counts, or StatisticValues. */
function statsOf(datum: Record<string, unknown>): PeriodStats {
  if (typeof datum.Value === 'number') return { sampleCount: 1, sum: datum.Value, minimum: datum.Value, maximum: datum.Value };
  if (Array.isArray(datum.Values)) {
    const values = datum.Values as number[];
    const counts = Array.isArray(datum.Counts) ? (datum.Counts as number[]) : values.map(() => 1);
    if (values.length === 0 || counts.length !== values.length) throw invalid('Values and Counts must be non-empty lists of one length');
    return {
      sampleCount: counts.reduce((a, b) => a + b, 0),
      sum: values.reduce((a, v, i) => a + v * counts[i]!, 0),
      minimum: Math.min(...values),
      maximum: Math.max(...values),
    };
  }
  const s = datum.StatisticValues as Record<string, number> | undefined;
  if (s && [s.SampleCount, s.Sum, s.Minimum, s.Maximum].every((v) => typeof v === 'number')) {
    return { sampleCount: s.SampleCount!, sum: s.Sum!, minimum: s.Minimum!, maximum: s.Maximum! };
  }
  throw invalid('A metric datum needs Value, Values or StatisticValues');
}

function merge(a: PeriodStats | undefined, b: PeriodStats): PeriodStats {
  if (!a) return b;
  return { sampleCount: a.sampleCount + b.sampleCount, sum: a.sum + b.sum, minimum: Math.min(a.minimum, b.minimum), maximum: Math.max(a.maximum, b.maximum) };
}

/** CloudWatch's SNS notification of a state change (its JSON message), bounded by the subject SNS allows. */
function notification(alarm: MetricAlarm, transition: AlarmTransition): { Subject: string; Message: string } {
  const subject = `${transition.to}: "${alarm.alarmName}" in ${alarm.alarmArn.split(':')[3]}`;
  return {
    Subject: subject.length > 100 ? `${subject.slice(0, 96)}...` : subject,
    Message: JSON.stringify({
      AlarmName: alarm.alarmName,
      AlarmDescription: alarm.description,
      AlarmArn: alarm.alarmArn,
      NewStateValue: transition.to,
      OldStateValue: transition.from,
      NewStateReason: transition.reason,
      StateChangeTime: transition.at,
      Trigger: {
        MetricName: alarm.metricName,
        Namespace: alarm.namespace,
        Statistic: alarm.statistic.toUpperCase(),
        Dimensions: Object.entries(alarm.dimensions).map(([name, value]) => ({ name, value })),
        Period: alarm.periodSeconds,
        EvaluationPeriods: alarm.evaluationPeriods,
        DatapointsToAlarm: alarm.datapointsToAlarm,
        ComparisonOperator: alarm.comparison,
        Threshold: alarm.threshold,
        TreatMissingData: alarm.treatMissingData,
      },
    }),
  };
}

export async function startLocalCloudWatchApi(options: LocalCloudWatchOptions): Promise<LocalCloudWatchApi> {
  const clock = options.clock ?? (() => new Date());
  const outbox = options.outbox ?? new SnsOutbox(join(STATE_DIR, 'outbox', 'alerts.jsonl'));
  const series = new Map<string, Datapoint[]>();
  const alarms = options.alarms;
  const states = new Map<string, { state: AlarmState; reason: string; at: string }>(
    alarms.map((a) => [a.alarmName, { state: 'INSUFFICIENT_DATA', reason: 'Unchecked: Initial alarm creation', at: clock().toISOString() }]),
  );
  const transitions: AlarmTransition[] = [];
  const epoch = (ms: number) => ms / 1000;

  /** Each window's stats for a metric, newest first (undefined: no datapoint in it). */
  const windowStats = (key: string, windows: { start: number; end: number }[]) =>
    windows.map(({ start, end }) =>
      (series.get(key) ?? []).filter((d) => d.timestamp >= start && d.timestamp < end).reduce<PeriodStats | undefined>((acc, d) => merge(acc, d.stats), undefined),
    );

  const operations: Record<string, AwsJsonOperation> = {
    PutMetricData: async ({ Namespace, MetricData }, caller: AwsJsonCaller) => {
      if (typeof Namespace !== 'string' || Namespace === '') throw invalid('Namespace is required');
      if (Namespace.startsWith('AWS/') && caller.accessKeyId !== LOCAL_AWS_SERVICE_ACCESS_KEY_ID) throw invalid('The value AWS/ for parameter Namespace is reserved');
      if (!Array.isArray(MetricData) || MetricData.length === 0) throw invalid('MetricData is required');
      if (MetricData.length > PUT_METRIC_DATA_LIMITS.metrics) throw invalid(`The collection MetricData must not have a size greater than ${PUT_METRIC_DATA_LIMITS.metrics}.`);
      const now = clock().getTime();
      const accepted: [string, Datapoint][] = [];
      for (const datum of MetricData as Record<string, unknown>[]) {
        if (typeof datum.MetricName !== 'string' || datum.MetricName === '') throw invalid('MetricName is required');
        const dimensions = dimensionsOf(datum.Dimensions);
        if (Object.keys(dimensions).length > PUT_METRIC_DATA_LIMITS.dimensions) throw invalid(`At most ${PUT_METRIC_DATA_LIMITS.dimensions} dimensions a metric`);
        const timestamp = typeof datum.Timestamp === 'number' ? datum.Timestamp * 1000 : now;
        if (timestamp < now - PUT_METRIC_DATA_LIMITS.pastMs || timestamp > now + PUT_METRIC_DATA_LIMITS.aheadMs) {
          throw invalid(`The parameter MetricData.member.Timestamp must be within two weeks before and two hours after now, got ${new Date(timestamp).toISOString()}`);
        }
        accepted.push([
          metricKey(Namespace, datum.MetricName, dimensions),
          { timestamp, stats: statsOf(datum), ...(typeof datum.Unit === 'string' ? { unit: datum.Unit } : {}) },
        ]);
      }
      // All or nothing, as one request is.
      for (const [key, point] of accepted) series.set(key, [...(series.get(key) ?? []), point]);
      return {};
    },
    GetMetricStatistics: async ({ Namespace, MetricName, Dimensions, StartTime, EndTime, Period, Statistics }) => {
      if (typeof Namespace !== 'string' || typeof MetricName !== 'string') throw invalid('Namespace and MetricName are required');
      if (typeof StartTime !== 'number' || typeof EndTime !== 'number' || typeof Period !== 'number' || Period <= 0) throw invalid('StartTime, EndTime and Period are required');
      if (!Array.isArray(Statistics) || Statistics.length === 0) throw invalid('Statistics is required');
      const period = Period * 1000;
      const start = StartTime * 1000;
      const windows: { start: number; end: number }[] = [];
      for (let s = Math.floor(start / period) * period; s < EndTime * 1000; s += period) windows.push({ start: s, end: s + period });
      const key = metricKey(Namespace, MetricName, dimensionsOf(Dimensions));
      const stats = windowStats(key, windows);
      const units = new Set((series.get(key) ?? []).map((d) => d.unit).filter(Boolean));
      const datapoints = windows.flatMap((w, i) => {
        const s = stats[i];
        if (!s) return [];
        const point: Record<string, unknown> = { Timestamp: epoch(w.start) };
        for (const statistic of Statistics as Statistic[]) point[statistic] = statisticOf(s, statistic);
        if (units.size === 1) point.Unit = [...units][0];
        return [point];
      });
      return { Label: MetricName, Datapoints: datapoints };
    },
    // MetricStat queries, each reduced per period by its statistic; ReturnData false leaves a query out.
    // No metric math, no Metrics Insights, no paging (NextToken, MaxDatapoints): refused or ignored as said.
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataResult.html
    GetMetricData: async ({ MetricDataQueries, StartTime, EndTime, ScanBy, NextToken }) => {
      if (!Array.isArray(MetricDataQueries) || MetricDataQueries.length === 0) throw validation('MetricDataQueries is required');
      if (MetricDataQueries.length > 500) throw validation('At most 500 MetricDataQueries a request');
      if (typeof StartTime !== 'number' || typeof EndTime !== 'number') throw validation('StartTime and EndTime are required');
      if (StartTime >= EndTime) throw validation('The parameter StartTime must be less than the parameter EndTime.');
      if (NextToken !== undefined) throw validation('NextToken is not supported locally: every result is Complete');
      if (ScanBy !== undefined && ScanBy !== 'TimestampDescending' && ScanBy !== 'TimestampAscending') throw validation('ScanBy must be TimestampDescending or TimestampAscending');
      // CloudWatch rounds a StartTime of the last 15 days down to the minute.
      const start = Math.floor(StartTime / 60) * 60_000;
      const end = EndTime * 1000;
      const ids = new Set<string>();
      const results: Record<string, unknown>[] = [];
      for (const query of MetricDataQueries as Record<string, unknown>[]) {
        const id = query.Id;
        if (typeof id !== 'string' || !/^[a-z][a-zA-Z0-9_]*$/.test(id)) throw validation(`The Id ${JSON.stringify(id)} must start with a lower-case letter and hold only letters, digits and underscores`);
        if (ids.has(id)) throw validation(`The Id ${id} is used by more than one query`);
        ids.add(id);
        if (query.Expression !== undefined) {
          throw validation(`Query ${id}: Expression (metric math, Metrics Insights) is not supported locally; use MetricStat with one of ${METRIC_DATA_STATS.join(', ')}`);
        }
        const stat = query.MetricStat as { Metric?: Record<string, unknown>; Period?: unknown; Stat?: unknown; Unit?: unknown } | undefined;
        const metric = stat?.Metric;
        if (!metric || typeof metric.Namespace !== 'string' || typeof metric.MetricName !== 'string') throw validation(`Query ${id}: MetricStat with a Metric (Namespace, MetricName) is required`);
        if (typeof stat.Period !== 'number' || !(stat.Period > 0 && (stat.Period % 60 === 0 || [1, 5, 10, 20, 30].includes(stat.Period)))) {
          throw validation(`Query ${id}: Period must be 1, 5, 10, 20, 30 or a multiple of 60 seconds`);
        }
        if (!METRIC_DATA_STATS.includes(stat.Stat as Statistic)) throw validation(`Query ${id}: Stat ${JSON.stringify(stat.Stat)} is not served locally (one of ${METRIC_DATA_STATS.join(', ')})`);
        if (query.ReturnData === false) continue;
        const period = stat.Period * 1000;
        const windows: { start: number; end: number }[] = [];
        for (let s = Math.floor(start / period) * period; s < end; s += period) windows.push({ start: s, end: s + period });
        const key = metricKey(metric.Namespace, metric.MetricName, dimensionsOf(metric.Dimensions));
        const unit = typeof stat.Unit === 'string' ? stat.Unit : undefined;
        const stats = windows.map(({ start: from, end: to }) =>
          (series.get(key) ?? [])
            .filter((d) => d.timestamp >= from && d.timestamp < to && (unit === undefined || d.unit === unit))
            .reduce<PeriodStats | undefined>((acc, d) => merge(acc, d.stats), undefined),
        );
        const points = windows.flatMap((w, i) => (stats[i] ? [{ at: epoch(w.start), value: statisticOf(stats[i], stat.Stat as Statistic) }] : []));
        if (ScanBy !== 'TimestampAscending') points.reverse();
        results.push({
          Id: id,
          Label: typeof query.Label === 'string' ? query.Label : metric.MetricName,
          Timestamps: points.map((p) => p.at),
          Values: points.map((p) => p.value),
          StatusCode: 'Complete',
          Messages: [],
        });
      }
      return { MetricDataResults: results, Messages: [] };
    },
    DescribeAlarms: async ({ AlarmNames, AlarmNamePrefix, StateValue }) => {
      const names = Array.isArray(AlarmNames) ? new Set(AlarmNames as string[]) : undefined;
      const chosen = alarms.filter(
        (a) =>
          (!names || names.has(a.alarmName)) &&
          (typeof AlarmNamePrefix !== 'string' || a.alarmName.startsWith(AlarmNamePrefix)) &&
          (typeof StateValue !== 'string' || states.get(a.alarmName)!.state === StateValue),
      );
      return {
        MetricAlarms: chosen.map((a) => {
          const s = states.get(a.alarmName)!;
          return {
            AlarmName: a.alarmName,
            AlarmArn: a.alarmArn,
            AlarmDescription: a.description,
            StateValue: s.state,
            StateReason: s.reason,
            StateUpdatedTimestamp: epoch(Date.parse(s.at)),
            Namespace: a.namespace,
            MetricName: a.metricName,
            Dimensions: Object.entries(a.dimensions).map(([Name, Value]) => ({ Name, Value })),
            Statistic: a.statistic,
            Period: a.periodSeconds,
            EvaluationPeriods: a.evaluationPeriods,
            DatapointsToAlarm: a.datapointsToAlarm,
            Threshold: a.threshold,
            ComparisonOperator: a.comparison,
            TreatMissingData: a.treatMissingData,
            ActionsEnabled: a.actionsEnabled,
            AlarmActions: a.actions.ALARM,
            OKActions: a.actions.OK,
            InsufficientDataActions: a.actions.INSUFFICIENT_DATA,
          };
        }),
        CompositeAlarms: [],
      };
    },
  };

  const server = await startAwsJsonServer({
    contentType: CONTENT_TYPE,
    targetPrefix: TARGET_PREFIX,
    operations,
    errorOf: serviceErrorOf('InternalServiceFault'),
    ...(options.host ? { host: options.host } : {}),
    ...(options.port ? { port: options.port } : {}),
  });

  return {
    endpoint: server.endpoint,
    transitions,
    state: (name) => {
      const s = states.get(name);
      if (!s) throw new Error(`no alarm named ${name}`);
      return s.state;
    },
    evaluate: (now) => {
      const changed: AlarmTransition[] = [];
      for (const alarm of alarms) {
        const key = metricKey(alarm.namespace, alarm.metricName, alarm.dimensions);
        const values = windowStats(key, evaluationWindows(alarm, now)).map((s) => (s ? statisticOf(s, alarm.statistic) : undefined));
        const current = states.get(alarm.alarmName)!;
        const next = evaluateAlarm(alarm, values, current.state);
        if (next.state === current.state) continue;
        const transition: AlarmTransition = { alarmName: alarm.alarmName, from: current.state, to: next.state, at: now.toISOString(), reason: next.reason };
        states.set(alarm.alarmName, { state: next.state, reason: next.reason, at: transition.at });
        transitions.push(transition);
        changed.push(transition);
        if (!alarm.actionsEnabled) continue;
        for (const topicArn of alarm.actions[next.state].filter((arn) => arn.includes(':sns:'))) {
          // The outbox records who sent an alert in `executionId`: here the alarm.
          outbox.publish({ TopicArn: topicArn, ...notification(alarm, transition) }, alarm.alarmArn);
        }
      }
      return changed;
    },
    close: () => server.close(),
  };
}
