/**
 * The stack's metric alarms as synthesized, evaluated at an instant as
 * CloudWatch evaluates them: INSUFFICIENT_DATA at first; the last
 * EvaluationPeriods periods up to the last whole minute, each reduced by the
 * statistic, M of N breaching (DatapointsToAlarm) to ALARM; missing periods
 * by TreatMissingData; each change of state runs the new state's actions.
 * Cadence, and what is not modelled: docs/decisions/alarms-evaluated-every-minute.md
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html
 */
import { type CfnResource, LOCAL_ACCOUNT, LOCAL_PARTITION, LOCAL_REGION, resolveToken } from '../lib/definition.ts';
import type { Template } from './template.ts';

export type AlarmState = 'OK' | 'ALARM' | 'INSUFFICIENT_DATA';
export type Statistic = 'SampleCount' | 'Average' | 'Sum' | 'Minimum' | 'Maximum';
export type Comparison = 'GreaterThanOrEqualToThreshold' | 'GreaterThanThreshold' | 'LessThanThreshold' | 'LessThanOrEqualToThreshold';
export type MissingData = 'breaching' | 'notBreaching' | 'ignore' | 'missing';

export interface MetricAlarm {
  readonly logicalId: string;
  readonly alarmName: string;
  readonly alarmArn: string;
  readonly description: string;
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: Readonly<Record<string, string>>;
  readonly statistic: Statistic;
  readonly periodSeconds: number;
  readonly evaluationPeriods: number;
  readonly datapointsToAlarm: number;
  readonly threshold: number;
  readonly comparison: Comparison;
  readonly treatMissingData: MissingData;
  readonly actionsEnabled: boolean;
  readonly actions: Readonly<Record<AlarmState, readonly string[]>>;
}

/** One period's values reduced: what every statistic is computed from. */
export interface PeriodStats {
  readonly sampleCount: number;
  readonly sum: number;
  readonly minimum: number;
  readonly maximum: number;
}

export function statisticOf(stats: PeriodStats, statistic: Statistic): number {
  switch (statistic) {
    case 'SampleCount':
      return stats.sampleCount;
    case 'Sum':
      return stats.sum;
    case 'Average':
      return stats.sum / stats.sampleCount;
    case 'Minimum':
      return stats.minimum;
    case 'Maximum':
      return stats.maximum;
  }
}

const STATISTICS: readonly Statistic[] = ['SampleCount', 'Average', 'Sum', 'Minimum', 'Maximum'];
const COMPARISONS: readonly Comparison[] = ['GreaterThanOrEqualToThreshold', 'GreaterThanThreshold', 'LessThanThreshold', 'LessThanOrEqualToThreshold'];
const MISSING: readonly MissingData[] = ['breaching', 'notBreaching', 'ignore', 'missing'];

function oneOf<T extends string>(value: unknown, allowed: readonly T[], what: string, id: string): T {
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new Error(`alarm ${id}: ${what} ${JSON.stringify(value)} is not evaluated locally (one of ${allowed.join(', ')})`);
}

/**
 * Every AWS::CloudWatch::Alarm of the template on a single metric, its
 * tokens resolved as the local engine names things (a topic's ARN as the
 * state machine's Notify sees it). An alarm on metric math is refused.
 */
