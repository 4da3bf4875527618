import { describe, expect, it } from 'vitest';
import { names, nodesOf } from '../../../domain/redshift-sql/ast.ts';
import { checkSql } from '../../../domain/redshift-sql/check.ts';
import { SqlSyntaxError } from '../../../domain/redshift-sql/parser.ts';
import { parseSql } from '../../../domain/redshift-sql/postgres-grammar.ts';
import { intervalFilterColumns, sourceSqlProblem, sourceTables, testsForNull } from '../../../domain/redshift-sql/source-sql.ts';
import { errorOf, pipelineWith } from '../fixtures.ts';

describe('sourceTables', () => {
  it('lists every table a query reads, each once, schema-qualified or not', () => {
    const sql = `SELECT l.id, o.placed_at, p.name
      FROM sales.order_lines l
      JOIN sales.orders o ON o.id = l.order_id
      LEFT JOIN products p ON p.id = l.product_id
      WHERE o.placed_at >= :start AND o.placed_at < :end
        AND l.id IN (SELECT line_id FROM sales.order_lines WHERE qty > 0)`;
    expect(sourceTables(sql)).toEqual([{ schema: 'sales', table: 'order_lines' }, { schema: 'sales', table: 'orders' }, { table: 'products' }]);
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

describe("a sourceSql in Redshift's own syntax, which PostgreSQL's grammar rejects", () => {
  // r_COUNT and r_LISTAGG; a literal with a character of two bytes before the rewritten words, and the parameters after them.
  const approximate = `SELECT CAST(DATE_TRUNC('day', ordered_at) AS TIMESTAMP) AS ordered_at, 'Straße' AS label,
           APPROXIMATE COUNT(DISTINCT customer_id) AS customers
      FROM raw.order_events WHERE ordered_at >= :start AND ordered_at < :end GROUP BY 1`;
  const listagg = `SELECT ordered_at, LISTAGG(DISTINCT product_id, ',') WITHIN GROUP (ORDER BY product_id) AS products
      FROM raw.order_events e WHERE e.ordered_at >= :start AND :end > e.ordered_at GROUP BY ordered_at`;

  it.each([
    ['APPROXIMATE COUNT(DISTINCT ...)', approximate],
    ['LISTAGG(DISTINCT ...) WITHIN GROUP (ORDER BY ...)', listagg],
  ])('passes the synth-time check with %s, and keeps its text as written', (_what, sourceSql) => {
    expect(pipelineWith({ sourceSql }).sourceSql).toBe(sourceSql);
  });

  it("is read by the handlers' parse: the tables, the columns compared with :start and :end, its NULL tests", () => {
    expect(sourceTables(approximate)).toEqual([{ schema: 'raw', table: 'order_events' }]);
    expect(intervalFilterColumns(approximate)).toEqual(['ordered_at']);
    expect(intervalFilterColumns(listagg)).toEqual(['ordered_at']);
    expect(testsForNull(listagg.replace('GROUP BY', 'AND e.ordered_at IS NOT NULL GROUP BY'), ['ordered_at'])).toBe(true);
    expect(parseSql(approximate).parameterNames).toEqual(['start', 'end']);
  });

  it('is judged as the functions it calls: COUNT and LISTAGG, which Redshift documents', () => {
    const called = (sql: string) => nodesOf(parseSql(sql).statements, 'FuncCall').map((f) => names(f.funcname).at(-1));
    expect(called(approximate)).toEqual(['date_trunc', 'count']);
    expect(called(listagg)).toEqual(['listagg']);
    expect([...checkSql(approximate), ...checkSql(listagg)]).toEqual([]);
  });

  it("passes as a declared check's SQL too", () => {
    const sql = 'SELECT s.ordered_at FROM {staging} AS s GROUP BY s.ordered_at HAVING APPROXIMATE COUNT(DISTINCT s.order_id) < 2';
    expect(pipelineWith({ checks: { sql: [{ name: 'few_orders', sql }] } }).checks.sql).toEqual([expect.objectContaining({ name: 'few_orders', sql })]);
  });

  it.each([
    ['ARRAY_AGG', 'ARRAY_AGG(DISTINCT product_id ORDER BY product_id)'],
    ['STRING_AGG', "STRING_AGG(DISTINCT product_id::varchar, ',' ORDER BY product_id::varchar)"],
  ])("still refuses PostgreSQL's own %s, naming its page", (construct, call) => {
    const sourceSql = `SELECT ordered_at, ${call} AS products FROM raw.order_events WHERE ordered_at >= :start AND ordered_at < :end GROUP BY 1`;
    expect(errorOf(() => pipelineWith({ sourceSql })).message).toBe(
      `pipeline orders: sourceSql uses ${construct}, which Amazon Redshift does not support (Unsupported PostgreSQL functions: https://docs.aws.amazon.com/redshift/latest/dg/c_unsupported-postgresql-functions.html)`,
    );
  });

  it('still refuses DISTINCT with WITHIN GROUP on a function other than LISTAGG, as a parse error', () => {
    const sourceSql =
      'SELECT PERCENTILE_DISC(DISTINCT 0.5) WITHIN GROUP (ORDER BY amount) AS p FROM raw.order_events WHERE ordered_at >= :start AND ordered_at < :end';
    expect(errorOf(() => pipelineWith({ sourceSql })).message).toMatch(/^pipeline orders: sourceSql does not parse: cannot use DISTINCT with WITHIN GROUP/);
  });
});
