import { describe, expect, it } from 'vitest';
import { inlineParameters } from '../../../domain/redshift-sql/parameters.ts';

describe('inlineParameters', () => {
  const values = { start: "CAST('2026-01-01 00:00:00' AS timestamp)", end: "CAST('2026-01-02 00:00:00' AS timestamp)" };

  it('replaces each :name in code with its value, on one line, leaving casts, literals and identifiers alone', () => {
    const sql = `SELECT a::int, ':start' AS s, ":end" FROM t -- up to :end\nWHERE at >= :start\n  AND at < :end`;
    expect(inlineParameters(sql, values)).toBe(`SELECT a::int, ':start' AS s, ":end" FROM t   WHERE at >= ${values.start}   AND at < ${values.end}`);
  });

  it('gives up on a name without a value, and on a literal with a line break or a backslash', () => {
    expect(inlineParameters('SELECT * FROM t WHERE k = :key', values)).toBeUndefined();
    expect(inlineParameters("SELECT 'a\nb' FROM t WHERE at >= :start", values)).toBeUndefined();
    expect(inlineParameters("SELECT 'a\\b' FROM t WHERE at >= :start", values)).toBeUndefined();
  });
});
