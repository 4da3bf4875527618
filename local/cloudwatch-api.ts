// A local CloudWatch endpoint: the metrics a local run writes, and the stack's
// alarms as synthesized, evaluated on them. The JS SDK, boto3 and the AWS CLI work
// against it with only the endpoint changed (local/aws-clients.ts). It serves
// PutMetricData, GetMetricStatistics, GetMetricData (MetricStat), ListMetrics,
// DescribeAlarms, DescribeAlarmsForMetric and SetAlarmState, refusing what
// CloudWatch refuses (local/cloudwatch-requests.ts). Alarms are evaluated only by
// evaluate(now), never on a timer; an `AWS/` namespace takes writes only from
// LOCAL_AWS_SERVICE_ACCESS_KEY_ID. Wire: docs/decisions/cloudwatch-protocols-from-the-sdk-model.md
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html
// https://smithy.io/2.0/aws/protocols/aws-query-protocol.html#aws-protocols-awsquerycompatible-trait
import { join } from 'node:path';
import { STATE_DIR } from '../lib/project.ts';
import { type AwsJsonCaller, type AwsJsonError, type AwsJsonOperation, AwsServiceError, serviceErrorOf, startAwsJsonServer } from './aws-json-server.ts';
import { type AlarmState, evaluateAlarm, evaluationWindows, type MetricAlarm, type PeriodStats, type Statistic, statisticOf } from './cloudwatch-alarms.ts';
import { cloudWatchCborProtocol } from './cloudwatch-cbor.ts';
import { CLOUDWATCH_SERVICE_TARGET, queryErrorOf } from './cloudwatch-model.ts';
import { cloudWatchQueryProtocol } from './cloudwatch-query.ts';
import { combination, exclusive, invalid, missing, optionalEnum, optionalList, optionalRange, pageOf, validation } from './cloudwatch-requests.ts';
import { SnsOutbox } from './sns-outbox.ts';

const CONTENT_TYPE = 'application/x-amz-json-1.0';
const TARGET_PREFIX = `${CLOUDWATCH_SERVICE_TARGET}.`;

/**
 * The access key id of the local engine's AWS services (the Lambda service
 * writing AWS/Lambda): the one caller the endpoint lets write an `AWS/`
 * namespace. Handlers sign with other keys (local/aws-clients.ts), so they
 * are refused there as CloudWatch refuses them.
 */
export const LOCAL_AWS_SERVICE_ACCESS_KEY_ID = 'local-aws-service';

/** The statistics served locally, GetMetricStatistics' Statistics (percentiles are not: the endpoint keeps each period reduced). */
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
  /** The endpoint's clock: what PutMetricData checks timestamps against (two weeks back, two hours ahead), ListMetrics' RecentlyActive reads and SetAlarmState stamps. @default the real one */
  readonly clock?: () => Date;
  readonly host?: string;
  readonly port?: number;
}

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

const asDimensionList = (dimensions: Readonly<Record<string, string>>) => Object.entries(dimensions).map(([Name, Value]) => ({ Name, Value }));

