// The whole workflow on real parts, for one test file: a fresh database with the
// sample warehouse, a local Data API endpoint and a LocalRunner executing the
// synthesized state machine against it; close it in afterAll. Faults per test in
// `wf.faults.<TaskState>` (cleared by `wf.reset()`); LoadChunks counted in `wf.loads`.
//
//   const wf = await useWorkflow('wf_success'); await wf.sample({ rowsPerDay: 20, sourceDays: 12, liveDays: 8 });
//   const result = await wf.run(10);                 // { pipeline: 'sales_order_lines', to: sampleDay(10) }
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { chunkOfLoadStatement, loadStatementPrefix } from '../../domain/load-chunk/sql/load-chunk.ts';
import { batchIdFor, previousVersionTableFor, resolveInterval, stagingTableFor } from '../../domain/plan/plan.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { isChunkLoadState } from '../../lib/workflow-steps.ts';
import { localHandlerEnvironment, localWarehouse } from '../../local/aws-clients.ts';
import type { StatementFault } from '../../local/data-api/runner.ts';
import { applyPipelineSetup, ensureLocalUser, LOCAL_PIPELINE_USER } from '../../local/database-users.ts';
import { withClient } from '../../local/pg-clients.ts';
import { dropDatabase, type PgConnection } from '../../local/postgres.ts';
import { type ExecutionEvent, type ExecutionResult, LocalRunner, type RunningExecution } from '../../local/runner.ts';
import { createSampleWarehouse, dailySalesPipeline, SAMPLE_EXPECTED_ROWS_SQL, type SampleOptions, sampleDay, samplePipeline } from '../../local/sample-data.ts';
import { suiteTargetKind } from './target-kind.ts';
import { useWarehouse, type Warehouse } from './warehouse.ts';

export const PIPELINE: Pipeline = samplePipeline();
export const LIVE = 'analytics.sales_order_lines';

/** Retry waits in workflow tests, as a fraction of the declared ones (a 2 s interval waits 4 ms). */
export const WORKFLOW_TIME_SCALE = 0.002;

export type TaskOverride = (input: unknown, next: (input: unknown) => Promise<unknown>) => Promise<unknown>;
const TASK_STATES = [
  'Plan',
  'LoadChunk',
  'Reconcile',
  'Publish',
  'Rollback',
  'EmitMetrics',
  'Cleanup',
  'RecordFailure',
  'CheckCleanup',
  // A publish group's (lib/publish-workflow.ts publishGroupPath).
  'MemberLoadChunk',
  'MemberReconcile',
  'PublishGroup',
  'MemberEmitMetrics',
  'MemberCleanup',
  // A window's child execution (lib/publish-workflow.ts windowedLoad).
  'PlanWindow',
  'WindowLoadChunk',
] as const;
export type TaskState = (typeof TASK_STATES)[number];
export interface TaskCall {
  readonly state: TaskState;
  readonly chunk?: number;
}

/** A full-content fingerprint of the live table's shape: row count, key sum and an ordered digest of every column. */
export interface Fingerprint {
  rows: number;
  keySum: string;
  digest: string;
}

export const FINGERPRINT = `
  SELECT count(*)::int AS rows,
         COALESCE(sum(order_id * 1000 + line_no), 0)::text AS "keySum",
         md5(COALESCE(string_agg(concat_ws(':', order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, unit_price),
                                 ',' ORDER BY order_id, line_no), '')) AS digest`;

/** The execution input of a manual run up to the start of sample day `day`. */
export function inputFor(day: number): { pipeline: string; to: string } {
  return { pipeline: PIPELINE.name, to: sampleDay(day).toISOString() };
}

/** Batch id, staging and old-version table names a run up to `day` uses (computed as Plan does). */
export function namesFor(day: number): { batchId: string; staging: string; previous: string } {
  const interval = resolveInterval(inputFor(day), PIPELINE, new Date());
  const batchId = batchIdFor(PIPELINE, interval);
  return {
    batchId,
    staging: `analytics.${stagingTableFor(PIPELINE, batchId)}`,
    previous: `analytics.${previousVersionTableFor(PIPELINE, batchId)}`,
  };
}

/** Events of task state `name` of one type (Map iteration events are forwarded with an index). */
export function stateEvents(result: ExecutionResult, type: ExecutionEvent['type'], name: string): ExecutionEvent[] {
  return result.events.filter((e) => e.type === type && e.state?.name === name);
}

/** Names of the states the execution entered, in order (Map iterations included). */
export function visited(result: ExecutionResult): string[] {
  return result.events.filter((e) => e.type === 'StateEntered').map((e) => e.state!.name);
}

/** The states entered, in order, without those of the chunk loads inside LoadChunks. */
export function visitedOutsideChunks(result: ExecutionResult): string[] {
  return visited(result).filter((s) => !isChunkLoadState(s));
}

