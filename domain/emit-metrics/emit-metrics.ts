/** What EmitMetrics reports after a publish: the values of the freshness signals. */
import { MetricName } from '../names.ts';
import { parseWarehouseTime } from '../time.ts';

export interface EmittedMetrics {
  readonly [MetricName.Published]: number;
  readonly [MetricName.RowsPublished]: number;
  readonly [MetricName.RunDurationSeconds]: number;
  /** Now minus the newest event time in the live table; -1 when the table is empty. */
  readonly [MetricName.DataLagSeconds]: number;
}

export interface PublishFacts {
  readonly rowsPublished: number;
  /** When the swap committed, as the manifest recorded it. */
  readonly publishedAt: string;
  readonly executionStartedAt: string;
  /** The newest time-column value in the live table, as the warehouse returned it; undefined when the table is empty. */
  readonly latestEventTime: string | undefined;
  readonly now: Date;
}

/** One publish, counted; the run's duration from the execution's start to the commit; the data's age now. */
export function publishMetrics(facts: PublishFacts): EmittedMetrics {
  const latest = facts.latestEventTime === undefined ? undefined : parseWarehouseTime(facts.latestEventTime);
  return {
    [MetricName.Published]: 1,
    [MetricName.RowsPublished]: facts.rowsPublished,
    [MetricName.RunDurationSeconds]: Math.max(0, (parseWarehouseTime(facts.publishedAt).getTime() - new Date(facts.executionStartedAt).getTime()) / 1000),
    [MetricName.DataLagSeconds]: latest ? Math.max(0, (facts.now.getTime() - latest.getTime()) / 1000) : -1,
  };
}
