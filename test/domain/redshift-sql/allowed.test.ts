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

describe("each command's clauses against its page", () => {
  const page = (file: string) => `https://docs.aws.amazon.com/redshift/latest/dg/${file}.html`;

  it.each([
    // GRANT and REVOKE (r_GRANT, r_REVOKE)
    ['GRANT USAGE ON SEQUENCE s TO u', 'GRANT ON SEQUENCE', 'r_GRANT'],
    ['GRANT USAGE ON ALL SEQUENCES IN SCHEMA s TO u', 'GRANT ON SEQUENCE', 'r_GRANT'],
    ['GRANT USAGE ON TYPE mood TO u', 'GRANT ON TYPE', 'r_GRANT'],
    ['GRANT USAGE ON DOMAIN positive TO u', 'GRANT ON DOMAIN', 'r_GRANT'],
    ['GRANT USAGE ON FOREIGN SERVER srv TO u', 'GRANT ON FOREIGN SERVER', 'r_GRANT'],
    ['GRANT EXECUTE ON ALL ROUTINES IN SCHEMA s TO u', 'GRANT ON ROUTINE', 'r_GRANT'],
    ['REVOKE USAGE ON SEQUENCE s FROM u', 'REVOKE ON SEQUENCE', 'r_REVOKE'],
    ['GRANT TRIGGER ON t TO u', 'the privilege TRIGGER ON TABLE', 'r_GRANT'],
    ['GRANT CONNECT ON DATABASE d TO u', 'the privilege CONNECT ON DATABASE', 'r_GRANT'],
    ['GRANT INSERT (a) ON t TO u', 'a column list with INSERT', 'r_GRANT'],
    ['GRANT REFERENCES (a) ON t TO u', 'a column list with REFERENCES', 'r_GRANT'],
    ['GRANT SELECT (a) ON t TO u WITH GRANT OPTION', 'WITH GRANT OPTION with column privileges', 'r_GRANT'],
    ['GRANT EXECUTE ON FUNCTION f TO u', 'GRANT ON FUNCTION without its argument types', 'r_GRANT'],
    ['GRANT EXECUTE ON PROCEDURE p TO u', 'GRANT ON PROCEDURE without its argument types', 'r_GRANT'],
    ['GRANT SELECT ON t TO GROUP g WITH GRANT OPTION', 'WITH GRANT OPTION to a group or PUBLIC', 'r_GRANT'],
    ['GRANT SELECT ON t TO PUBLIC WITH GRANT OPTION', 'WITH GRANT OPTION to a group or PUBLIC', 'r_GRANT'],
    ['GRANT SELECT ON t TO CURRENT_USER', 'CURRENT_USER as a grantee', 'r_GRANT'],
    ['GRANT SELECT ON t TO u GRANTED BY v', 'GRANTED BY', 'r_GRANT'],
    ['REVOKE SELECT ON t FROM u CASCADE', 'REVOKE ... CASCADE', 'r_REVOKE'],
    ['REVOKE GRANT OPTION FOR SELECT ON t FROM GROUP g', 'GRANT OPTION FOR from a group or PUBLIC', 'r_REVOKE'],
    ['GRANT sample_role1 TO user1', 'GRANT of a role without ROLE', 'r_GRANT'],
    ['REVOKE sample_role1 FROM user1', 'REVOKE of a role without ROLE', 'r_REVOKE'],
    // MERGE (r_MERGE)
    ['WITH s AS (SELECT 1 AS id) MERGE INTO target USING s ON target.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (s.id)', 'WITH clause in MERGE', 'r_MERGE'],
    ['MERGE INTO target AS t USING source ON t.id = source.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (source.id)', 'an alias of the MERGE target', 'r_MERGE'],
    ['MERGE INTO target USING source ON target.id = source.id WHEN MATCHED AND source.name > \'\' THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (source.id)', 'WHEN ... AND condition in MERGE', 'r_MERGE'],
    ['MERGE INTO target USING source ON target.id = source.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (source.id)', 'WHEN NOT MATCHED BY SOURCE', 'r_MERGE'],
    ['MERGE INTO target USING source ON target.id = source.id WHEN MATCHED THEN DO NOTHING WHEN NOT MATCHED THEN INSERT VALUES (source.id)', 'DO NOTHING in MERGE', 'r_MERGE'],
    ['MERGE INTO target USING source ON target.id = source.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT DEFAULT VALUES', 'INSERT DEFAULT VALUES in MERGE', 'r_MERGE'],
    ['MERGE INTO target USING source ON target.id = source.id WHEN NOT MATCHED THEN INSERT VALUES (source.id)', 'MERGE without one WHEN MATCHED and then one WHEN NOT MATCHED clause', 'r_MERGE'],
    ['MERGE INTO target USING source ON target.id = source.id WHEN NOT MATCHED THEN INSERT VALUES (source.id) WHEN MATCHED THEN DELETE', 'MERGE without one WHEN MATCHED and then one WHEN NOT MATCHED clause', 'r_MERGE'],
    // COMMENT (r_COMMENT)
    ["COMMENT ON SCHEMA s IS 'x'", 'COMMENT ON SCHEMA', 'r_COMMENT'],
    ["COMMENT ON FUNCTION f(int) IS 'x'", 'COMMENT ON FUNCTION', 'r_COMMENT'],
    ['COMMENT ON MATERIALIZED VIEW m IS NULL', 'COMMENT ON MATERIALIZED VIEW', 'r_COMMENT'],
    ["COMMENT ON INDEX i IS 'x'", 'COMMENT ON INDEX', 'r_COMMENT'],
    // LOCK (r_LOCK)
    ['LOCK TABLE t IN ACCESS EXCLUSIVE MODE', 'LOCK ... IN ... MODE', 'r_LOCK'],
    ['LOCK t IN SHARE MODE', 'LOCK ... IN ... MODE', 'r_LOCK'],
    ['LOCK t NOWAIT', 'LOCK ... NOWAIT', 'r_LOCK'],
    ['LOCK ONLY t', 'LOCK ONLY', 'r_LOCK'],
    // CREATE TABLE AS (r_CREATE_TABLE_AS) and CREATE MATERIALIZED VIEW
    ['CREATE UNLOGGED TABLE t AS SELECT 1 AS a', 'UNLOGGED table', 'r_CREATE_TABLE_AS'],
    ['CREATE TABLE IF NOT EXISTS t AS SELECT 1 AS a', 'CREATE TABLE AS IF NOT EXISTS', 'r_CREATE_TABLE_AS'],
    ['CREATE TABLE t AS SELECT 1 AS a WITH NO DATA', 'CREATE TABLE AS ... WITH NO DATA', 'r_CREATE_TABLE_AS'],
    ['CREATE TABLE t WITH (fillfactor = 50) AS SELECT 1 AS a', 'CREATE TABLE AS ... WITH (storage parameters)', 'r_CREATE_TABLE_AS'],
    ['CREATE TEMP TABLE t ON COMMIT DROP AS SELECT 1 AS a', 'CREATE TABLE AS ... ON COMMIT', 'r_CREATE_TABLE_AS'],
    ['CREATE TABLE t AS EXECUTE q', 'CREATE TABLE AS EXECUTE', 'r_CREATE_TABLE_AS'],
    ['CREATE MATERIALIZED VIEW m AS SELECT a FROM t WITH NO DATA', 'CREATE MATERIALIZED VIEW ... WITH NO DATA', 'materialized-view-create-sql-command'],
    ['CREATE MATERIALIZED VIEW IF NOT EXISTS m AS SELECT a FROM t', 'CREATE MATERIALIZED VIEW IF NOT EXISTS', 'materialized-view-create-sql-command'],
    ['CREATE MATERIALIZED VIEW m (x) AS SELECT a FROM t', 'CREATE MATERIALIZED VIEW with a column list', 'materialized-view-create-sql-command'],
    // CREATE VIEW (r_CREATE_VIEW)
    ['CREATE TEMP VIEW v AS SELECT a FROM t', 'temporary views', 'r_CREATE_VIEW'],
    ['CREATE RECURSIVE VIEW v (n) AS SELECT 1', 'CREATE RECURSIVE VIEW', 'r_CREATE_VIEW'],
    ['CREATE VIEW v AS SELECT a FROM t WITH CASCADED CHECK OPTION', 'CREATE VIEW ... WITH CHECK OPTION', 'r_CREATE_VIEW'],
    ['CREATE VIEW v WITH (security_barrier) AS SELECT a FROM t', 'CREATE VIEW ... WITH (view options)', 'r_CREATE_VIEW'],
    // CREATE SCHEMA (r_CREATE_SCHEMA)
    ['CREATE SCHEMA s AUTHORIZATION CURRENT_USER', 'AUTHORIZATION CURRENT_USER', 'r_CREATE_SCHEMA'],
    // CREATE PROCEDURE (r_CREATE_PROCEDURE) and CALL (r_CALL_procedure)
    ['CREATE PROCEDURE sp(VARIADIC a int[]) AS $$ BEGIN NULL; END $$ LANGUAGE plpgsql', 'VARIADIC arguments', 'r_CREATE_PROCEDURE'],
    ['CREATE PROCEDURE sp(a int DEFAULT 1) AS $$ BEGIN NULL; END $$ LANGUAGE plpgsql', 'argument defaults', 'r_CREATE_PROCEDURE'],
    ["CREATE PROCEDURE sp() LANGUAGE sql AS 'SELECT 1'", 'procedures in LANGUAGE sql', 'r_CREATE_PROCEDURE'],
    ['CREATE PROCEDURE sp() LANGUAGE sql BEGIN ATOMIC SELECT 1; END', 'BEGIN ATOMIC bodies', 'r_CREATE_PROCEDURE'],
    ['CREATE PROCEDURE sp() AS $$ BEGIN NULL; END $$ LANGUAGE plpgsql SET lock_timeout TO 1', 'the configuration parameter lock_timeout', 'cm_chap_ConfigurationRef'],
    ['CALL sp(a => 1)', 'named arguments in CALL', 'r_CALL_procedure'],
    // INSERT, UPDATE, DELETE (r_INSERT_30, r_UPDATE, r_DELETE)
    ['INSERT INTO t OVERRIDING SYSTEM VALUE VALUES (1)', 'INSERT ... OVERRIDING', 'r_INSERT_30'],
    ['UPDATE t SET a = 1 WHERE CURRENT OF c', 'UPDATE ... WHERE CURRENT OF', 'r_UPDATE'],
    ['DELETE FROM t WHERE CURRENT OF c', 'DELETE ... WHERE CURRENT OF', 'r_DELETE'],
  ])('%s: %s (%s)', (sql, construct, file) => {
    const found = checkSql(sql).find((f) => f.construct === construct);
    expect(found, JSON.stringify(checkSql(sql))).toBeDefined();
    expect(found!.citation.url).toBe(page(file));
  });

  it.each([
    // r_GRANT and its examples
    'grant select on table sales to fred',
    'grant select on all tables in schema qa_tickit to fred',
    'grant all on schema qa_tickit to group qa_users',
    'grant all on table qa_tickit.sales to group qa_users, group ro_users',
    'grant all on view_date to view_user',
    'grant select(cust_name, cust_phone), update(cust_contact_preference) on cust_profile to group sales_group',
    'grant ALL(cust_name, cust_phone,cust_contact_preference) on cust_profile to group sales_admin',
    'grant select on table employees to HR with grant option',
    'GRANT USAGE ON DATABASE sales_db TO Bob',
    'GRANT USAGE ON SCHEMA sales_schema TO GROUP Analyst_group',
    'GRANT CREATE, TEMP ON DATABASE dev TO PUBLIC',
    'GRANT EXECUTE ON FUNCTION f_mine(int, varchar) TO u WITH GRANT OPTION',
    'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA s TO GROUP g',
    'GRANT EXECUTE ON PROCEDURE sp_load() TO u',
    'GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA s TO PUBLIC',
    'GRANT USAGE ON LANGUAGE plpythonu TO u',
    'GRANT TRUNCATE, REFERENCES ON TABLE t TO "IAMR:etl"',
    // r_REVOKE and its examples
    'revoke insert on table sales from group guests',
    'revoke select on all tables in schema qa_tickit from fred',
    'revoke temporary on database tickit from public',
    'revoke select(cust_name, cust_phone), update(cust_contact_preference) on cust_profile from group sales_group',
    'REVOKE GRANT OPTION FOR SELECT ON t FROM u RESTRICT',
    'REVOKE EXECUTE ON FUNCTION f_mine(int) FROM PUBLIC',
    // r_MERGE's examples
    'MERGE INTO target USING source ON target.id = source.id WHEN MATCHED THEN UPDATE SET id = source.id, name = source.name WHEN NOT MATCHED THEN INSERT VALUES (source.id, source.name)',
    'MERGE INTO target USING source s ON target.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)',
    // r_COMMENT's examples
    "COMMENT ON TABLE sales IS 'This table stores tickets sales data'",
    'COMMENT ON TABLE sales IS NULL',
    "COMMENT ON COLUMN sales.eventid IS 'Foreign-key reference to the EVENT table.'",
    "COMMENT ON CONSTRAINT sales_pkey ON sales IS 'x'",
    "COMMENT ON DATABASE dev IS 'x'",
    "COMMENT ON VIEW v IS 'x'",
    // r_LOCK
    'lock event, sales',
    'LOCK TABLE analytics.orders',
    // r_CREATE_TABLE_AS, CREATE MATERIALIZED VIEW, r_CREATE_VIEW, r_CREATE_SCHEMA
    'CREATE TABLE event_backup AS SELECT * FROM event',
    'CREATE TEMP TABLE eventlist (id, name) AS SELECT eventid, eventname FROM event',
    'CREATE LOCAL TEMPORARY TABLE e AS SELECT * FROM event',
    'CREATE MATERIALIZED VIEW tickets_mv AS SELECT catgroup, sum(qtysold) AS sold FROM category c, event e, sales s WHERE c.catid = e.catid AND e.eventid = s.eventid GROUP BY catgroup',
    'CREATE OR REPLACE VIEW myevent (id, name) AS SELECT eventid, eventname FROM event',
    'CREATE SCHEMA IF NOT EXISTS us_sales AUTHORIZATION dwuser',
    'CREATE SCHEMA AUTHORIZATION dwuser',
    // r_CREATE_PROCEDURE and r_CALL_procedure
    'CREATE OR REPLACE PROCEDURE test_sp1(f1 int, f2 varchar(20)) AS $$ BEGIN NULL; END; $$ LANGUAGE plpgsql',
    'CREATE OR REPLACE PROCEDURE test_sp2(f1 IN int, f2 INOUT varchar(256), out_var OUT varchar(256)) AS $$ BEGIN NULL; END; $$ LANGUAGE plpgsql SECURITY DEFINER SET search_path TO public',
    "CALL test_sp1(3, 'book')",
    // r_INSERT_30, r_UPDATE, r_DELETE
    'INSERT INTO t DEFAULT VALUES',
    'UPDATE t SET a = DEFAULT FROM u WHERE t.b = u.b',
  ])('%s', (sql) => {
    expect(checkSql(sql)).toEqual([]);
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