/** The `$.error` the Catch handed to RecordFailure: what actually failed, before the Fail state renamed it. */
export function caughtError(result: ExecutionResult): { Error?: string; Cause?: string } | undefined {
  const entered = stateEvents(result, 'StateEntered', 'RecordFailure')[0];
  return (entered?.state?.input as { error?: { Error?: string; Cause?: string } } | undefined)?.error;
}

/** The message of the caught error (Lambda errors carry `{errorType, errorMessage}` in Cause). */
export function caughtMessage(result: ExecutionResult): string {
  const cause = caughtError(result)?.Cause ?? '';
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: string };
    if (typeof parsed?.errorMessage === 'string') return parsed.errorMessage;
  } catch {
    // plain text
  }
  return cause;
}

export interface Workflow {
  readonly wh: Warehouse;
  readonly runner: LocalRunner;
  /** Per-test fault injection, keyed by Task state; `reset()` clears it. */
  readonly faults: Partial<Record<TaskState, TaskOverride>>;
  /** LoadChunk invocations since the last `reset()`: chunk indexes in the order they started, and how many still run. */
  readonly loads: { started: number[]; inFlight: number };
  /** Every task invocation since the last `reset()`, in the order the handlers were entered. */
  readonly calls: readonly TaskCall[];
  /** Runs `fn` on a direct connection to this workflow's database, closed afterwards. */
  withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T>;
  /**
   * Creates the sample source and live table (replacing any earlier ones), then applies the pipeline's setup SQL for the handlers' role
   * (LOCAL_PIPELINE_USER), unless `setup` is false: the test then runs a setup of its own.
   */
  sample(options: SampleOptions, arrange?: { setup?: boolean }): Promise<void>;
  run(input: unknown, name?: string): Promise<ExecutionResult>;
  /** Starts an execution without waiting: abort it, or await its result. */
  start(input: unknown, name?: string): Promise<RunningExecution>;
  /** After an execution ended: waits until no LoadChunk invocation is running (a failed Map leaves its in-flight iterations to finish). */
  quiesce(): Promise<void>;
  reset(): void;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  fingerprint(table: string): Promise<Fingerprint>;
  /** The fingerprint the live table must have after publishing source rows before sample day `day`, computed from the source. */
  expected(day: number): Promise<Fingerprint>;
  tableExists(table: string): Promise<boolean>;
  /** Tables of schema analytics whose name starts with `sales_order_lines__`. */
  derivedTables(): Promise<string[]>;
  schemaExists(schema: string): Promise<boolean>;
  batch(batchId: string): Promise<Record<string, unknown> | undefined>;
  chunkStatuses(batchId: string): Promise<Record<string, number>>;
  /** The batch's chunk loads submitted and still running, found as a re-run finds them: by their statement names; by chunk. */
  runningLoads(batchId: string): Promise<{ chunk_index: number; statement_id: string }[]>;
  publications(): Promise<Record<string, unknown>[]>;
  readonly outboxFile: string;
  /** Closes the runner, the endpoint and every connection, then drops the database (unless `keepDatabase`). */
  close(options?: { keepDatabase?: boolean }): Promise<void>;
}

export interface UseWorkflowOptions {
  /** Retry waits as a fraction of the declared ones. @default WORKFLOW_TIME_SCALE */
  timeScale?: number;
  /** The server the warehouse database lives on. @default - the suite's shared server */
  postgres?: PgConnection;
  /** More environment of the handlers (e.g. Publish's waits). */
  env?: Record<string, string>;
  /** Database errors the endpoint injects (local/data-api/runner.ts StatementFault). @default - none */
  statementError?: StatementFault;
  /** Shortened function time-outs by Task state (LocalRunnerOptions.functionTimeoutsSeconds). */
  functionTimeoutsSeconds?: Record<string, number>;
  /** A local CloudWatch endpoint the runner sends the AWS/Lambda and EMF metrics to (LocalRunnerOptions.cloudWatchEndpoint). */
  cloudWatchEndpoint?: string;
  /** The Lambda service's clock (LocalRunnerOptions.clock). */
  clock?: () => Date;
  /** The account's concurrency limit (LocalRunnerOptions.concurrencyLimit). */
  concurrencyLimit?: number;
  /** Start from a copy of this database (a fixture's template) instead of an empty one. */
  copyOf?: string;
  /** Every event of every execution, children included (LocalRunnerOptions.onEvent). */
  onEvent?: (event: ExecutionEvent, executionId: string) => void;
  /**
   * The database user the handlers' requests run as (the endpoint's default user: a workgroup's IAM identity, a cluster's secret).
   * Not created here: a test of the setup SQL has it create the user. @default LOCAL_PIPELINE_USER
   */
  handlersUser?: string;
}