/** A datum's values as one period's stats: Value, Values with Counts, or StatisticValues (member `n` of MetricData). */
function statsOf(datum: Record<string, unknown>, n: number): PeriodStats {
  if (datum.Value !== undefined && datum.StatisticValues !== undefined)
    throw exclusive(`MetricData.member.${n}.Value`, `MetricData.member.${n}.StatisticValues`);
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

/** Whether `period` (seconds) is one CloudWatch takes: a multiple of 60, or one of the high-resolution periods `subMinute`. */
const periodAllowed = (period: unknown, subMinute: readonly number[]): period is number =>
  typeof period === 'number' && Number.isInteger(period) && period > 0 && (period % 60 === 0 || subMinute.includes(period));

/** The aligned periods `[start, end)` (epoch ms) from the one holding `start` to the one holding `end`. */
function periodsBetween(start: number, end: number, periodSeconds: number): { start: number; end: number }[] {
  const period = periodSeconds * 1000;
  const windows: { start: number; end: number }[] = [];
  for (let s = Math.floor(start / period) * period; s < end; s += period) windows.push({ start: s, end: s + period });
  return windows;
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

/** What the client sees of an error: its shape, and the status and `x-amzn-query-error` of its query code (ResourceNotFound: 404). */
const errorOfShape = serviceErrorOf('InternalServiceFault');
function cloudWatchErrorOf(error: unknown): AwsJsonError {
  const refused = errorOfShape(error);
  const query = queryErrorOf(refused.shape);
  return { ...refused, status: refused.status >= 500 ? refused.status : query.status, headers: { 'x-amzn-query-error': `${query.code};${query.fault}` } };
}

interface Series {
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: Readonly<Record<string, string>>;
  readonly points: Datapoint[];
  /** When PutMetricData last wrote it (epoch ms, the endpoint's clock): what ListMetrics' RecentlyActive reads. */
  receivedAt: number;
}

interface StateRecord {
  readonly state: AlarmState;
  readonly reason: string;
  readonly reasonData?: string;
  /** When the state or its reason last changed, and when the state last changed (ISO 8601). */
  readonly updatedAt: string;
  readonly transitionedAt: string;
}

const ALARM_TYPES = ['CompositeAlarm', 'MetricAlarm'] as const;
const STATES: readonly AlarmState[] = ['OK', 'ALARM', 'INSUFFICIENT_DATA'];
/** DescribeAlarms' MaxRecords (default and most) and ListMetrics' page size. */
const ALARM_PAGE = { default: 50, max: 100 } as const;
const METRICS_PAGE = 500;
/** ListMetrics' RecentlyActive: the only value, PT3H. */
const RECENTLY_ACTIVE_MS = 3 * 3600_000;
/** GetMetricStatistics' most datapoints a request. */
const MAX_DATAPOINTS = 1440;
const PERCENTILE = /^p(\d{1,2}(\.\d{1,10})?|100(\.0{1,10})?)$/;

export async function startLocalCloudWatchApi(options: LocalCloudWatchOptions): Promise<LocalCloudWatchApi> {
  const clock = options.clock ?? (() => new Date());
  const outbox = options.outbox ?? new SnsOutbox(join(STATE_DIR, 'outbox', 'alerts.jsonl'));
  const series = new Map<string, Series>();
  const alarms = options.alarms;
  const alarmNamed = new Map(alarms.map((a) => [a.alarmName, a]));
  const createdAt = clock().toISOString();
  const states = new Map<string, StateRecord>(
    alarms.map((a) => [
      a.alarmName,
      { state: 'INSUFFICIENT_DATA', reason: 'Unchecked: Initial alarm creation', updatedAt: createdAt, transitionedAt: createdAt },
    ]),
  );
  const transitions: AlarmTransition[] = [];
  const epoch = (ms: number) => ms / 1000;

  /** Each window's stats for a metric, in `unit` only when given (undefined: no datapoint in it). */
  const windowStats = (key: string, windows: { start: number; end: number }[], unit?: string) =>
    windows.map(({ start, end }) =>
      (series.get(key)?.points ?? [])
        .filter((d) => d.timestamp >= start && d.timestamp < end && (unit === undefined || d.unit === unit))
        .reduce<PeriodStats | undefined>((acc, d) => merge(acc, d.stats), undefined),
    );

  /** Moves an alarm to `to`, running that state's actions; nothing when it is in `to` already. */
  const transition = (alarm: MetricAlarm, to: AlarmState, reason: string, at: string, reasonData?: string): AlarmTransition | undefined => {
    const current = states.get(alarm.alarmName)!;
    if (to === current.state) return undefined;
    const changed: AlarmTransition = { alarmName: alarm.alarmName, from: current.state, to, at, reason };
    states.set(alarm.alarmName, { state: to, reason, ...(reasonData === undefined ? {} : { reasonData }), updatedAt: at, transitionedAt: at });
    transitions.push(changed);
    if (alarm.actionsEnabled) {
      for (const topicArn of alarm.actions[to].filter((arn) => arn.includes(':sns:'))) {
        // The outbox records who sent an alert in `executionId`: here the alarm.
        outbox.publish({ TopicArn: topicArn, ...notification(alarm, changed) }, alarm.alarmArn);
      }
    }
    return changed;
  };

  const describe = (a: MetricAlarm) => {
    const s = states.get(a.alarmName)!;
    return {
      AlarmName: a.alarmName,
      AlarmArn: a.alarmArn,
      AlarmDescription: a.description,
      AlarmConfigurationUpdatedTimestamp: epoch(Date.parse(createdAt)),
      StateValue: s.state,
      StateReason: s.reason,
      ...(s.reasonData === undefined ? {} : { StateReasonData: s.reasonData }),
      StateUpdatedTimestamp: epoch(Date.parse(s.updatedAt)),
      StateTransitionedTimestamp: epoch(Date.parse(s.transitionedAt)),
      Namespace: a.namespace,
      MetricName: a.metricName,
      Dimensions: asDimensionList(a.dimensions),
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
  };

  const operations: Record<string, AwsJsonOperation> = {
    PutMetricData: async ({ Namespace, MetricData }, caller: AwsJsonCaller) => {
      if (typeof Namespace !== 'string' || Namespace === '') throw missing('Namespace');
      if (Namespace.startsWith('AWS/') && caller.accessKeyId !== LOCAL_AWS_SERVICE_ACCESS_KEY_ID)
        throw invalid('The value AWS/ for parameter Namespace is reserved');
      if (!Array.isArray(MetricData) || MetricData.length === 0) throw missing('MetricData');
      if (MetricData.length > PUT_METRIC_DATA_LIMITS.metrics)
        throw invalid(`The collection MetricData must not have a size greater than ${PUT_METRIC_DATA_LIMITS.metrics}.`);
      const now = clock().getTime();
      const accepted: [Omit<Series, 'points' | 'receivedAt'>, Datapoint][] = [];
      for (const [i, datum] of (MetricData as Record<string, unknown>[]).entries()) {
        if (typeof datum.MetricName !== 'string' || datum.MetricName === '') throw missing(`MetricData.member.${i + 1}.MetricName`);
        const dimensions = dimensionsOf(datum.Dimensions);
        if (Object.keys(dimensions).length > PUT_METRIC_DATA_LIMITS.dimensions)
          throw invalid(`At most ${PUT_METRIC_DATA_LIMITS.dimensions} dimensions a metric`);
        const timestamp = typeof datum.Timestamp === 'number' ? datum.Timestamp * 1000 : now;
        if (timestamp < now - PUT_METRIC_DATA_LIMITS.pastMs || timestamp > now + PUT_METRIC_DATA_LIMITS.aheadMs) {
          throw invalid(
            `The parameter MetricData.member.Timestamp must be within two weeks before and two hours after now, got ${new Date(timestamp).toISOString()}`,
          );
        }
        accepted.push([
          { namespace: Namespace, metricName: datum.MetricName, dimensions },
          { timestamp, stats: statsOf(datum, i + 1), ...(typeof datum.Unit === 'string' ? { unit: datum.Unit } : {}) },
        ]);
      }
      // All or nothing, as one request is.
      for (const [metric, point] of accepted) {
        const key = metricKey(metric.namespace, metric.metricName, metric.dimensions);
        const known = series.get(key) ?? { ...metric, points: [], receivedAt: now };
        known.points.push(point);
        known.receivedAt = now;
        series.set(key, known);
      }
      return {};
    },
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricStatistics.html
    GetMetricStatistics: async ({ Namespace, MetricName, Dimensions, StartTime, EndTime, Period, Statistics, ExtendedStatistics, Unit }) => {
      for (const [name, value] of Object.entries({ Namespace, MetricName, StartTime, EndTime, Period })) if (value === undefined) throw missing(name);
      if (typeof Namespace !== 'string' || typeof MetricName !== 'string' || typeof StartTime !== 'number' || typeof EndTime !== 'number') {
        throw invalid('Namespace and MetricName must be strings, StartTime and EndTime timestamps');
      }
      const statistics = optionalList<unknown>(Statistics, 'Statistics', 5);
      const percentiles = optionalList<unknown>(ExtendedStatistics, 'ExtendedStatistics', 10);
      if (statistics && percentiles) throw exclusive('Statistics', 'ExtendedStatistics');
      if (!statistics && !percentiles) throw combination('Must specify either Statistics or ExtendedStatistics.');
      statistics?.forEach((s, i) => {
        if (!METRIC_DATA_STATS.includes(s as Statistic))
          throw invalid(`The parameter Statistics.member.${i + 1} must be a value in the set [${METRIC_DATA_STATS.join(', ')}].`);
      });
      percentiles?.forEach((p, i) => {
        if (typeof p !== 'string' || !PERCENTILE.test(p))
          throw invalid(`The parameter ExtendedStatistics.member.${i + 1} must be a percentile from p0.0 to p100, got ${String(p)}.`);
      });
      if (percentiles)
        throw invalid(
          `ExtendedStatistics (${percentiles.join(', ')}) are not served locally: the endpoint keeps each period reduced to ${METRIC_DATA_STATS.join(', ')}`,
        );
      if (StartTime >= EndTime) throw invalid('The parameter StartTime must be less than the parameter EndTime.');
      if (!periodAllowed(Period, [1, 5, 10, 30])) throw invalid('The parameter Period must be 1, 5, 10, 30 or a multiple of 60.');
      const requested = Math.ceil((EndTime - StartTime) / Period);
      if (requested > MAX_DATAPOINTS) {
        throw combination(
          `You have requested up to ${requested} datapoints, which exceeds the limit of ${MAX_DATAPOINTS}. You may reduce the datapoints requested by increasing Period, or decreasing the time range.`,
        );
      }
      const windows = periodsBetween(StartTime * 1000, EndTime * 1000, Period);
      const key = metricKey(Namespace, MetricName, dimensionsOf(Dimensions));
      const unit = typeof Unit === 'string' ? Unit : undefined;
      const stats = windowStats(key, windows, unit);
      const units = unit === undefined ? new Set((series.get(key)?.points ?? []).map((d) => d.unit).filter(Boolean)) : new Set([unit]);
      const datapoints = windows.flatMap((w, i) => {
        const s = stats[i];
        if (!s) return [];
        const point: Record<string, unknown> = { Timestamp: epoch(w.start) };
        for (const statistic of statistics as Statistic[]) point[statistic] = statisticOf(s, statistic);
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
      optionalEnum(ScanBy, 'ScanBy', ['TimestampDescending', 'TimestampAscending']);
      // CloudWatch rounds a StartTime of the last 15 days down to the minute.
      const start = Math.floor(StartTime / 60) * 60_000;
      const end = EndTime * 1000;
      const ids = new Set<string>();
      const results: Record<string, unknown>[] = [];
      for (const query of MetricDataQueries as Record<string, unknown>[]) {
        const id = query.Id;
        if (typeof id !== 'string' || !/^[a-z][a-zA-Z0-9_]*$/.test(id))
          throw validation(`The Id ${JSON.stringify(id)} must start with a lower-case letter and hold only letters, digits and underscores`);
        if (ids.has(id)) throw validation(`The Id ${id} is used by more than one query`);
        ids.add(id);
        if (query.Expression !== undefined) {
          throw validation(
            `Query ${id}: Expression (metric math, Metrics Insights) is not supported locally; use MetricStat with one of ${METRIC_DATA_STATS.join(', ')}`,
          );
        }
        const stat = query.MetricStat as { Metric?: Record<string, unknown>; Period?: unknown; Stat?: unknown; Unit?: unknown } | undefined;
        const metric = stat?.Metric;
        if (!metric || typeof metric.Namespace !== 'string' || typeof metric.MetricName !== 'string')
          throw validation(`Query ${id}: MetricStat with a Metric (Namespace, MetricName) is required`);
        if (!periodAllowed(stat.Period, [1, 5, 10, 20, 30])) throw validation(`Query ${id}: Period must be 1, 5, 10, 20, 30 or a multiple of 60 seconds`);
        if (!METRIC_DATA_STATS.includes(stat.Stat as Statistic))
          throw validation(`Query ${id}: Stat ${JSON.stringify(stat.Stat)} is not served locally (one of ${METRIC_DATA_STATS.join(', ')})`);
        if (query.ReturnData === false) continue;
        const windows = periodsBetween(start, end, stat.Period);
        const key = metricKey(metric.Namespace, metric.MetricName, dimensionsOf(metric.Dimensions));
        const stats = windowStats(key, windows, typeof stat.Unit === 'string' ? stat.Unit : undefined);
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
    // Every metric written (none of AWS's own but those the local services write), 500 a page,
    // in an order of the endpoint's; a dimension filter matches a metric that has that dimension (with that value, if given).
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_ListMetrics.html
    ListMetrics: async ({ Namespace, MetricName, Dimensions, NextToken, RecentlyActive }) => {
      const filters = optionalList<{ Name?: unknown; Value?: unknown }>(Dimensions, 'Dimensions', 10) ?? [];
      for (const f of filters) if (typeof f?.Name !== 'string') throw missing('Dimensions.member.N.Name');
      const recent = optionalEnum(RecentlyActive, 'RecentlyActive', ['PT3H']) === undefined ? undefined : clock().getTime() - RECENTLY_ACTIVE_MS;
      const chosen = [...series.entries()].filter(
        ([, m]) =>
          (Namespace === undefined || m.namespace === Namespace) &&
          (MetricName === undefined || m.metricName === MetricName) &&
          filters.every((f) => Object.hasOwn(m.dimensions, f.Name as string) && (f.Value === undefined || m.dimensions[f.Name as string] === f.Value)) &&
          (recent === undefined || m.receivedAt >= recent),
      );
      const page = pageOf(
        chosen,
        ([key]) => key,
        NextToken,
        METRICS_PAGE,
        () => invalid('The NextToken is not valid.'),
      );
      return {
        Metrics: page.items.map(([, m]) => ({ Namespace: m.namespace, MetricName: m.metricName, Dimensions: asDimensionList(m.dimensions) })),
        ...(page.nextToken ? { NextToken: page.nextToken } : {}),
      };
    },
    // By name, in name order, MaxRecords a page. No composite alarm exists locally (the stack defines
    // none): CompositeAlarms is empty when AlarmTypes asks for it, and so is any question about parents or children.
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_DescribeAlarms.html
    DescribeAlarms: async (input) => {
      const { AlarmNames, AlarmNamePrefix, AlarmTypes, ChildrenOfAlarmName, ParentsOfAlarmName, StateValue, ActionPrefix, MaxRecords, NextToken } = input;
      // An empty list (the query protocol's `AlarmNames=`) asks for no filter.
      const names = optionalList<string>(AlarmNames, 'AlarmNames', 100);
      if (names?.length && AlarmNamePrefix !== undefined) throw exclusive('AlarmNames', 'AlarmNamePrefix');
      const listed = optionalList<unknown>(AlarmTypes, 'AlarmTypes', ALARM_TYPES.length);
      const types = (listed?.length ? listed : ['MetricAlarm']).map((t) => optionalEnum(t, 'AlarmTypes', ALARM_TYPES));
      const state = optionalEnum(StateValue, 'StateValue', STATES);
      const size = optionalRange(MaxRecords, 'MaxRecords', 1, ALARM_PAGE.max) ?? ALARM_PAGE.default;
      const family = ChildrenOfAlarmName ?? ParentsOfAlarmName;
      if (family !== undefined) {
        const other = Object.keys(input).filter((k) => !['ChildrenOfAlarmName', 'ParentsOfAlarmName', 'AlarmTypes', 'MaxRecords', 'NextToken'].includes(k));
        if (ChildrenOfAlarmName !== undefined && ParentsOfAlarmName !== undefined) throw exclusive('ChildrenOfAlarmName', 'ParentsOfAlarmName');
        if (other.length > 0)
          throw validation(`With ChildrenOfAlarmName or ParentsOfAlarmName, only AlarmTypes, MaxRecords and NextToken may be given, not ${other.join(', ')}`);
      }
      const actions = (a: MetricAlarm) => [...a.actions.ALARM, ...a.actions.OK, ...a.actions.INSUFFICIENT_DATA];
      const chosen = alarms.filter(
        (a) =>
          family === undefined &&
          types.includes('MetricAlarm') &&
          (!names?.length || names.includes(a.alarmName)) &&
          (typeof AlarmNamePrefix !== 'string' || a.alarmName.startsWith(AlarmNamePrefix)) &&
          (state === undefined || states.get(a.alarmName)!.state === state) &&
          (typeof ActionPrefix !== 'string' || actions(a).some((arn) => arn.startsWith(ActionPrefix))),
      );
      const page = pageOf(
        chosen,
        (a) => a.alarmName,
        NextToken,
        size,
        () => new AwsServiceError('InvalidNextToken', 'The NextToken is not valid.'),
      );
      return {
        ...(types.includes('MetricAlarm') ? { MetricAlarms: page.items.map(describe) } : {}),
        ...(types.includes('CompositeAlarm') ? { CompositeAlarms: [] } : {}),
        ...(page.nextToken ? { NextToken: page.nextToken } : {}),
      };
    },
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_DescribeAlarmsForMetric.html
    DescribeAlarmsForMetric: async ({ Namespace, MetricName, Dimensions, Statistic, ExtendedStatistic, Period, Unit }) => {
      if (Namespace === undefined) throw missing('Namespace');
      if (MetricName === undefined) throw missing('MetricName');
      const dimensions = Dimensions === undefined ? undefined : metricKey('', '', dimensionsOf(Dimensions));
      const chosen = alarms.filter(
        (a) =>
          a.namespace === Namespace &&
          a.metricName === MetricName &&
          (dimensions === undefined || metricKey('', '', a.dimensions) === dimensions) &&
          (Statistic === undefined || a.statistic === Statistic) &&
          // No local alarm has a percentile statistic or a unit.
          ExtendedStatistic === undefined &&
          Unit === undefined &&
          (Period === undefined || a.periodSeconds === Period),
      );
      return { MetricAlarms: chosen.map(describe) };
    },
    // As on AWS, the state holds until the next evaluation, and a change runs the new state's actions.
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_SetAlarmState.html
    SetAlarmState: async ({ AlarmName, StateValue, StateReason, StateReasonData }) => {
      if (AlarmName === undefined) throw missing('AlarmName');
      if (StateValue === undefined) throw missing('StateValue');
      if (StateReason === undefined) throw missing('StateReason');
      const to = optionalEnum(StateValue, 'StateValue', STATES)!;
      if (StateReasonData !== undefined) {
        try {
          JSON.parse(String(StateReasonData));
        } catch {
          throw new AwsServiceError('InvalidFormatFault', 'The parameter StateReasonData must be valid JSON.');
        }
      }
      const alarm = alarmNamed.get(String(AlarmName));
      if (!alarm) throw new AwsServiceError('ResourceNotFound', `Alarm ${String(AlarmName)} does not exist.`);
      const at = clock().toISOString();
      const reasonData = StateReasonData === undefined ? undefined : String(StateReasonData);
      if (!transition(alarm, to, String(StateReason), at, reasonData)) {
        states.set(alarm.alarmName, {
          ...states.get(alarm.alarmName)!,
          reason: String(StateReason),
          ...(reasonData === undefined ? {} : { reasonData }),
          updatedAt: at,
        });
      }
      return {};
    },
  };

  const server = await startAwsJsonServer({
    contentType: CONTENT_TYPE,
    targetPrefix: TARGET_PREFIX,
    operations,
    errorOf: cloudWatchErrorOf,
    protocols: [cloudWatchQueryProtocol, cloudWatchCborProtocol],
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
    evaluate: (now) =>
      alarms.flatMap((alarm) => {
        const key = metricKey(alarm.namespace, alarm.metricName, alarm.dimensions);
        const values = windowStats(key, evaluationWindows(alarm, now)).map((s) => (s ? statisticOf(s, alarm.statistic) : undefined));
        const next = evaluateAlarm(alarm, values, states.get(alarm.alarmName)!.state);
        return transition(alarm, next.state, next.reason, now.toISOString()) ?? [];
      }),
    close: () => server.close(),
  };
}
