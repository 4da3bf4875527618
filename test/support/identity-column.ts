// The IDENTITY column the identity tests give a live table
// (docs/decisions/identity-columns.md), and what they check of its numbers.
import { expect } from 'vitest';
// Types only: imported by modules that run before workflow.ts (identity-pipeline.ts).
import type { Workflow } from './workflow.ts';

export const IDENTITY_COLUMN = 'row_id';
export const SEED = 1000;
export const STEP = 7;

/**
 * The column added to `table`, its existing rows numbered as it is added. In
 * PostgreSQL's words: Redshift declares an identity only at CREATE TABLE
 * (r_ALTER_TABLE.html); the local catalog shows it in Redshift's form.
 */
export function addIdentityColumn(table: string): string {
  return `ALTER TABLE ${table} ADD COLUMN ${IDENTITY_COLUMN} bigint GENERATED ALWAYS AS IDENTITY (START WITH ${SEED} INCREMENT BY ${STEP} MINVALUE ${SEED})`;
}

/** The identity column's values in `table`, ascending. */
export async function identityNumbers(wf: Workflow, table: string): Promise<bigint[]> {
  return (await wf.query<{ n: string }>(`SELECT ${IDENTITY_COLUMN}::text AS n FROM ${table} ORDER BY ${IDENTITY_COLUMN}`)).map((r) => BigInt(r.n));
}

/**
 * After a publish: every identity value unique and of the declared seed and
 * step, and each one not there before numbered above every earlier one (the
 * table's own identity counted on; no number reused).
 */
export function expectNumberedOn(before: readonly bigint[], after: readonly bigint[]): void {
  expect(new Set(after).size).toBe(after.length);
  expect(after.every((n) => (n - BigInt(SEED)) % BigInt(STEP) === 0n)).toBe(true);
  const had = new Set(before);
  const highest = before.at(-1) ?? BigInt(SEED) - 1n;
  expect(
    after.filter((n) => !had.has(n) && n <= highest),
    `new numbers at or below ${highest}, the highest before`,
  ).toEqual([]);
}
