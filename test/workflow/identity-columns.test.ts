// A live table with an IDENTITY column the source does not produce, published in
// place three times: numbering continues and no number is reused, seed and step
// stay; a rollback puts the old rows back numbered anew. A source producing the
// column, and the rename swap, are refused at Plan. Why: docs/decisions/identity-columns.md

// First: it replaces the pipelines before any other module reads them.
import '../support/identity-pipeline.ts';
import { describe, expect, it } from 'vitest';
import { sampleDay } from '../../local/sample-data.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { identityNumbers } from '../support/identity-column.ts';
import { addIdentity, IDENTITY_COLUMN, NUMBERING, RENAMING, SEED, STEP } from '../support/identity-pipeline.ts';
import { caughtError, caughtMessage, inputFor, LIVE, PIPELINE, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_identity_columns', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 12, liveDays: 4 });
  await wf.withClient(addIdentity);
});

/** The identity column's values in the live table, ascending. */
const numbers = (wf: Workflow) => identityNumbers(wf, LIVE);

/** The identity column's default as the catalog reads it through the Data API (Redshift's form). */
const catalogDefault = async (wf: Workflow) =>
  (
    await wf.wh.select(
      `SELECT column_default FROM information_schema.columns WHERE table_schema = 'analytics' AND table_name = 'sales_order_lines' AND column_name = :column`,
      { column: IDENTITY_COLUMN },
    )
  )[0]![0];

describe('an identity column the source does not produce', () => {
  const wf = useForkPerTest(fixture);

  it('is numbered on from the live table on each of three in-place publishes, its seed and step unchanged', async () => {
    const declared = await catalogDefault(wf);
    expect(declared).toMatch(new RegExp(`^"identity"\\(\\d+, \\d+, '${SEED},${STEP}'::text\\)$`));
    let before = await numbers(wf);
    expect(before[0]).toBe(BigInt(SEED));
    for (const day of [5, 6, 7]) {
      const result = await wf.run(inputFor(day), `publish-${day}`);
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      const after = await numbers(wf);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
      expect(after).toHaveLength((await wf.expected(day)).rows);
      expect(new Set(after).size).toBe(after.length);
      const highest = before.at(-1)!;
      expect(
        after.filter((n) => n <= highest),
        `numbers at or below ${highest}, the highest before publish ${day}`,
      ).toEqual([]);
      expect(after.every((n) => (n - BigInt(SEED)) % BigInt(STEP) === 0n)).toBe(true);
      expect(await catalogDefault(wf)).toBe(declared);
      before = after;
    }
  });
});

describe('a rollback in place of a table with an IDENTITY column', () => {
  const wf = useForkPerTest(fixture);

  it('puts the old rows back numbered anew (Redshift takes no value for the column) and keeps the rows it replaced with their numbers', async () => {
    for (const day of [5, 6]) expect((await wf.run(inputFor(day), `publish-${day}`)).status).toBe('SUCCEEDED');
    const replaced = await numbers(wf);
    const rolledBack = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'rollback');
    expect(rolledBack.status, `${rolledBack.error}: ${rolledBack.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(5));
    const after = await numbers(wf);
    expect(after.filter((n) => n <= replaced.at(-1)!)).toEqual([]);
    const [rollback] = (await wf.publications()).slice(-1);
    const kept = await wf.query<{ n: string }>(`SELECT ${IDENTITY_COLUMN}::text AS n FROM ${String(rollback!.old_version_table)} ORDER BY ${IDENTITY_COLUMN}`);
    expect(kept.map((r) => BigInt(r.n))).toEqual(replaced);
  });
});

describe('Plan refuses, with nothing written', () => {
  const wf = useForkPerTest(fixture);

  async function refused(pipeline: string): Promise<string> {
    const live = await wf.fingerprint(LIVE);
    const before = await numbers(wf);
    const result = await wf.run({ pipeline, to: sampleDay(5).toISOString() }, `refused-${pipeline}`);
    expect(result.status).toBe('FAILED');
    expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
    expect(caughtError(result)?.Error).toBe('ValidationError');
    expect(await wf.schemaExists('atomic_publish'), 'manifest schema atomic_publish').toBe(false);
    expect(await wf.derivedTables(), 'staging or old version tables').toEqual([]);
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(await numbers(wf)).toEqual(before);
    return caughtMessage(result) ?? '';
  }

  it('a source query producing the IDENTITY column, naming it and the fix', async () => {
    expect(await refused(NUMBERING.name)).toBe(
      `pipeline ${NUMBERING.name}: field sourceSql produces column ${IDENTITY_COLUMN}, which analytics.sales_order_lines declares IDENTITY(${SEED}, ${STEP}): ` +
        'Redshift numbers such a column itself and takes no value for it in an INSERT. Leave it out of the source query (each new row is numbered), ' +
        'or declare it GENERATED BY DEFAULT AS IDENTITY(seed, step) to load the values the source gives. Nothing was written',
    );
  });

  it("the rename swap of the table, naming snapshotReaders: 'in-place'", async () => {
    expect(await refused(RENAMING.name)).toMatch(/the rename swap publishes staging as the new live table, .*Set snapshotReaders: 'in-place'/);
  });
});
