// Statements in forms Redshift's SQL reference does not document, each with
// the construct the allow-list (domain/redshift-sql/allowed.ts) names and,
// for a command checked clause by clause, the page it cites. Checked by the
// allow-list itself (test/domain/redshift-sql/allowed.test.ts) and through
// the local endpoint (test/local/redshift-mode.test.ts).

/** [statement, construct]: forms beyond Redshift's statements, clauses, types and functions. */
export const UNDOCUMENTED_FORMS: readonly (readonly [string, string])[] = [
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
  ["CREATE FUNCTION f() RETURNS SETOF int LANGUAGE sql AS 'SELECT 1'", 'functions returning SETOF or TABLE'],
  ['CREATE POLICY p ON t USING (true)', 'CREATE POLICY'],
  ['ALTER TABLE t ENABLE ROW LEVEL SECURITY', 'ALTER TABLE ENABLE ROW LEVEL SECURITY'],
  ['ALTER TABLE t DISABLE ROW LEVEL SECURITY', 'ALTER TABLE DISABLE ROW LEVEL SECURITY'],
];

/** [statement, construct, page file]: a command's clauses against its page. */
export const UNDOCUMENTED_CLAUSES: readonly (readonly [string, string, string])[] = [
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
  [
    'WITH s AS (SELECT 1 AS id) MERGE INTO target USING s ON target.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (s.id)',
    'WITH clause in MERGE',
    'r_MERGE',
  ],
  [
    'MERGE INTO target AS t USING source ON t.id = source.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (source.id)',
    'an alias of the MERGE target',
    'r_MERGE',
  ],
  [
    "MERGE INTO target USING source ON target.id = source.id WHEN MATCHED AND source.name > '' THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (source.id)",
    'WHEN ... AND condition in MERGE',
    'r_MERGE',
  ],
  [
    'MERGE INTO target USING source ON target.id = source.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (source.id)',
    'WHEN NOT MATCHED BY SOURCE',
    'r_MERGE',
  ],
  [
    'MERGE INTO target USING source ON target.id = source.id WHEN MATCHED THEN DO NOTHING WHEN NOT MATCHED THEN INSERT VALUES (source.id)',
    'DO NOTHING in MERGE',
    'r_MERGE',
  ],
  [
    'MERGE INTO target USING source ON target.id = source.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT DEFAULT VALUES',
    'INSERT DEFAULT VALUES in MERGE',
    'r_MERGE',
  ],
  [
    'MERGE INTO target USING source ON target.id = source.id WHEN NOT MATCHED THEN INSERT VALUES (source.id)',
    'MERGE without one WHEN MATCHED and then one WHEN NOT MATCHED clause',
    'r_MERGE',
  ],
  [
    'MERGE INTO target USING source ON target.id = source.id WHEN NOT MATCHED THEN INSERT VALUES (source.id) WHEN MATCHED THEN DELETE',
    'MERGE without one WHEN MATCHED and then one WHEN NOT MATCHED clause',
    'r_MERGE',
  ],
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
  [
    'CREATE PROCEDURE sp() AS $$ BEGIN NULL; END $$ LANGUAGE plpgsql SET lock_timeout TO 1',
    'the configuration parameter lock_timeout',
    'cm_chap_ConfigurationRef',
  ],
  ['CALL sp(a => 1)', 'named arguments in CALL', 'r_CALL_procedure'],
  // INSERT, UPDATE, DELETE (r_INSERT_30, r_UPDATE, r_DELETE)
  ['INSERT INTO t OVERRIDING SYSTEM VALUE VALUES (1)', 'INSERT ... OVERRIDING', 'r_INSERT_30'],
  ['UPDATE t SET a = 1 WHERE CURRENT OF c', 'UPDATE ... WHERE CURRENT OF', 'r_UPDATE'],
  ['DELETE FROM t WHERE CURRENT OF c', 'DELETE ... WHERE CURRENT OF', 'r_DELETE'],
];
