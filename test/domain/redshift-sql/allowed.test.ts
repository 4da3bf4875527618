// The allow-list (domain/redshift-sql/allowed.ts): PostgreSQL forms beyond
// Redshift's documented syntax are found, each with the page it comes from;
// the documented forms, and the project's own statements, pass.
import { describe, expect, it } from 'vitest';
import { manifestDdl } from '../../../domain/manifest/sql/manifest.ts';
import { COMMAND_PAGES } from '../../../domain/redshift-sql/allowed.ts';
import { checkSql } from '../../../domain/redshift-sql/check.ts';
import { UNDOCUMENTED_CLAUSES, UNDOCUMENTED_FORMS } from '../../support/undocumented-forms.ts';

const constructs = (sql: string) => checkSql(sql).map((f) => f.construct);

describe('what Redshift does not document', () => {
  it.each(UNDOCUMENTED_FORMS)('%s: %s', (sql, construct) => {
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

  it.each(UNDOCUMENTED_CLAUSES)('%s: %s (%s)', (sql, construct, file) => {
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
    "COMMENT ON TABLE t IS 'x'",
    'SELECT f_mine(a), analytics.normalise(b) FROM t',
    'SELECT pg_get_viewdef(c.oid) FROM pg_class c',
    "SELECT nvl(a, 0), dateadd(day, 1, b), listagg(c, ',') WITHIN GROUP (ORDER BY c), median(a) FROM t GROUP BY b",
    "SELECT strtol(substring(md5(a), 1, 15), 16), trim(b), extract(day FROM c), position('x' IN b) FROM t",
    "CREATE OR REPLACE FUNCTION f(int) RETURNS int IMMUTABLE AS 'SELECT $1 + 1' LANGUAGE sql",
    'CREATE OR REPLACE PROCEDURE p() AS $$ BEGIN NULL; END; $$ LANGUAGE plpgsql',
  ])('%s', (sql) => {
    expect(checkSql(sql)).toEqual([]);
  });

  it('passes the manifest DDL the project installs', () => {
    expect(manifestDdl(new Date('2026-01-01T00:00:00Z')).flatMap((sql) => checkSql(sql))).toEqual([]);
  });

  it('passes CREATE USER ... PASSWORD DISABLE (r_CREATE_USER)', () => {
    expect(checkSql('CREATE USER "IAMR:steps" PASSWORD DISABLE')).toEqual([]);
  });
});