export function alarmsFromTemplate(template: Template, stackName = 'AtomicPublish'): MetricAlarm[] {
  const resources = template.Resources as unknown as Record<string, CfnResource>;
  const alarms: MetricAlarm[] = [];
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::CloudWatch::Alarm') continue;
    const p = resource.Properties ?? {};
    if (p.Metrics !== undefined || typeof p.MetricName !== 'string') throw new Error(`alarm ${id}: only alarms on one metric are evaluated locally`);
    const resolve = (value: unknown) => resolveToken(value, resources);
    const alarmName = p.AlarmName === undefined ? `${stackName}-${id}` : resolve(p.AlarmName);
    const list = (value: unknown) => (Array.isArray(value) ? value.map(resolve) : []);
    const evaluationPeriods = Number(p.EvaluationPeriods);
    alarms.push({
      logicalId: id,
      alarmName,
      alarmArn: `arn:${LOCAL_PARTITION}:cloudwatch:${LOCAL_REGION}:${LOCAL_ACCOUNT}:alarm:${alarmName}`,
      description: p.AlarmDescription === undefined ? '' : resolve(p.AlarmDescription),
      namespace: resolve(p.Namespace),
      metricName: p.MetricName,
      dimensions: Object.fromEntries(((p.Dimensions ?? []) as { Name: string; Value: unknown }[]).map((d) => [d.Name, resolve(d.Value)])),
      statistic: oneOf(p.Statistic, STATISTICS, 'statistic', id),
      periodSeconds: Number(p.Period),
      evaluationPeriods,
      datapointsToAlarm: p.DatapointsToAlarm === undefined ? evaluationPeriods : Number(p.DatapointsToAlarm),
      threshold: Number(p.Threshold),
      comparison: oneOf(p.ComparisonOperator, COMPARISONS, 'comparison', id),
      treatMissingData: p.TreatMissingData === undefined ? 'missing' : oneOf(p.TreatMissingData, MISSING, 'treatMissingData', id),
      actionsEnabled: p.ActionsEnabled !== false,
      actions: { ALARM: list(p.AlarmActions), OK: list(p.OKActions), INSUFFICIENT_DATA: list(p.InsufficientDataActions) },
    });
  }
  return alarms;
}

export function breaches(value: number, alarm: Pick<MetricAlarm, 'comparison' | 'threshold'>): boolean {
  switch (alarm.comparison) {
    case 'GreaterThanOrEqualToThreshold':
      return value >= alarm.threshold;
    case 'GreaterThanThreshold':
      return value > alarm.threshold;
    case 'LessThanThreshold':
      return value < alarm.threshold;
    case 'LessThanOrEqualToThreshold':
      return value <= alarm.threshold;
  }
}

/** How often CloudWatch evaluates an alarm: every minute; every 10 seconds with a period under a minute (10, 20 or 30 seconds). */
export function evaluationIntervalSeconds(alarm: Pick<MetricAlarm, 'periodSeconds'>): number {
  return alarm.periodSeconds < 60 ? 10 : 60;
}

/** The alarm's evaluation periods at `now`, newest first: `[start, end)` in epoch milliseconds, the newest ending at the last evaluation instant. */
export function evaluationWindows(alarm: MetricAlarm, now: Date): { start: number; end: number }[] {
  const period = alarm.periodSeconds * 1000;
  const step = evaluationIntervalSeconds(alarm) * 1000;
  const lastEnd = Math.floor(now.getTime() / step) * step;
  return Array.from({ length: alarm.evaluationPeriods }, (_, k) => ({ start: lastEnd - (k + 1) * period, end: lastEnd - k * period }));
}

export interface Evaluation {
  readonly state: AlarmState;
  readonly reason: string;
}

/**
 * The alarm's state at `now` from its periods' statistics (undefined: no
 * data in that period), given its current state (kept by `ignore`).
 */
export function evaluateAlarm(alarm: MetricAlarm, periods: readonly (number | undefined)[], current: AlarmState): Evaluation {
  const present = periods.filter((v): v is number => v !== undefined);
  const missing = periods.length - present.length;
  const breachingPresent = present.filter((v) => breaches(v, alarm)).length;
  const shown = periods.map((v) => (v === undefined ? 'missing' : String(v))).join(', ');
  const describe = (breaching: number) =>
    `${breaching} of the last ${periods.length} datapoints [${shown}] (newest first) ${alarm.comparison} ${alarm.threshold}, ` +
    `${alarm.datapointsToAlarm} needed to alarm; missing data treated as ${alarm.treatMissingData}`;
  if (present.length === 0 && (alarm.treatMissingData === 'missing' || alarm.treatMissingData === 'ignore')) {
    return alarm.treatMissingData === 'ignore'
      ? { state: current, reason: `no datapoint in the last ${periods.length} periods: state kept (ignore)` }
      : { state: 'INSUFFICIENT_DATA', reason: `no datapoint in the last ${periods.length} periods` };
  }
  const breaching = breachingPresent + (alarm.treatMissingData === 'breaching' ? missing : 0);
  return { state: breaching >= alarm.datapointsToAlarm ? 'ALARM' : 'OK', reason: describe(breaching) };
}
