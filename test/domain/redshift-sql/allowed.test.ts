// The allow-list (domain/redshift-sql/allowed.ts): PostgreSQL forms beyond
// Redshift's documented syntax are found, each with the page it comes from;
// the documented forms, and the project's own statements, pass.
import { describe, expect, it } from 'vitest';
import { COMMAND_PAGES } from '../../../domain/redshift-sql/allowed.ts';
import { checkSql } from '../../../domain/redshift-sql/check.ts';
import { manifestDdl } from '../../../domain/sql/manifest.ts';

const constructs = (sql: string) => checkSql(sql).map((f) => f.construct);

describe('what Redshift does not document', () => {
  it.each([
    ['ALTER TABLE t ALTER COLUMN a SET DEFAULT 1', 'ALTER TABLE ALTER COLUMN ... SET DEFAULT / DROP DEFAULT'],
    ['ALTER TABLE t ALTER COLUMN a DROP DEFAULT', 'ALTER TABLE ALTER COLUMN ... SET DEFAULT / DROP DEFAULT'],
    ['ALTER TABLE t ALTER COLUMN a SET NOT NULL', 'ALTER TABLE ALTER COLUMN ... SET NOT NULL'],
    ['ALTER TABLE t ALTER COLUMN a TYPE bigint', 'ALTER COLUMN ... TYPE int8'],
    ['ALTER TABLE t ADD COLUMN a int, ADD COLUMN b int', 'ALTER TABLE with more than one subcommand'],
    ['ALTER TABLE t ADD CONSTRAINT c CHECK (a > 0)', 'ADD CHECK constraint'],
    ['CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY)', 'GENERATED ... AS IDENTITY'],
    ['CREATE TABLE t (a int, CHECK (a > 0))', 'CHECK table constraint'],
    ['SET lock_timeout = 1000', 'the configuration parameter lock_timeout'],
    ['SET TRANSACTION ISOLATION LEVEL SERIALIZABLE', 'SET TRANSACTION'],
    ['SAVEPOINT s', 'SAVEPOINT'],
    ['CREATE EXTENSION pgcrypto', 'CREATE EXTENSION'],
    ['DROP SEQUENCE s', 'DROP SEQUENCE'],
    ['SELECT DISTINCT ON (a) a, b FROM t', 'DISTINCT ON'],
    ['SELECT * FROM (VALUES (1), (2)) AS v(x)', 'VALUES list used as a constant table'],
    ['SELECT count(*) FILTER (WHERE a > 1) FROM t', 'aggregate FILTER clause'],
    ['SELECT sum(a) OVER w FROM t WINDOW w AS (ORDER BY b)', 'WINDOW clause (named windows)'],
    ['SELECT * FROM t TABLESAMPLE SYSTEM (10)', 'TABLESAMPLE'],
    ['SELECT * FROM unnest_rows(1)', 'functions in FROM (table functions)'],
    ['SELECT a::uuid FROM t', 'the type uuid'],
    ['SELECT a COLLATE "C" FROM t', 'COLLATE clause'],
    ['SELECT * FROM t WHERE (a, b) = (1, 2)', 'row constructors'],
    ['SELECT ROW(a, b) FROM t', 'row constructors'],
    ['SELECT gen_random_uuid() FROM t', 'the function GEN_RANDOM_UUID'],
    ["SELECT format('%s', a) FROM t", 'the function FORMAT'],
    ['SELECT pg_catalog.to_hex(a), regexp_matches(b, c) FROM t', 'the function REGEXP_MATCHES'],
    ["CREATE FUNCTION f(int) RETURNS int LANGUAGE plperl AS 'return 1'", 'LANGUAGE plperl'],
    ['CREATE FUNCTION f() RETURNS SETOF int LANGUAGE sql AS \'SELECT 1\'', 'functions returning SETOF or TABLE'],
  ])('%s: %s', (sql, construct) => {
    expect(constructs(sql)).toContain(construct);
  });

  it('cites a page of the SQL reference for each', () => {
    for (const finding of checkSql('ALTER TABLE t ALTER COLUMN a SET DEFAULT 1; SAVEPOINT s; SET lock_timeout = 1')) {
      expect(Object.values(COMMAND_PAGES)).toContainEqual(finding.citation);
    }
  });
});

describe('what Redshift documents', () => {
  it.each([
    'ALTER TABLE t ALTER COLUMN a TYPE varchar(200)',
    'ALTER TABLE t ADD COLUMN a int DEFAULT 0 NOT NULL',
    'ALTER TABLE t DROP COLUMN a',
    'ALTER TABLE t RENAME TO u',
    'ALTER TABLE t RENAME COLUMN a TO b',
    'ALTER TABLE t OWNER TO "IAMR:etl"',
    'ALTER TABLE t ADD CONSTRAINT k PRIMARY KEY (a)',
    'ALTER TABLE t DROP CONSTRAINT k',
    'CREATE TABLE t (id bigint NOT NULL DEFAULT 0, PRIMARY KEY (id))',
    'CREATE TABLE s (LIKE t INCLUDING DEFAULTS)',
    'SET statement_timeout TO 1000',
    'SET LOCAL statement_timeout TO 1000',
    'SET search_path TO analytics, public',
    'RESET ALL',
    'BEGIN ISOLATION LEVEL SERIALIZABLE',
    'COMMIT',
    'END',
    'ABORT',
    'INSERT INTO t (a, b) VALUES (1, 2), (3, 4)',
    'SELECT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY c) FROM t',
    'SELECT * FROM generate_series(1, 3)',
    'SELECT CAST(a AS numeric(12, 2)), a::varchar(10), a::timestamp, a::double precision FROM t',
    'DROP TABLE IF EXISTS t CASCADE',
    'DROP VIEW v',
    'DELETE FROM t USING u WHERE t.a = u.a',
    'GRANT SELECT ON TABLE t TO GROUP g',
    'LOCK t, u',
    'COMMENT ON TABLE t IS \'x\'',
    'SELECT f_mine(a), analytics.normalise(b) FROM t',
    'SELECT pg_get_viewdef(c.oid) FROM pg_class c',
    "SELECT nvl(a, 0), dateadd(day, 1, b), listagg(c, ',') WITHIN GROUP (ORDER BY c), median(a) FROM t GROUP BY b",
    'SELECT strtol(substring(md5(a), 1, 15), 16), trim(b), extract(day FROM c), position(\'x\' IN b) FROM t',
    "CREATE OR REPLACE FUNCTION f(int) RETURNS int IMMUTABLE AS 'SELECT $1 + 1' LANGUAGE sql",
    "CREATE OR REPLACE PROCEDURE p() AS $$ BEGIN NULL; END; $$ LANGUAGE plpgsql",
  ])('%s', (sql) => {
    expect(checkSql(sql)).toEqual([]);
  });

  it('passes the manifest DDL the project installs', () => {
    expect(manifestDdl(new Date('2026-01-01T00:00:00Z')).flatMap((sql) => checkSql(sql))).toEqual([]);
  });
});