export async function useWorkflow(prefix: string, options: UseWorkflowOptions = {}): Promise<Workflow> {
  // The handlers run as the least-privilege role (workgroup requests, or a
  // cluster's with a secret: suiteTargetKind); arranging and asserting through wh as the superuser.
  const wh = await useWarehouse(prefix, {
    ...(options.postgres ? { postgres: options.postgres } : {}),
    ...(options.statementError ? { statementError: options.statementError } : {}),
    ...(options.copyOf ? { copyOf: options.copyOf } : {}),
    defaultUser: options.handlersUser ?? LOCAL_PIPELINE_USER,
  });
  await ensureLocalUser(wh.pg);
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const outboxFile = join(dir, 'alerts.jsonl');
  const faults: Partial<Record<TaskState, TaskOverride>> = {};
  const loads = { started: [] as number[], inFlight: 0 };
  const calls: TaskCall[] = [];
  const idle: (() => void)[] = [];

  const taskOverrides: Record<string, TaskOverride> = {};
  for (const state of TASK_STATES) {
    taskOverrides[state] = async (input, next) => {
      const fault = faults[state];
      if (state !== 'LoadChunk' && state !== 'WindowLoadChunk') {
        calls.push({ state });
        return fault ? fault(input, next) : next(input);
      }
      const chunk = (input as { chunk: { index: number } }).chunk.index;
      calls.push({ state, chunk });
      loads.started.push(chunk);
      loads.inFlight += 1;
      try {
        return await (fault ? fault(input, next) : next(input));
      } finally {
        loads.inFlight -= 1;
        if (loads.inFlight === 0) for (const resolve of idle.splice(0)) resolve();
      }
    };
  }
  const runner = await LocalRunner.create({
    env: { ...localHandlerEnvironment(wh.endpoint, wh.pg.database, { pollMaxDelayMs: 100 }, suiteTargetKind()), POWERTOOLS_LOG_LEVEL: 'WARN', ...options.env },
    timeScale: options.timeScale ?? WORKFLOW_TIME_SCALE,
    ...(options.functionTimeoutsSeconds ? { functionTimeoutsSeconds: options.functionTimeoutsSeconds } : {}),
    ...(options.cloudWatchEndpoint ? { cloudWatchEndpoint: options.cloudWatchEndpoint } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.concurrencyLimit ? { concurrencyLimit: options.concurrencyLimit } : {}),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    taskOverrides,
    outboxFile,
  });

  const query = wh.query;
  const one = async <T>(sql: string, params?: unknown[]) => (await query<T>(sql, params))[0]!;
  const workflow: Workflow = {
    wh,
    runner,
    faults,
    loads,
    calls,
    outboxFile,
    async sample(sampleOptions, { setup = true } = {}) {
      await withClient(wh.pg, async (client) => {
        await createSampleWarehouse(client, sampleOptions);
        if (setup) for (const pipeline of [PIPELINE, dailySalesPipeline()]) await applyPipelineSetup(client, pipeline);
      });
    },
    withClient: (fn) => withClient(wh.pg, fn),
    run: (input, name) => runner.run(input, name ? { name } : {}),
    start: (input, name) => runner.start(input, name ? { name } : {}),
    quiesce() {
      // Once the execution has ended, the runner lets no further LoadChunk
      // iteration of a failed Map start (it fails them before they reach
      // this counter), so the iterations still in flight are all there is.
      if (loads.inFlight === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idle.push(resolve));
    },
    reset() {
      for (const state of TASK_STATES) delete faults[state];
      loads.started.length = 0;
      calls.length = 0;
    },
    query,
    fingerprint: (table) => one<Fingerprint>(`${FINGERPRINT} FROM ${table}`),
    expected: (day) => one<Fingerprint>(`${FINGERPRINT} FROM (${SAMPLE_EXPECTED_ROWS_SQL}) AS expected`, [sampleDay(day).toISOString().slice(0, 19)]),
    tableExists: async (table) => (await one<{ ok: boolean }>('SELECT to_regclass($1) IS NOT NULL AS ok', [table])).ok,
    derivedTables: async () =>
      (
        await query<{ name: string }>(
          `SELECT table_name AS name FROM information_schema.tables
            WHERE table_schema = 'analytics' AND table_name LIKE 'sales\\_order\\_lines\\_\\_%' ORDER BY 1`,
        )
      ).map((r) => `analytics.${r.name}`),
    schemaExists: async (schema) => (await one<{ ok: boolean }>('SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS ok', [schema])).ok,
    batch: async (batchId) => (await query(`SELECT * FROM atomic_publish.batches WHERE batch_id = $1`, [batchId]))[0],
    async chunkStatuses(batchId) {
      const rows = await query<{ status: string; n: number }>(
        `SELECT status, count(*)::int AS n FROM atomic_publish.chunk_state WHERE batch_id = $1 GROUP BY status`,
        [batchId],
      );
      return Object.fromEntries(rows.map((r) => [r.status, r.n]));
    },
    async runningLoads(batchId) {
      const prefix = loadStatementPrefix(PIPELINE.name, batchId);
      const running = await localWarehouse(wh.endpoint, wh.pg.database).runningStatements(prefix);
      return running.map((s) => ({ chunk_index: chunkOfLoadStatement(prefix, s.name)!, statement_id: s.id })).sort((a, b) => a.chunk_index - b.chunk_index);
    },
    publications: () => query(`SELECT * FROM atomic_publish.publications ORDER BY seq`),
    async close(closeOptions) {
      runner.close();
      await wh.close(closeOptions);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return workflow;
}

/** Chunk indexes of the LoadChunk iterations the execution ran (from its events), sorted. */
export function loadedChunks(result: ExecutionResult): number[] {
  return stateEvents(result, 'StateEntered', 'LoadChunk')
    .map((e) => (e.state!.input as { chunk: { index: number } }).chunk.index)
    .sort((a, b) => a - b);
}

/** What Plan returned (`$.plan`), from the execution's events. */
export function planOf(result: ExecutionResult): {
  alreadyPublished: boolean;
  chunkCount: number;
  chunks: { index: number }[];
  batch: { batchId: string; basePublication: number };
} {
  const exited = stateEvents(result, 'StateExited', 'Plan')[0];
  return (exited!.state!.output as { plan: ReturnType<typeof planOf> }).plan;
}

/**
 * A state arranged once for a test file; a fork is a new workflow (endpoint,
 * runner, outbox) on a copy of its database. Only the database is copied:
 * `arrange` returns what the tests need of the rest. Why: docs/decisions/independent-tests.md
 *
 *   const fixture = useWorkflowFixture('wf_x', async (wf) => { await wf.sample(...); return { first: await wf.run(...) }; });
 *   describe('a replay', () => { const wf = useFork(fixture); ... });   // its own copy for the describe
 */
export interface WorkflowFixture<T> {
  /** What `arrange` returned. */
  readonly arranged: T;
  /** A new workflow on a copy of the arranged database; `options` replace the fixture's own for it. Close it. */
  fork(options?: UseWorkflowOptions): Promise<Workflow>;
  /** Drops the template database (close every fork first). */
  close(): Promise<void>;
}

/** The arranged template, without hooks (useWorkflowFixture registers them). */
export async function workflowFixture<T>(prefix: string, arrange: (wf: Workflow) => Promise<T>, options: UseWorkflowOptions = {}): Promise<WorkflowFixture<T>> {
  const base = await useWorkflow(`${prefix}_template`, options);
  let arranged: T;
  try {
    arranged = await arrange(base);
  } catch (error) {
    await base.close();
    throw error;
  }
  await base.close({ keepDatabase: true });
  const { database, ...server } = base.wh.pg;
  return {
    arranged,
    fork: (forkOptions = {}) => useWorkflow(prefix, { ...options, ...forkOptions, copyOf: database }),
    close: () => dropDatabase(server, database),
  };
}

/** A workflowFixture built in a beforeAll of the calling scope (the file, or a describe) and dropped in its afterAll. */
export function useWorkflowFixture<T>(prefix: string, arrange: (wf: Workflow) => Promise<T>, options: UseWorkflowOptions = {}): WorkflowFixture<T> {
  let fixture: WorkflowFixture<T> | undefined;
  beforeAll(async () => {
    fixture = await workflowFixture(prefix, arrange, options);
  });
  afterAll(() => fixture?.close());
  const built = () => {
    if (!fixture) throw new Error(`fixture ${prefix} used before its beforeAll ran (or it failed)`);
    return fixture;
  };
  return {
    get arranged() {
      return built().arranged;
    },
    fork: (forkOptions) => built().fork(forkOptions),
    close: () => built().close(),
  };
}

/**
 * A fork of `fixture` for the calling describe: made in its beforeAll (before
 * the describe's own, registered after this call), closed in its afterAll.
 * The returned workflow may be used from then on, like a `let` set there.
 */
export function useFork(fixture: WorkflowFixture<unknown>, options?: UseWorkflowOptions): Workflow {
  let wf: Workflow | undefined;
  beforeAll(async () => {
    wf = await fixture.fork(options);
  });
  afterAll(() => wf?.close());
  return new Proxy({} as Workflow, {
    get(_target, key) {
      if (!wf) throw new Error(`a fork used outside the describe that made it, or before its beforeAll ran (reading ${String(key)})`);
      return Reflect.get(wf, key, wf);
    },
  });
}
