import { describe, expect, it } from 'vitest';
import { SqlSyntaxError } from '../../../domain/redshift-sql/parser.ts';
import { intervalFilterColumns, sourceSqlProblem, sourceTables, testsForNull } from '../../../domain/redshift-sql/source-sql.ts';

describe('sourceTables', () => {
  it('lists every table a query reads, each once, schema-qualified or not', () => {
    const sql = `SELECT l.id, o.placed_at, p.name
      FROM sales.order_lines l
      JOIN sales.orders o ON o.id = l.order_id
      LEFT JOIN products p ON p.id = l.product_id
      WHERE o.placed_at >= :start AND o.placed_at < :end
        AND l.id IN (SELECT line_id FROM sales.order_lines WHERE qty > 0)`;
    expect(sourceTables(sql)).toEqual([
      { schema: 'sales', table: 'order_lines' },
      { schema: 'sales', table: 'orders' },
      { table: 'products' },
    ]);
  });

  it('leaves out common table expressions but keeps what they read', () => {
    const sql = `WITH recent AS (SELECT * FROM raw.events WHERE ts >= :start AND ts < :end)
      SELECT r.* FROM recent r JOIN "Ref"."Users" u ON u.id = r.user_id`;
    expect(sourceTables(sql)).toEqual([
      { schema: 'raw', table: 'events' },
      { schema: 'Ref', table: 'Users' },
    ]);
  });

  it('folds unquoted names to lower case as the warehouse does', () => {
    expect(sourceTables('SELECT 1 FROM Sales.Orders WHERE ts >= :start AND ts < :end')).toEqual([{ schema: 'sales', table: 'orders' }]);
  });

  it('fails on text that does not parse', () => {
    expect(() => sourceTables('SELECT FROM WHERE')).toThrow(SqlSyntaxError);
  });
});

describe('sourceSqlProblem', () => {
  const source = 'SELECT id, ts FROM raw.events WHERE ts >= :start AND ts < :end';
  const wrap = (sql: string) => `SELECT * FROM (${sql}\n) AS src LIMIT 0`;

  it('accepts a query that stays inside the wrapping as its src subquery', () => {
    expect(sourceSqlProblem(source, [wrap(source)])).toBeUndefined();
  });

  it('refuses when a wrapping does not hold the query as its src subquery', () => {
    expect(sourceSqlProblem(source, [`SELECT * FROM (${source}) AS other`])).toMatch(/^must stay inside the parentheses/);
    expect(sourceSqlProblem(source, [`${wrap(source)}; SELECT 1`])).toMatch(/^must stay inside the parentheses/);
    expect(sourceSqlProblem(source, [`SELECT * FROM (${source} WHERE) AS src`])).toMatch(/^must stay inside the parentheses/);
  });
});

describe('the columns a source filters the interval on, and its NULL tests', () => {
  it('finds the columns compared with :start and :end, on either side and in BETWEEN, by their last name', () => {
    expect(intervalFilterColumns('SELECT id FROM raw.events e WHERE e.ts >= :start AND :end > e.ts')).toEqual(['ts']);
    expect(intervalFilterColumns('SELECT id FROM raw.events WHERE Placed_At BETWEEN :start AND :end AND id > 5')).toEqual(['placed_at']);
    expect(intervalFilterColumns('SELECT id FROM raw.events WHERE COALESCE(ts, created) >= :start AND id = 1')).toEqual([]);
  });

  it('sees IS NULL and IS NOT NULL on a column, qualified or not, and nothing on other columns', () => {
    expect(testsForNull('SELECT id FROM raw.events e WHERE (e.ts >= :start AND e.ts < :end) OR e.ts IS NULL', ['ts'])).toBe(true);
    expect(testsForNull('SELECT id FROM raw.events WHERE ts >= :start AND ts < :end AND TS IS NOT NULL', ['ts'])).toBe(true);
    expect(testsForNull('SELECT id FROM raw.events WHERE ts >= :start AND ts < :end AND other IS NULL', ['ts'])).toBe(false);
  });
});
