// The fault matrix: a failure at every step boundary, after each statement of each
// step, and inside the publish transaction (an exception, a killed runner), readers
// polling throughout. In every cell each read saw the old or the new table, the
// manifest agrees with live, no statement is left running, the page is true, and
// a re-run converges to the clean run. The matrix is written to
// .atomic-publish/fault-matrix-<isolation>.txt; all of it runs under SNAPSHOT, the
// publish-transaction cells under both levels. Why: docs/decisions/tests-and-timing.md

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ListStatementsCommand } from '@aws-sdk/client-redshift-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderTable } from '../../domain/text-table.ts';
import { PROJECT_ROOT, STATE_DIR } from '../../lib/project.ts';
import { applyPipelineSetup, LOCAL_PIPELINE_USER } from '../../local/database-users.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { createSampleWarehouse } from '../../local/sample-data.ts';
import { holdGate, type LockGate } from '../support/lock-gate.ts';
import { type StatementLog, type StatementScope, statementCounter } from '../support/statement-faults.ts';
import { until } from '../support/until.ts';
import { suiteIsolation } from '../support/warehouse.ts';
import {
  caughtError,
  type Fingerprint,
  inputFor,
  LIVE,
  namesFor,
  PIPELINE,
  type TaskState,
  useWorkflow,
  WORKFLOW_TIME_SCALE,
  type Workflow,
} from '../support/workflow.ts';

const SAMPLE = { rowsPerDay: 6, sourceDays: 4, liveDays: 2 };
/** The batch every cell runs: 3 day chunks. */
const DAY = 3;
const STEPS = ['Plan', 'LoadChunk', 'Reconcile', 'Publish', 'EmitMetrics', 'Cleanup'] as const satisfies readonly TaskState[];
type Step = (typeof STEPS)[number];
/** The LoadChunk invocation faults are injected into; the other chunks load beside it. */
const FAULTY_CHUNK = 1;
/** Each swap attempt's lock wait: long enough for a test to act while the swap waits at a gate. */
const LOCK_WAIT_MS = '120000';
const FULL_MATRIX = suiteIsolation() === 'snapshot';

const names = namesFor(DAY);
const input = inputFor(DAY);
const counter = statementCounter();
const versionOf = (f: { rows: number; keySum: string }) => `${f.rows}/${f.keySum}`;
const versionRead = (r: ReaderSample) => `${r.count}/${r.keySum}`;

interface Cell {
  readonly cell: string;
  readonly where: string;
  readonly failed: string;
  readonly live: 'old' | 'new';
  readonly page: string;
  readonly says: string;
  readonly rerun: string;
}
const matrix: Cell[] = [];

