/**
 * What a run costs the warehouse, by top-level state, from the local engine:
 * SQL statements run (the local endpoint's count, a batch by its statements),
 * transactions that wrote and committed (the transaction ids PostgreSQL
 * assigned in the state, by pg_xact_status: a read-only transaction takes none,
 * as on Redshift it queues no commit), and rows read (pg_stat_user_tables:
 * rows returned by sequential scans plus rows fetched by index scans). Exact
 * only on an endpoint that flushes statistics before a statement concludes
 * (LocalDataApiOptions.flushStatistics) and with no other session reading.
 */
import type pg from 'pg';
import type { LocalDataApi } from '../local/data-api/server.ts';
import { renderTable } from '../local/table.ts';

export interface StateWork {
  readonly state: string;
  readonly ms: number;
  readonly statements: number;
  readonly commits: number;
  readonly rowsRead: number;
}

interface Sample {
  readonly label: string;
  readonly at: number;
  readonly statements: number;
  readonly counters: Promise<{ nextXid: bigint; rowsRead: number }>;
}

const COUNTERS_SQL = `SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next_xid,
  (SELECT COALESCE(SUM(seq_tup_read + COALESCE(idx_tup_fetch, 0)), 0) FROM pg_stat_user_tables)::text AS rows_read`;

const COMMITTED_SQL = `SELECT COUNT(*)::int AS n FROM generate_series($1::bigint, $2::bigint - 1) AS x
  WHERE pg_xact_status(CAST(CAST(x AS text) AS xid8)) = 'committed'`;

/**
 * Samples the engine's counters at each `mark` (a top-level state entered, the
 * run's end): the work between two marks is the first one's state's. `db` is a
 * session of its own (a superuser's, to read every table's statistics).
 */
export class WarehouseWork {
  private readonly samples: Sample[] = [];

  constructor(
    private readonly db: pg.Client,
    private readonly api: LocalDataApi,
  ) {}

  /** Called synchronously from the runner's events: the query goes out before the next state's first statement can end. */
  mark(label: string): void {
    const counters = this.db.query(COUNTERS_SQL).then(({ rows }) => ({ nextXid: BigInt(rows[0].next_xid), rowsRead: Number(rows[0].rows_read) }));
    counters.catch(() => undefined);
    this.samples.push({ label, at: performance.now(), statements: this.api.statementsRun(), counters });
  }

  /** The work of each state between the marks, in order, a state entered twice summed. */
  async byState(): Promise<StateWork[]> {
    const counters = await Promise.all(this.samples.map((s) => s.counters));
    const work = new Map<string, { ms: number; statements: number; commits: number; rowsRead: number }>();
    for (let i = 0; i + 1 < this.samples.length; i++) {
      const [from, to] = [this.samples[i]!, this.samples[i + 1]!];
      const { rows } = await this.db.query(COMMITTED_SQL, [counters[i]!.nextXid.toString(), counters[i + 1]!.nextXid.toString()]);
      const w = work.get(from.label) ?? { ms: 0, statements: 0, commits: 0, rowsRead: 0 };
      w.ms += to.at - from.at;
      w.statements += to.statements - from.statements;
      w.commits += Number(rows[0].n);
      w.rowsRead += counters[i + 1]!.rowsRead - counters[i]!.rowsRead;
      work.set(from.label, w);
    }
    return [...work].map(([state, w]) => ({ state, ...w }));
  }
}

/** Sums of a run's states. */
export function totalWork(states: readonly StateWork[]): Omit<StateWork, 'state'> {
  const sum = (pick: (w: StateWork) => number) => states.reduce((total, w) => total + pick(w), 0);
  return { ms: sum((w) => w.ms), statements: sum((w) => w.statements), commits: sum((w) => w.commits), rowsRead: sum((w) => w.rowsRead) };
}

/** Where a run's time and reads go: one row per state with work, then the total; rows read also per source row. */
export function warehouseWorkTable(title: string, states: readonly StateWork[], sourceRows: number): string {
  const total = totalWork(states);
  const row = (name: string, w: Omit<StateWork, 'state'>) => [
    name,
    `${(w.ms / 1000).toFixed(2)} s`,
    w.statements.toLocaleString('en-US'),
    w.commits.toLocaleString('en-US'),
    w.rowsRead.toLocaleString('en-US'),
    (w.rowsRead / sourceRows).toFixed(2),
  ];
  const shown = states.filter((w) => w.statements > 0 || w.rowsRead > 0 || w.ms >= 10);
  return `${renderTable(
    [title, 'time', 'statements', 'commits', 'rows read', 'per source row'],
    [...shown.map((w) => row(w.state, w)), row('whole run', total)],
    ['l', 'r', 'r', 'r', 'r', 'r'],
  )}\n`;
}
