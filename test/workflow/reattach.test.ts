// Statements that outlive the invocation that submitted them: a LoadChunk
// retry finds the load an earlier attempt submitted by its statement name
// and waits for it (or skips the chunk, if it finished) instead of running
// it twice, and a Publish retry recognises its own earlier commit instead
// of calling it a conflict.
// The sample is arranged once; each test runs on its own copy of it
// (test/support/workflow.ts useFork), with a runner of its own.
import { describe, expect, it } from 'vitest';
import { TransientWarehouseError } from '../../domain/errors.ts';
import { DEFAULT_PUBLISH_WAITS, MAX_PUBLISH_WAIT_MS } from '../../domain/publish/waits.ts';
import { Warehouse as DataApiWarehouse, DEFAULT_POLL, type StatementOutcome } from '../../functions/commons/warehouse.ts';
import { type LoadChunkEvent, loadChunk, REATTACHED_MESSAGE } from '../../functions/load-chunk/index.ts';
import { type PublishEvent, publish } from '../../functions/publish/index.ts';
import { localDefaultUserTarget, localRedshiftDataClient, localTarget } from '../../local/aws-clients.ts';
import { newClient } from '../../local/pg-clients.ts';
import { suiteTargetKind } from '../support/target-kind.ts';
import { until } from '../support/until.ts';
import { inputFor, LIVE, namesFor, stateEvents, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

/** A Lambda whose wait for the chunk load gives up once (as at its 15-minute limit) while the statement keeps running. */
class GivesUpOnce extends DataApiWarehouse {
  gaveUp = false;
  override async wait(id: string, name: string): Promise<StatementOutcome> {
    if (name.endsWith(':load') && !this.gaveUp) {
      this.gaveUp = true;
      throw new TransientWarehouseError(`${name} (${id}) still STARTED after 900 s`);
    }
    return super.wait(id, name);
  }
}

const fixture = useWorkflowFixture('wf_reattach', async (wf) => {
  await wf.sample({ rowsPerDay: 40, sourceDays: 8, liveDays: 5 });
  return {};
});

/** An attempt as the workflow's Lambdas make it: on their target, so a retry's submission carries the same token. */
const warehouse = (wf: Workflow) =>
  new GivesUpOnce(localRedshiftDataClient(wf.wh.endpoint), localDefaultUserTarget(wf.wh.pg.database, suiteTargetKind()), DEFAULT_POLL);

/**
 * A Publish attempt that, once it has read its batch as not yet published,
 * says so (`readState`) and reads staging only after `other` has ended.
 */
class ReadsStagingAfter extends DataApiWarehouse {
  private stateRead!: () => void;
  readonly readState = new Promise<void>((resolve) => (this.stateRead = resolve));
  other: Promise<unknown> = Promise.resolve();
  override async query(statement: Parameters<DataApiWarehouse['query']>[0], name: string): ReturnType<DataApiWarehouse['query']> {
    if (name.includes(':publish:newest-chunk:')) await this.other.catch(() => undefined);
    const rows = await super.query(statement, name);
    if (name.includes(':publish:state:')) this.stateRead();
    return rows;
  }
}

/** A chunk's state as chunk_state shows it: loads counted in its generation, and their rows. */
async function chunkState(wf: Workflow, index: number): Promise<{ generation: number; loads: number; rows_written: number } | undefined> {
  const [row] = await wf.query<{ generation: number; loads: string; rows_written: string }>(
    `SELECT generation, loads, rows_written FROM atomic_publish.chunk_state WHERE batch_id = $1 AND chunk_index = $2`,
    [namesFor(7).batchId, index],
  );
  return row && { generation: row.generation, loads: Number(row.loads), rows_written: Number(row.rows_written) };
}

describe('a LoadChunk retry after the wait gave up', () => {
  describe('on a load still running', () => {
    const wf = useFork(fixture);

    it('waits for the load still running instead of running it again, and the chunk holds its rows once', async () => {
      const { staging } = namesFor(7);
      const blocker = newClient(wf.wh.pg);
      await blocker.connect();
      let slowChunk: number | undefined;
      let released = false;
      try {
        // Chunk 3's first attempt: the INSERT waits on a lock held here, its
        // Lambda gives up waiting; the retry must re-attach to that load,
        // which is released only once the retry is seen waiting for it.
        wf.faults.LoadChunk = async (input, next) => {
          const event = input as LoadChunkEvent;
          if (event.chunk.index !== 3) return next(input);
          if (slowChunk === undefined) {
            slowChunk = 3;
            await blocker.query('BEGIN');
            await blocker.query(`LOCK TABLE ${staging} IN ACCESS EXCLUSIVE MODE`);
            await expect(loadChunk(event, warehouse(wf))).rejects.toThrow(/still STARTED/);
            throw new TransientWarehouseError('the Lambda gave up waiting');
          }
          const retry = next(input);
          await until(() => wf.runner.logs.some((l) => l.message === REATTACHED_MESSAGE && l.chunk === 3));
          await blocker.query('COMMIT');
          released = true;
          return retry;
        };
        const result = await wf.run(inputFor(7), 'reattach-running');
        expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
        expect(stateEvents(result, 'StateRetried', 'LoadChunk')).toHaveLength(1);
        expect(released).toBe(true);
      } finally {
        await blocker.end();
      }
      // One load, recorded once with the day's rows.
      expect(await chunkState(wf, 3)).toEqual({ generation: 0, loads: 1, rows_written: 40 });
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    });
  });

  describe('on a load that finished after the wait gave up', () => {
    const wf = useFork(fixture);

    it('skips a chunk whose load finished after the wait gave up, without loading it again', async () => {
      let loads = 0;
      wf.faults.LoadChunk = async (input, next) => {
        const event = input as LoadChunkEvent;
        if (event.chunk.index !== 2 || loads > 0) return next(input);
        loads += 1;
        const attempt = warehouse(wf);
        await expect(loadChunk(event, attempt)).rejects.toThrow(/still STARTED/);
        // The abandoned load finishes before the retry looks for it.
        await until(async () => (await chunkState(wf, 2))?.loads === 1, 'the abandoned load committed');
        throw new TransientWarehouseError('the Lambda gave up waiting');
      };
      const result = await wf.run(inputFor(7), 'reattach-finished');
      expect(result.status, `${result.error}: ${result.cause} ${result.alerts.map((a) => a.message).join('\n')}`).toBe('SUCCEEDED');
      expect(wf.runner.logs.some((l) => l.message === 'chunk already loaded; skipped' && l.chunk === 2)).toBe(true);
      expect(await chunkState(wf, 2)).toEqual({ generation: 0, loads: 1, rows_written: 40 });
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    });
  });
});

describe('a Publish retry after its own commit', () => {
  describe('whose answer was lost', () => {
    const wf = useFork(fixture);

    it('returns the publication it made instead of failing as a conflict', async () => {
      let attempts = 0;
      // The first attempt commits the swap, then its response is lost.
      wf.faults.Publish = async (input, next) => {
        attempts += 1;
        if (attempts === 1) {
          await publish(input as PublishEvent);
          throw new TransientWarehouseError('connection reset after the swap was sent');
        }
        return next(input);
      };
      const result = await wf.run(inputFor(7), 'publish-lost-response');
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(attempts).toBe(2);
      expect((result.output as { publish: { alreadyPublished: boolean; publication: number } }).publish).toMatchObject({
        alreadyPublished: true,
        publication: 1,
      });
      expect(await wf.publications()).toHaveLength(1);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    });
  });

  describe('overlapping another attempt', () => {
    const wf = useFork(fixture);

    it('lets two overlapping attempts of the same Publish both succeed with exactly one swap', async () => {
      let results: PromiseSettledResult<Awaited<ReturnType<typeof publish>>>[] = [];
      // Both read the batch as not yet published; the LOCK lets one swap, the
      // other's guard fails and it finds its own batch published. The second
      // waits for the first's locks as long as it takes (the bound on lock
      // waits is not what this test is about: on a busy machine the first's
      // transaction can outlast the default 5 s, and the second would give up
      // before the first committed, to be retried by the state machine).
      const waits = { ...DEFAULT_PUBLISH_WAITS, lockWaitMs: MAX_PUBLISH_WAIT_MS };
      wf.faults.Publish = async (input) => {
        results = await Promise.allSettled([publish(input as PublishEvent, undefined, waits), publish(input as PublishEvent, undefined, waits)]);
        const made = results.find((r) => r.status === 'fulfilled' && !r.value.alreadyPublished);
        return made && made.status === 'fulfilled' ? made.value : Promise.reject(new Error('no attempt published'));
      };
      const result = await wf.run(inputFor(7), 'publish-overlap');
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(
        results.map((r) => r.status),
        results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'fulfilled')).join('; '),
      ).toEqual(['fulfilled', 'fulfilled']);
      expect(results.map((r) => (r as PromiseFulfilledResult<{ alreadyPublished: boolean }>).value.alreadyPublished).sort()).toEqual([false, true]);
      expect(await wf.publications()).toHaveLength(1);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    });
  });

  describe('overlapping an attempt that swaps while it reads staging', () => {
    const wf = useFork(fixture);

    it('finds its batch published by the other, whose staging is live now, and answers so: one swap', async () => {
      let results: PromiseSettledResult<Awaited<ReturnType<typeof publish>>>[] = [];
      wf.faults.Publish = async (input) => {
        // The second reads the batch as not yet published; the first runs whole; then the second reads staging.
        const second = new ReadsStagingAfter(localRedshiftDataClient(wf.wh.endpoint), localTarget(wf.wh.pg.database), DEFAULT_POLL);
        const late = publish(input as PublishEvent, second, DEFAULT_PUBLISH_WAITS);
        const first = second.readState.then(() => publish(input as PublishEvent, undefined, DEFAULT_PUBLISH_WAITS));
        second.other = first;
        results = await Promise.allSettled([first, late]);
        return first;
      };
      const result = await wf.run(inputFor(7), 'publish-swapped-meanwhile');

      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : r.value.alreadyPublished))).toEqual([false, true]);
      expect(await wf.publications()).toHaveLength(1);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    });
  });
});