/** A cell's place in the matrix as declared (boundaries, statements, the publish transaction). */
function declaredPlace(id: string): [number, number, number] {
  const boundary = /^boundary (before|after) (\w+)$/.exec(id);
  if (boundary) return [0, STEPS.indexOf(boundary[2] as Step), boundary[1] === 'before' ? 0 : 1];
  const statement = /^(\w+) statement (\d+)$/.exec(id);
  if (statement) return [1, STEPS.indexOf(statement[1] as Step), Number(statement[2])];
  return [2, ['swap exception', 'runner killed'].indexOf(id), 0];
}
const inDeclaredOrder = (a: Cell, b: Cell): number => {
  const [x, y] = [declaredPlace(a.cell), declaredPlace(b.cell)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
};

let wf: Workflow;
let readers: ReaderPool;
let old: Fingerprint;
let fresh: Fingerprint;
/** Statement names per step of a clean run (LoadChunk: the faulty chunk's invocation). */
const census = new Map<Step, string[]>();

/** The same starting point for every cell: no manifest, the sample's live table. */
async function resetWarehouse(): Promise<void> {
  await wf.withClient(async (client) => {
    await client.query('DROP SCHEMA IF EXISTS atomic_publish CASCADE');
    await createSampleWarehouse(client, SAMPLE);
    await applyPipelineSetup(client, PIPELINE);
  });
}

/** Every step's invocation counted (the faulty chunk only for LoadChunk); `scope` armed in `step`. */
function instrument(step?: Step, scope: StatementScope = {}, log?: StatementLog): void {
  for (const s of STEPS) {
    const armed = s === step;
    wf.faults[s] = (taskInput, next) => {
      if (s === 'LoadChunk' && (taskInput as { chunk: { index: number } }).chunk.index !== FAULTY_CHUNK) return next(taskInput);
      return armed ? counter.within(scope, () => next(taskInput), log) : next(taskInput);
    };
  }
}

async function runningStatements(): Promise<string[]> {
  const running: string[] = [];
  for (const Status of ['SUBMITTED', 'PICKED', 'STARTED'] as const) {
    const listed = await wf.wh.client.send(new ListStatementsCommand({ Status, MaxResults: 100 }));
    running.push(...(listed.Statements ?? []).map((s) => `${s.StatementName ?? s.Id} ${s.Status}`));
  }
  const active = await wf.query<{ query: string }>(
    `SELECT query FROM pg_stat_activity WHERE datname = current_database() AND usename = $1 AND state <> 'idle'`,
    [LOCAL_PIPELINE_USER],
  );
  return [...running, ...active.map((a) => `backend: ${a.query.slice(0, 80)}`)];
}

/** What is live, checked against the manifest: 'old' (nothing published) or 'new' (this batch published). */
async function liveAgreesWithManifest(): Promise<'old' | 'new'> {
  const live = versionOf(await wf.fingerprint(LIVE));
  expect([versionOf(old), versionOf(fresh)], 'live is exactly old or exactly new').toContain(live);
  const manifest = (await wf.schemaExists('atomic_publish')) ? await wf.publications() : [];
  const batch = (await wf.schemaExists('atomic_publish')) ? await wf.batch(names.batchId) : undefined;
  // No attempt is left RUNNING by an execution that has ended (RecordFailure marks it, also when the state lost Plan's result).
  const running = (await wf.schemaExists('atomic_publish')) ? await wf.query(`SELECT attempt FROM atomic_publish.batch_attempts WHERE status = 'RUNNING'`) : [];
  expect(running, 'attempts left RUNNING').toEqual([]);
  if (live === versionOf(old)) {
    expect(manifest, 'no publication while live is old').toEqual([]);
    if (batch) expect(batch.status, 'the batch of a failed run').toBe('FAILED');
    return 'old';
  }
  expect(
    manifest.map((p) => p.batch_id),
    'the publication of this batch',
  ).toEqual([names.batchId]);
  expect(batch?.status).toBe('PUBLISHED');
  return 'new';
}

/** The page of a failed run says what readers see now (matching what is live) and what to do next. */
function checkPage(result: ExecutionResult, live: 'old' | 'new'): string {
  expect(result.alerts, 'one page').toHaveLength(1);
  const { subject, message } = result.alerts[0]!;
  const errorName = caughtError(result)?.Error ?? '';
  expect(subject).toContain(errorName);
  const readersLine = message.split('\n').find((l) => l.startsWith('Live table:')) ?? '';
  if (live === 'old') expect(readersLine).toMatch(/untouched/);
  else expect(readersLine).toMatch(/published by this batch/);
  expect(message, 'what to do next').toMatch(/^Next: {7}\S/m);
  return subject ?? '';
}

/** Every reader reads once more at the point of the fault, the run held there. */
async function readAtTheFault(): Promise<void> {
  readers.phase('at the fault');
  await readers.readAll();
  readers.phase('failing run');
}

/** The page in a few words: what readers see, and the start of what to do next. */
function pageSays(message: string): string {
  const readersLine = message.split('\n').find((l) => l.startsWith('Live table:')) ?? '';
  const readers = /published by this batch/.test(readersLine) ? 'readers: new' : /untouched/.test(readersLine) ? 'readers: old' : 'readers: ?';
  const next = /^Next: +(.*)$/m.exec(message)?.[1] ?? '';
  return `${readers}; next: ${next.split(/[:;,.]/)[0]}`;
}

/**
 * One cell: readers watch while `failing` runs, then the state is checked,
 * then a plain re-run (same input) must reach the clean run's fingerprint.
 */
async function cell(
  id: string,
  where: string,
  failing: () => Promise<{ result?: ExecutionResult; killed?: boolean; fired: boolean }>,
  /** The fault holds the live table locked (inside the swap): readers wait instead of reading at it. */
  insideSwap = false,
): Promise<void> {
  await resetWarehouse();
  wf.reset();
  readers.watch(LIVE, 'before');
  await readers.readAll();
  readers.phase('failing run');
  let reads: ReaderSample[] = [];
  try {
    const { result, killed, fired } = await failing();
    await wf.quiesce();
    wf.reset();
    expect(fired, `${id}: the fault was injected`).toBe(true);
    readers.phase('after the failure');
    await readers.readAll();
    await until(async () => (await runningStatements()).length === 0, `${id}: no statement left running`);
    expect(await runningStatements()).toEqual([]);
    const live = await liveAgreesWithManifest();
    let failedOutcome = 'process killed';
    let page = '(none: the process died)';
    if (result) {
      failedOutcome = result.status === 'FAILED' ? `FAILED (${caughtError(result)?.Error})` : result.status;
      page = result.status === 'FAILED' ? checkPage(result, live) : result.alerts.length === 0 ? '(no page)' : `unexpected: ${result.alerts[0]!.subject}`;
    } else {
      expect(killed, `${id}: no result only when the process was killed`).toBe(true);
    }

    readers.phase('re-run');
    const rerun = await wf.run(input, `${id.replace(/[^A-Za-z0-9_-]+/g, '-')}-rerun`);
    readers.phase('after the re-run');
    await readers.readAll();
    expect(rerun.status, `${id}: re-run ${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE), `${id}: the re-run converges`).toEqual(fresh);
    expect(await liveAgreesWithManifest()).toBe('new');
    expect(await runningStatements()).toEqual([]);
    const rerunOutcome = (rerun.output as { plan?: { alreadyPublished?: boolean } })?.plan?.alreadyPublished
      ? 'SUCCEEDED, nothing to publish'
      : 'SUCCEEDED, published';
    matrix.push({ cell: id, where, failed: failedOutcome, live, page, says: result?.alerts[0] ? pageSays(result.alerts[0].message) : '', rerun: rerunOutcome });
  } finally {
    reads = await readers.stop();
  }
  expect(
    reads.filter((r) => r.error),
    `${id}: reads that failed`,
  ).toEqual([]);
  expect(reads.length).toBeGreaterThanOrEqual(6);
  if (!insideSwap)
    expect(new Set(reads.filter((r) => r.phase.startsWith('at the fault')).map((r) => r.reader)), `${id}: every reader read at the fault`).toEqual(
      new Set([0, 1]),
    );
  for (const reader of [0, 1]) {
    const versions = reads.filter((r) => r.reader === reader).map(versionRead);
    expect(
      versions.filter((v) => v !== versionOf(old) && v !== versionOf(fresh)),
      `${id}: reader ${reader} saw only old or new`,
    ).toEqual([]);
    const firstNew = versions.indexOf(versionOf(fresh));
    if (firstNew >= 0)
      expect(
        versions.slice(firstNew).filter((v) => v === versionOf(old)),
        `${id}: reader ${reader} went back to old`,
      ).toEqual([]);
  }
}

beforeAll(async () => {
  wf = await useWorkflow('wf_fault_matrix', { env: { PUBLISH_LOCK_WAIT_MS: LOCK_WAIT_MS } });
  await resetWarehouse();
  readers = new ReaderPool(wf.wh.pg, 2, { keyExpression: 'order_id * 1000 + line_no', pauseMs: 2 });
  old = await wf.fingerprint(LIVE);
  fresh = await wf.expected(DAY);
  expect(versionOf(fresh)).not.toBe(versionOf(old));
  // The clean run: its fingerprint is where every re-run must end; its statements are the cells.
  for (const step of STEPS) census.set(step, []);
  for (const step of STEPS) {
    wf.faults[step] = (taskInput, next) => {
      if (step === 'LoadChunk' && (taskInput as { chunk: { index: number } }).chunk.index !== FAULTY_CHUNK) return next(taskInput);
      return counter.within({}, () => next(taskInput), { names: census.get(step)!, fired: false });
    };
  }
  const clean = await wf.run(input, 'clean');
  expect(clean.status, `${clean.error}: ${clean.cause}`).toBe('SUCCEEDED');
  expect(await wf.fingerprint(LIVE)).toEqual(fresh);
  wf.reset();
});

afterAll(async () => {
  await readers?.close();
  const table = renderTable(
    ['cell', 'injected where', 'failed run', 'live after', 'page subject', 'page says', 're-run'],
    [...matrix].sort(inDeclaredOrder).map((c) => [c.cell, c.where, c.failed, c.live, c.page, c.says, c.rerun]),
  );
  const text = `Fault matrix (${suiteIsolation()}): ${matrix.length} cells\n${table}\n`;
  console.log(text);
  mkdirSync(STATE_DIR, { recursive: true });
  writeFileSync(join(STATE_DIR, `fault-matrix-${suiteIsolation()}.txt`), text);
  await wf?.close();
});

describe.skipIf(!FULL_MATRIX)('a failure at every step boundary', () => {
  for (const step of STEPS) {
    for (const when of ['before', 'after'] as const) {
      const task = `${step}${step === 'LoadChunk' ? ` (chunk ${FAULTY_CHUNK})` : ''}`;
      const where = when === 'before' ? `before ${task} runs` : `after ${task} returned`;
      it(`${where}: old or new throughout, manifest agrees, nothing running, re-run converges`, async () => {
        await cell(`boundary ${when} ${step}`, where, async () => {
          let fired = false;
          wf.faults[step] = async (taskInput, next) => {
            if (step === 'LoadChunk' && (taskInput as { chunk: { index: number } }).chunk.index !== FAULTY_CHUNK) return next(taskInput);
            if (when === 'after') await next(taskInput);
            await readAtTheFault();
            fired = true;
            throw Object.assign(new Error(`injected ${when} ${step}`), { name: 'InjectedFault' });
          };
          return { result: await wf.run(input, `boundary-${when}-${step}`), fired };
        });
      });
    }
  }
});

describe.skipIf(!FULL_MATRIX)('a failure inside each step after each statement it submits', () => {
  it('covers every statement of every step of a clean run', () => {
    for (const step of STEPS) expect(census.get(step)!.length, step).toBeGreaterThan(0);
  });
  for (const step of STEPS) {
    // The number of statements is known only after the clean run (beforeAll): one test per step loops over them.
    it(`${step}: after each statement, old or new throughout, manifest agrees, nothing running, re-run converges`, async () => {
      const statements = census.get(step)!;
      for (let n = 1; n <= statements.length; n += 1) {
        const short = statements[n - 1]!.replace(`atomic-publish:${PIPELINE.name}:`, '').replace(`:${names.batchId}`, '');
        await cell(`${step} statement ${n}`, `after ${short}`, async () => {
          const log: StatementLog = { names: [], fired: false };
          instrument(step, { failAt: n, onFault: readAtTheFault }, log);
          const result = await wf.run(input, `statement-${step}-${n}`);
          return { result, fired: log.fired };
        });
      }
    });
  }
});

describe('a failure inside the publish transaction', () => {
  /** Holds the publications table (the swap locks it last) once Publish is about to submit the swap. */
  function gateBeforeSwap(): { gate: () => LockGate | undefined } {
    let gate: LockGate | undefined;
    instrument('Publish', {
      beforeBatch: {
        match: ':publish:swap:',
        hook: async () => {
          gate ??= await holdGate(wf.wh.pg, { table: 'atomic_publish.publications' });
        },
      },
    });
    return { gate: () => gate };
  }

  /** The backend of the swap, waiting at the gate while it holds the live table: provably inside its transaction. */
  async function swapInsideItsTransaction(gate: LockGate): Promise<number> {
    const [pid] = await gate.waiting();
    const held = await wf.query<{ mode: string }>(`SELECT mode FROM pg_locks WHERE pid = $1 AND relation = $2::regclass AND granted`, [pid, LIVE]);
    expect(held.map((h) => h.mode)).toContain('AccessExclusiveLock');
    return pid!;
  }

  it('an exception mid-swap (the swap cancelled while it holds the live table): old or new throughout, manifest agrees, nothing running, re-run converges', async () => {
    await cell(
      'swap exception',
      'inside the swap transaction, at its LOCK of the publications',
      async () => {
        const armed = gateBeforeSwap();
        const running = await wf.start(input, 'swap-exception');
        await until(() => armed.gate() !== undefined, 'the swap about to be submitted');
        const pid = await swapInsideItsTransaction(armed.gate()!);
        const [cancelled] = await wf.query<{ ok: boolean }>('SELECT pg_cancel_backend($1) AS ok', [pid]);
        await armed.gate()!.release();
        return { result: await running.result, fired: cancelled!.ok };
      },
      true,
    );
  });

  it('the local runner killed (SIGKILL) while the swap waits inside its transaction: old or new throughout, manifest agrees, nothing running, re-run converges', async () => {
    const outbox = join(mkdtempSync(join(tmpdir(), 'fault-matrix-')), 'alerts.jsonl');
    // The re-run is a new execution: the killed one's lease is taken over, as Step Functions here knows
    // nothing of an execution whose process died (docs/decisions/leases-of-ended-executions.md).
    await cell(
      'runner killed',
      'inside the swap transaction: the process running the state machine killed',
      async () => {
        const child = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            join(PROJECT_ROOT, 'test', 'support', 'killable-run.ts'),
            wf.wh.endpoint,
            wf.wh.pg.database,
            JSON.stringify(input),
            'killed-run',
            String(WORKFLOW_TIME_SCALE),
            outbox,
            LOCK_WAIT_MS,
          ],
          { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'WARN' } },
        );
        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
        const lines = createInterface({ input: child.stdout! });
        for await (const line of lines) if (line === 'swap-submitting') break;
        const gate = await holdGate(wf.wh.pg, { table: 'atomic_publish.publications' });
        child.stdin!.write('go\n');
        await swapInsideItsTransaction(gate);
        child.kill('SIGKILL');
        await exited;
        expect(child.signalCode).toBe('SIGKILL');
        // The swap was submitted to the warehouse: it runs on without its caller, and commits once let go.
        await gate.release();
        return { killed: true, fired: true };
      },
      true,
    );
  });
});
