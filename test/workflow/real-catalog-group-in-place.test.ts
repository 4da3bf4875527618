// The live table of test/support/real-catalog.ts, with an IDENTITY column, as a
// member of a group whose members all publish in place: every property stays, its
// numbers count on, its restricted reader sees only its rows, every run succeeds;
// readers whose snapshot holds no lock read exactly the old rows after a publish.
// Why: docs/decisions/publish-groups.md
import '../support/wide-in-place-pipeline.ts';
import '../support/group-pipelines.ts';
import '../support/in-place-group-pipelines.ts';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { newClient } from '../../local/pg-clients.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { createMirror, GROUP, MIRROR_LIVE } from '../support/group-pipelines.ts';
import { expectNumberedOn, identityNumbers } from '../support/identity-column.ts';
import { arrangeCatalog, expectCatalogKept } from '../support/real-catalog.ts';
import { caughtMessage, FINGERPRINT, type Fingerprint, LIVE, PIPELINE, useFork, useWorkflowFixture } from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_catalog_group_in_place', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 16, liveDays: 4 });
  await wf.withClient(createMirror);
  return { before: await arrangeCatalog(wf, { identity: true }) };
});

/** Statements that take a transaction's snapshot and lock nothing a swap's wait looks for. */
const SNAPSHOTS = ['SELECT 1', 'SELECT count(*) FROM pg_class', 'SELECT count(*) FROM source.sales_order_lines'];
const LEVELS = ['REPEATABLE READ', 'SERIALIZABLE'];

describe('a live table with everything a production one carries and an IDENTITY column, published in place in a group', () => {
  const wf = useFork(fixture);

  it('keeps every property through three group publishes, numbering on, and readers of older snapshots read the old rows', async () => {
    expect(PIPELINE.snapshotReaders).toBe('in-place');
    const { before } = fixture.arranged;
    let numbers = await identityNumbers(wf, LIVE);
    for (const day of [6, 7, 8]) {
      const old = await wf.fingerprint(LIVE);
      const readers: { label: string; client: pg.Client }[] = [];
      try {
        for (const takes of SNAPSHOTS) {
          for (const level of LEVELS) {
            const client = newClient(wf.wh.pg);
            readers.push({ label: `${takes}, ${level}`, client });
            await client.connect();
            await client.query(`BEGIN ISOLATION LEVEL ${level}`);
            await client.query(takes);
          }
        }
        const result = await wf.run({ group: GROUP, to: sampleDay(day).toISOString() }, `catalog-group-in-place-${day}`);
        expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
        const seen: [string, Fingerprint][] = [];
        for (const reader of readers) {
          seen.push([reader.label, (await reader.client.query<Fingerprint>(`${FINGERPRINT} FROM ${LIVE}`)).rows[0]!]);
          await reader.client.query('COMMIT');
        }
        expect(seen).toEqual(readers.map((r) => [r.label, old]));
      } finally {
        for (const reader of readers) await reader.client.end().catch(() => undefined);
      }
      await expectCatalogKept(wf, before, (await wf.expected(day)).rows);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
      const after = await identityNumbers(wf, LIVE);
      expectNumberedOn(numbers, after);
      numbers = after;
      expect(await wf.fingerprint(MIRROR_LIVE)).toEqual(await wf.expected(day));
    }
  });
});
