// Redshift's system views the project queries, as views over PostgreSQL's
// catalog with Redshift's column names and types, in SYSTEM_VIEWS_SCHEMA of
// every database served: on the sessions' search_path after the user schemas,
// before pg_catalog (whose pg_constraint and pg_get_constraintdef it stands in
// for), so one SQL text runs on both engines. The provisioned-only views (STL,
// STV, SVL, SVCS) live in PROVISIONED_VIEWS_SCHEMA, searched by cluster
// requests only (docs/decisions/catalog-of-the-target-kind.md). A regular user
// sees its own rows; a superuser or a member of pg_read_all_stats (SYSLOG
// ACCESS UNRESTRICTED) every row (docs/decisions/privileges-and-the-database-user.md).
// https://docs.aws.amazon.com/redshift/latest/dg/cm_chap_system-tables.html#c_visibility-of-data
import type pg from 'pg';

export const SYSTEM_VIEWS_SCHEMA = 'local_redshift';

/** The views only a provisioned cluster has: on the search_path of cluster requests only. */
export const PROVISIONED_VIEWS_SCHEMA = 'local_redshift_provisioned';

/** The schemas of the stand-ins, which no user's listing or grant view shows. */
export const STAND_IN_SCHEMAS = [SYSTEM_VIEWS_SCHEMA, PROVISIONED_VIEWS_SCHEMA] as const;
const STAND_INS = STAND_IN_SCHEMAS.map((s) => `'${s}'`).join(', ');

/** What the request names: a provisioned cluster (ClusterIdentifier) or a Serverless workgroup (WorkgroupName). */
export type TargetKind = 'cluster' | 'workgroup';

/** Bumped whenever a view changes, so that databases holding an older version get the new ones. */
const VERSION = 'atomic-publish local Redshift system views, version 15';

const SEES_ALL = `pg_has_role(current_user, 'pg_read_all_stats', 'USAGE')`;

const VIEWS: Record<string, string> = {
  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_RELATION_PRIVILEGES.html
  // Privileges granted explicitly (an owner's own are implicit), of the kinds Redshift lists.
  svv_relation_privileges: `
    SELECT n.nspname::text AS namespace_name,
           c.relname::text AS relation_name,
           a.privilege_type::text AS privilege_type,
           a.grantee::int4 AS identity_id,
           CASE WHEN a.grantee = 0 THEN 'public' ELSE r.rolname::text END AS identity_name,
           CASE WHEN a.grantee = 0 THEN 'public' WHEN r.rolcanlogin THEN 'user' ELSE 'role' END AS identity_type,
           a.is_grantable AS admin_option
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
     CROSS JOIN LATERAL aclexplode(c.relacl) a
      LEFT JOIN pg_roles r ON r.oid = a.grantee
     WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')
       AND n.nspname NOT IN ('pg_catalog', 'information_schema', ${STAND_INS})
       AND a.grantee <> c.relowner
       AND a.privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE', 'REFERENCES', 'TRUNCATE')
       AND (${SEES_ALL} OR a.grantee = 0 OR pg_has_role(current_user, a.grantee, 'USAGE'))`,

  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_TRANSACTIONS.html
  // Open transactions and the locks they hold or wait for: on user relations
  // (catalog locks of the query itself would be noise) and on transaction ids.
  svv_transactions: `
    SELECT a.usename::text AS txn_owner,
           a.datname::text AS txn_db,
           COALESCE(l.transactionid, a.backend_xid)::text::int8 AS xid,
           l.pid::int4 AS pid,
           (a.xact_start AT TIME ZONE 'UTC')::timestamp AS txn_start,
           l.mode::text AS lock_mode,
           l.locktype::text AS lockable_object_type,
           CASE WHEN l.locktype = 'relation' THEN l.relation::int4 END AS relation,
           l.granted AS granted
      FROM pg_locks l
      JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE a.xact_start IS NOT NULL
       AND (l.locktype = 'transactionid' OR (l.locktype = 'relation' AND l.relation >= 16384))
       AND (${SEES_ALL} OR a.usename = current_user)`,

  // https://docs.aws.amazon.com/redshift/latest/dg/SYS_QUERY_HISTORY.html
  // The queries of this database's client sessions now (no history).
  // PostgreSQL has no WLM queues: a statement waiting for a lock stands in
  // for a queued one (status 'queued'), any other active one is 'running',
  // so a test makes the warehouse busy by holding a lock others wait for.
  // Kept to the current database, which is the test's own on a shared server.
  // A Serverless workgroup has it as a cluster has: the swap reads a
  // session's running query from it (STV_RECENTS is provisioned only).
  sys_query_history: `
    SELECT a.usesysid::int4 AS user_id,
           a.pid::int8 AS query_id,
           NULL::char(320) AS query_label,
           COALESCE(a.backend_xid::text::int8, -1) AS transaction_id,
           a.pid::int4 AS session_id,
           a.datname::char(128) AS database_name,
           (CASE WHEN a.wait_event_type = 'Lock' THEN 'queued' ELSE 'running' END)::char(10) AS status,
           (a.query_start AT TIME ZONE 'UTC')::timestamp AS start_time,
           NULL::timestamp AS end_time,
           LEAST(EXTRACT(EPOCH FROM clock_timestamp() - a.query_start) * 1000000, 9223372036854775807)::int8 AS elapsed_time,
           LEFT(a.query, 4000)::char(4000) AS query_text
      FROM pg_stat_activity a
     WHERE a.backend_type = 'client backend' AND a.state = 'active' AND a.pid <> pg_backend_pid()
       AND a.datname = current_database()
       AND (${SEES_ALL} OR a.usename = current_user)`,

  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_REDSHIFT_COLUMNS.html
  // Columns of tables and views the user may read (a superuser: all; the
  // access here is to the tables, not to other users' logs, so SYSLOG ACCESS
  // does not widen it). PostgreSQL has no sort
  // keys: a table's btree index stands in for one (the index it is
  // CLUSTERed on, else its oldest), sortkey being a column's position in it
  // (0: not in it), as a time column's index stands in for a sort key.
  svv_redshift_columns: `
    SELECT current_database()::varchar(128) AS database_name,
           n.nspname::varchar(128) AS schema_name,
           c.relname::varchar(128) AS table_name,
           a.attname::varchar(128) AS column_name,
           a.attnum::int4 AS ordinal_position,
           format_type(a.atttypid, a.atttypmod)::varchar(32) AS data_type,
           pg_get_expr(d.adbin, d.adrelid)::varchar(4000) AS column_default,
           (CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END)::varchar(3) AS is_nullable,
           (ta.encodings ->> a.attname)::varchar(128) AS encoding,
           COALESCE(ta.distkey = a.attname, false) AS distkey,
           (CASE WHEN cardinality(ta.sortkey) > 0
                 THEN COALESCE(array_position(ta.sortkey, a.attname::text), 0) * (CASE WHEN ta.sortstyle = 'interleaved' THEN -1 ELSE 1 END)
                 ELSE COALESCE(array_position(sk.indkey::int2[], a.attnum) - array_lower(sk.indkey::int2[], 1) + 1, 0) END)::int4 AS sortkey,
           NULL::varchar(128) AS column_acl,
           col_description(c.oid, a.attnum)::varchar(256) AS remarks
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
      LEFT JOIN ${SYSTEM_VIEWS_SCHEMA}.table_attributes ta ON ta.relid = c.oid
      LEFT JOIN LATERAL (
        SELECT i.indkey FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam
         WHERE i.indrelid = c.oid AND am.amname = 'btree'
         ORDER BY i.indisclustered DESC, i.indexrelid
         LIMIT 1) sk ON true
     WHERE c.relkind IN ('r', 'p', 'v', 'm')
       AND n.nspname NOT IN ('pg_catalog', 'information_schema', ${STAND_INS})
       AND n.nspname NOT LIKE 'pg\\_%'
       AND ((SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user) OR has_any_column_privilege(c.oid, 'SELECT'))`,

  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_TABLE_INFO.html
  // PostgreSQL has no sort keys, distribution or column encodings: those a
  // CREATE TABLE declared (table_attributes), else NULL (sortkey_num 0). tbl_rows is the planner's count,
  // exact after ANALYZE; size in 1 MB blocks.
  svv_table_info: `
    SELECT current_database()::text AS database,
           n.nspname::text AS schema,
           c.oid AS table_id,
           c.relname::text AS "table",
           (CASE WHEN ta.relid IS NULL THEN NULL WHEN ta.encodings::text <> '{}' THEN 'Y' ELSE 'N' END)::text AS encoded,
           (CASE ta.diststyle WHEN 'key' THEN 'KEY(' || ta.distkey || ')' WHEN 'even' THEN 'EVEN' WHEN 'all' THEN 'ALL' WHEN 'auto' THEN 'AUTO(EVEN)' END)::text AS diststyle,
           (CASE WHEN cardinality(ta.sortkey) > 0 THEN (CASE WHEN ta.sortstyle = 'interleaved' THEN 'INTERLEAVED' ELSE ta.sortkey[1] END) END)::text AS sortkey1,
           (SELECT MAX(att.atttypmod - 4) FROM pg_attribute att
             WHERE att.attrelid = c.oid AND att.attnum > 0 AND NOT att.attisdropped AND att.atttypid = 1043)::int4 AS max_varchar,
           NULL::char(32) AS sortkey1_enc,
           COALESCE(cardinality(ta.sortkey), 0)::int4 AS sortkey_num,
           CEIL(pg_total_relation_size(c.oid) / 1048576.0)::int8 AS size,
           NULL::numeric(10, 4) AS pct_used,
           NULL::int8 AS empty,
           NULL::numeric(5, 2) AS unsorted,
           NULL::numeric(5, 2) AS stats_off,
           (CASE WHEN c.reltuples >= 0 THEN c.reltuples END)::numeric(38, 0) AS tbl_rows,
           NULL::numeric(19, 2) AS skew_sortkey1,
           NULL::numeric(19, 2) AS skew_rows,
           (CASE WHEN c.reltuples >= 0 THEN c.reltuples END)::numeric(38, 0) AS estimated_visible_rows,
           NULL::text AS risk_event,
           NULL::text AS vacuum_sort_benefit,
           NULL::timestamp AS create_time
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN ${SYSTEM_VIEWS_SCHEMA}.table_attributes ta ON ta.relid = c.oid
     WHERE c.relkind IN ('r', 'p', 'm')
       AND n.nspname NOT IN ('pg_catalog', 'information_schema', ${STAND_INS})
       AND n.nspname NOT LIKE 'pg\\_%'`,
};

/**
 * The views of PROVISIONED_VIEWS_SCHEMA: each page says "This table is only
 * visible on provisioned clusters" or belongs to the STL, STV, SVL or SVCS
 * families of "System monitoring (provisioned only)".
 */
const PROVISIONED_VIEWS: Record<string, string> = {
  // https://docs.aws.amazon.com/redshift/latest/dg/r_STV_RECENTS.html
  // Every client session's current or last query; pid is -1 once it is done.
  stv_recents: `
    SELECT a.usesysid::int4 AS userid,
           (CASE WHEN a.state = 'active' THEN 'Running' ELSE 'Done' END)::char(20) AS status,
           (a.query_start AT TIME ZONE 'UTC')::timestamp AS starttime,
           LEAST(EXTRACT(EPOCH FROM now() - a.backend_start) * 1000000, 2147483647)::int4 AS duration,
           a.usename::char(50) AS user_name,
           a.datname::char(50) AS db_name,
           LEFT(a.query, 600)::char(600) AS query,
           (CASE WHEN a.state = 'active' THEN a.pid ELSE -1 END)::int4 AS pid
      FROM pg_stat_activity a
     WHERE a.backend_type = 'client backend' AND a.query_start IS NOT NULL
       AND (${SEES_ALL} OR a.usename = current_user)`,
};

/**
 * Redshift's STRTOL(num_string, base) (https://docs.aws.amazon.com/redshift/latest/dg/r_STRTOL.html),
 * which PostgreSQL lacks: leading white space, an optional sign, `0x`
 * before base 16, digits up to the first one the base does not have; an
 * empty string is 0, NULL is NULL, a value outside 64 bits fails. Hex of up
 * to 15 digits, the row-checksum idiom, takes an inlined bit-string path
 * (one scan of a large table pays no function call per row).
 */
const STRTOL: string[] = [
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.strtol_any(p_num text, p_base int) RETURNS bigint
     LANGUAGE plpgsql IMMUTABLE STRICT AS $$
     DECLARE
       s text := ltrim(p_num, E' \t\n\r\f\v');
       negative boolean := false;
       total numeric := 0;
       digit int;
     BEGIN
       IF p_base < 2 OR p_base > 36 THEN
         RAISE EXCEPTION 'STRTOL base must be an integer between 2 and 36, not %', p_base;
       END IF;
       IF left(s, 1) IN ('+', '-') THEN
         negative := left(s, 1) = '-';
         s := substr(s, 2);
       END IF;
       IF p_base = 16 AND lower(left(s, 2)) = '0x' THEN s := substr(s, 3); END IF;
       FOR i IN 1 .. length(s) LOOP
         digit := strpos('0123456789abcdefghijklmnopqrstuvwxyz', lower(substr(s, i, 1))) - 1;
         EXIT WHEN digit < 0 OR digit >= p_base;
         total := total * p_base + digit;
       END LOOP;
       IF negative THEN total := -total; END IF;
       IF total > 9223372036854775807 OR total < -9223372036854775808 THEN
         RAISE EXCEPTION 'STRTOL value % is out of the signed 64-bit range', p_num;
       END IF;
       RETURN total;
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.strtol(p_num text, p_base int) RETURNS bigint
     LANGUAGE sql IMMUTABLE AS $$
       SELECT CASE WHEN p_base = 16 AND p_num ~ '^[0-9a-fA-F]{1,15}$' THEN ('x' || lpad(p_num, 16, '0'))::bit(64)::bigint
                   ELSE ${SYSTEM_VIEWS_SCHEMA}.strtol_any(p_num, p_base) END
     $$`,
];

/**
 * Redshift's FNV_HASH(value [, seed]): a seeded 64-bit BIGINT hash of a value's
 * typed binary form, the FNV offset basis without a seed; NULL gives NULL (the
 * page does not say). One inlined SQL function per type over PostgreSQL's own
 * seeded hashes: values differ from Redshift's, which is safe as both sides of a
 * comparison hash on one engine (docs/decisions/content-checksum-in-the-gate.md).
 * https://docs.aws.amazon.com/redshift/latest/dg/r_FNV_HASH.html
 */
const FNV_HASH_BODIES: [string, string][] = [
  ['smallint', 'hashint2extended(v, seed)'],
  ['integer', 'hashint4extended(v, seed)'],
  ['bigint', 'hashint8extended(v, seed)'],
  ['numeric', 'hash_numeric_extended(v, seed)'],
  ['real', 'hashfloat4extended(v, seed)'],
  ['double precision', 'hashfloat8extended(v, seed)'],
  ['boolean', `hashcharextended(CAST(CASE WHEN v THEN 't' ELSE 'f' END AS "char"), seed)`],
  // character and character varying arrive here by their implicit cast to text.
  ['text', 'hashtextextended(v, seed)'],
  ['date', "hashint4extended(v - DATE '2000-01-01', seed)"],
  ['timestamp', 'timestamp_hash_extended(v, seed)'],
  ['timestamptz', "timestamp_hash_extended(v AT TIME ZONE 'UTC', seed)"],
  ['time', 'time_hash_extended(v, seed)'],
  ['timetz', 'timetz_hash_extended(v, seed)'],
];
const FNV_HASH: string[] = FNV_HASH_BODIES.map(
  ([type, body]) => `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.fnv_hash(v ${type}, seed bigint DEFAULT -3750763034362895579) RETURNS bigint
     LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ${body} $$`,
);

/**
 * The informational keys (informational-keys.ts) as Redshift's catalog shows
 * them, in pg_constraint and through pg_get_constraintdef (as AWS's
 * v_generate_tbl_ddl reads them), following their table through a rename and
 * a drop. Recorded in KEYS_TABLE in the declaring statement's transaction;
 * sessions see this schema's pg_constraint and pg_get_constraintdef before
 * pg_catalog's: the real constraints but the CHECK (true) stand-ins, plus the keys.
 */
const KEYS_TABLE = `${SYSTEM_VIEWS_SCHEMA}.informational_constraints`;

/**
 * Redshift's table attributes (ENCODE, DISTSTYLE, DISTKEY, SORTKEY) of the
 * tables whose CREATE TABLE declared them or copied them by LIKE, which
 * PostgreSQL has no place for (redshift-mode.ts takes them out of the
 * statement): by table oid, so they follow a rename and go with a drop, as
 * Redshift's do. Recorded in the transaction of the CREATE TABLE.
 */
const ATTRIBUTES_TABLE = `${SYSTEM_VIEWS_SCHEMA}.table_attributes`;
const TABLE_ATTRIBUTES: string[] = [
  `CREATE TABLE ${ATTRIBUTES_TABLE} (relid oid PRIMARY KEY, diststyle text, distkey text, sortstyle text, sortkey text[] NOT NULL, encodings json NOT NULL)`,
  `GRANT SELECT ON ${ATTRIBUTES_TABLE} TO PUBLIC`,
  // Whether this transaction created the table (its pg_class row): a CREATE
  // TABLE IF NOT EXISTS of a table that existed declared nothing.
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.created_in_this_transaction(p_table oid) RETURNS boolean
     LANGUAGE sql STABLE SET search_path = pg_catalog AS $$
       SELECT (SELECT c.xmin::text FROM pg_class c WHERE c.oid = p_table) = (pg_current_xact_id()::text::bigint % 4294967296)::text
     $$`,
];
const ATTRIBUTE_FUNCTIONS: string[] = [
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.record_table_attributes(p_table oid, p_attributes json, p_if_new boolean)
     RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       IF p_table IS NULL THEN RAISE EXCEPTION 'record_table_attributes: table not found'; END IF;
       IF p_if_new AND NOT ${SYSTEM_VIEWS_SCHEMA}.created_in_this_transaction(p_table) THEN RETURN; END IF;
       DELETE FROM ${ATTRIBUTES_TABLE} WHERE relid = p_table;
       INSERT INTO ${ATTRIBUTES_TABLE} (relid, diststyle, distkey, sortstyle, sortkey, encodings)
       VALUES (p_table, p_attributes ->> 'distStyle', p_attributes ->> 'distKey', p_attributes ->> 'sortStyle',
               ARRAY(SELECT json_array_elements_text(p_attributes -> 'sortKey')), p_attributes -> 'encodings');
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.copy_table_attributes(p_table oid, p_parent oid, p_if_new boolean)
     RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       IF p_table IS NULL OR p_parent IS NULL THEN RETURN; END IF;
       IF p_if_new AND NOT ${SYSTEM_VIEWS_SCHEMA}.created_in_this_transaction(p_table) THEN RETURN; END IF;
       DELETE FROM ${ATTRIBUTES_TABLE} WHERE relid = p_table;
       INSERT INTO ${ATTRIBUTES_TABLE} (relid, diststyle, distkey, sortstyle, sortkey, encodings)
       SELECT p_table, diststyle, distkey, sortstyle, sortkey, encodings FROM ${ATTRIBUTES_TABLE} WHERE relid = p_parent;
     END
     $$`,
];

/**
 * The search_path of the endpoint's sessions for a target of this kind: the
 * user schemas, then the stand-ins before pg_catalog; a cluster's also
 * the provisioned-only views.
 */
export function sessionSearchPath(kind: TargetKind): string {
  return ['$user', 'public', SYSTEM_VIEWS_SCHEMA, ...(kind === 'cluster' ? [PROVISIONED_VIEWS_SCHEMA] : []), 'pg_catalog'].join(',');
}

const KEY_CATALOG: string[] = [
  // Oids far above any the server hands out to a test or demo cluster.
  `CREATE SEQUENCE ${KEYS_TABLE}_oids START 3000000000 MAXVALUE 4294967295`,
  `CREATE TABLE ${KEYS_TABLE} (
     oid oid PRIMARY KEY DEFAULT nextval('${KEYS_TABLE}_oids'),
     conname name NOT NULL,
     connamespace oid NOT NULL,
     contype "char" NOT NULL,
     conrelid oid NOT NULL,
     confrelid oid NOT NULL DEFAULT 0,
     conkey int2[] NOT NULL,
     confkey int2[])`,
  `CREATE VIEW ${SYSTEM_VIEWS_SCHEMA}.pg_constraint AS
     SELECT c.oid, c.conname, c.connamespace, c.contype, c.conrelid, c.confrelid, c.conkey, c.confkey
       FROM pg_catalog.pg_constraint c
      WHERE c.contype <> 'c'
     UNION ALL
     SELECT k.oid, k.conname, k.connamespace, k.contype, k.conrelid, k.confrelid, k.conkey, k.confkey
       FROM ${KEYS_TABLE} k
      WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class r WHERE r.oid = k.conrelid)`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.key_columns(p_table oid, p_columns int2[]) RETURNS text
     LANGUAGE sql STABLE AS $$
       SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY u.ord)
         FROM unnest(p_columns) WITH ORDINALITY AS u(attnum, ord)
         JOIN pg_catalog.pg_attribute a ON a.attrelid = p_table AND a.attnum = u.attnum
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.pg_get_constraintdef(p_oid oid) RETURNS text
     LANGUAGE sql STABLE AS $$
       SELECT COALESCE(
         (SELECT CASE k.contype WHEN 'p' THEN 'PRIMARY KEY' WHEN 'u' THEN 'UNIQUE' ELSE 'FOREIGN KEY' END
                 || ' (' || ${SYSTEM_VIEWS_SCHEMA}.key_columns(k.conrelid, k.conkey) || ')'
                 || CASE WHEN k.contype = 'f'
                         THEN ' REFERENCES ' || k.confrelid::regclass::text || '(' || ${SYSTEM_VIEWS_SCHEMA}.key_columns(k.confrelid, k.confkey) || ')'
                         ELSE '' END
            FROM ${KEYS_TABLE} k WHERE k.oid = p_oid),
         pg_catalog.pg_get_constraintdef(p_oid))
     $$`,
  // Called by the endpoint right after the statement that declared the
  // key, in its transaction, with the tables resolved in the caller's
  // search_path (to_regclass). Names as PostgreSQL (and Redshift) make them.
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.record_key(p_table oid, p_kind text, p_name text, p_columns json, p_references oid, p_ref_columns json, p_if_new boolean)
     RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     DECLARE
       cols text[] := ARRAY(SELECT json_array_elements_text(p_columns));
       ref_cols text[] := ARRAY(SELECT json_array_elements_text(COALESCE(p_ref_columns, '[]')));
       keys int2[];
       ref_keys int2[];
       kind "char" := CASE p_kind WHEN 'PRIMARY KEY' THEN 'p' WHEN 'UNIQUE' THEN 'u' ELSE 'f' END;
       key_name name;
       table_name name;
     BEGIN
       IF p_table IS NULL THEN RAISE EXCEPTION 'record_key: table not found'; END IF;
       IF p_if_new AND NOT ${SYSTEM_VIEWS_SCHEMA}.created_in_this_transaction(p_table) THEN RETURN; END IF;
       keys := ARRAY(SELECT a.attnum FROM unnest(cols) WITH ORDINALITY AS u(name, ord)
                       JOIN pg_attribute a ON a.attrelid = p_table AND a.attname = u.name ORDER BY u.ord);
       IF kind = 'f' THEN
         IF cardinality(ref_cols) = 0 THEN
           -- REFERENCES t without columns: t's primary key.
           SELECT k.conkey INTO ref_keys FROM ${KEYS_TABLE} k WHERE k.conrelid = p_references AND k.contype = 'p' ORDER BY k.oid DESC LIMIT 1;
         ELSE
           ref_keys := ARRAY(SELECT a.attnum FROM unnest(ref_cols) WITH ORDINALITY AS u(name, ord)
                               JOIN pg_attribute a ON a.attrelid = p_references AND a.attname = u.name ORDER BY u.ord);
         END IF;
       END IF;
       SELECT COALESCE(p_name, c.relname || CASE kind WHEN 'p' THEN '_pkey'
                                                    WHEN 'u' THEN '_' || array_to_string(cols, '_') || '_key'
                                                    ELSE '_' || array_to_string(cols, '_') || '_fkey' END), c.relname
         INTO key_name, table_name
         FROM pg_class c WHERE c.oid = p_table;
       IF kind = 'p' AND EXISTS (SELECT 1 FROM ${KEYS_TABLE} k WHERE k.conrelid = p_table AND k.contype = 'p') THEN
         RAISE EXCEPTION 'multiple primary keys for table "%" are not allowed', table_name USING ERRCODE = '42P16';
       END IF;
       IF EXISTS (SELECT 1 FROM ${KEYS_TABLE} k WHERE k.conrelid = p_table AND k.conname = key_name) THEN
         RAISE EXCEPTION 'constraint "%" for relation "%" already exists', key_name, table_name USING ERRCODE = '42710';
       END IF;
       INSERT INTO ${KEYS_TABLE} (conname, connamespace, contype, conrelid, confrelid, conkey, confkey)
       SELECT key_name, c.relnamespace, kind, p_table, COALESCE(p_references, 0), keys, ref_keys
         FROM pg_class c WHERE c.oid = p_table;
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.drop_key(p_table oid, p_name text, p_missing_ok boolean, p_display text)
     RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       DELETE FROM ${KEYS_TABLE} WHERE conrelid = p_table AND conname = p_name;
       IF NOT FOUND AND NOT p_missing_ok THEN
         RAISE EXCEPTION 'constraint "%" of relation "%" does not exist', p_name, p_display USING ERRCODE = '42704';
       END IF;
     END
     $$`,
  // Redshift refuses to drop a table another table's foreign key references,
  // as it refuses one a view reads: "Invalid operation: cannot drop table
  // feedback because other objects depend on it"
  // (https://docs.aws.amazon.com/redshift/latest/dg/r_DROP_TABLE.html).
  // With CASCADE Redshift would drop the foreign key; locally that is
  // refused too (nothing here sends DROP ... CASCADE).
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.refuse_referenced_drop() RETURNS event_trigger
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     DECLARE
       victim record;
     BEGIN
       FOR victim IN
         SELECT d.objid, d.object_identity
           FROM pg_event_trigger_dropped_objects() d
          WHERE d.object_type = 'table'
            AND EXISTS (SELECT 1 FROM ${KEYS_TABLE} k
                         WHERE k.confrelid = d.objid AND k.conrelid <> d.objid
                           AND k.conrelid NOT IN (SELECT o.objid FROM pg_event_trigger_dropped_objects() o WHERE o.object_type = 'table'))
       LOOP
         RAISE EXCEPTION 'cannot drop table % because other objects depend on it', victim.object_identity
           USING ERRCODE = '2BP01', HINT = 'a foreign key of another table references it (informational, as on Amazon Redshift)';
       END LOOP;
       DELETE FROM ${KEYS_TABLE} WHERE conrelid IN (SELECT o.objid FROM pg_event_trigger_dropped_objects() o WHERE o.object_type = 'table');
       DELETE FROM ${ATTRIBUTES_TABLE} WHERE relid IN (SELECT o.objid FROM pg_event_trigger_dropped_objects() o WHERE o.object_type = 'table');
       -- Dropping a table detaches its policies (t_rls_object_dependency).
       IF to_regclass('${SYSTEM_VIEWS_SCHEMA}.rls_attachments') IS NOT NULL THEN
         FOR victim IN
           SELECT d.object_identity, l.polname FROM pg_event_trigger_dropped_objects() d
             JOIN ${SYSTEM_VIEWS_SCHEMA}.rls_lookups l ON l.relid = d.objid WHERE d.object_type = 'table'
         LOOP
           RAISE EXCEPTION 'cannot drop table % because RLS policy % depends on it', victim.object_identity, victim.polname
             USING ERRCODE = '2BP01', HINT = 'drop the policy first (https://docs.aws.amazon.com/redshift/latest/dg/t_rls_object_dependency.html)';
         END LOOP;
         DELETE FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments WHERE relid IN (SELECT o.objid FROM pg_event_trigger_dropped_objects() o WHERE o.object_type = 'table');
         DELETE FROM ${SYSTEM_VIEWS_SCHEMA}.rls_datashares WHERE relid IN (SELECT o.objid FROM pg_event_trigger_dropped_objects() o WHERE o.object_type = 'table');
         DELETE FROM ${SYSTEM_VIEWS_SCHEMA}.masking_attachments WHERE relid IN (SELECT o.objid FROM pg_event_trigger_dropped_objects() o WHERE o.object_type = 'table');
       END IF;
     END
     $$`,
  `CREATE EVENT TRIGGER local_redshift_referenced_drop ON sql_drop EXECUTE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.refuse_referenced_drop()`,
  // Redshift refuses to rename a lookup table of an RLS policy (t_rls_object_dependency).
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.refuse_lookup_rename() RETURNS event_trigger
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     DECLARE
       renamed record;
     BEGIN
       IF to_regclass('${SYSTEM_VIEWS_SCHEMA}.rls_lookups') IS NULL THEN RETURN; END IF;
       FOR renamed IN
         SELECT l.relname, l.polname FROM ${SYSTEM_VIEWS_SCHEMA}.rls_lookups l JOIN pg_class c ON c.oid = l.relid WHERE c.relname <> l.relname
       LOOP
         RAISE EXCEPTION 'cannot rename table % because RLS policy % depends on it', renamed.relname, renamed.polname
           USING ERRCODE = '2BP01', HINT = 'drop the policy first (https://docs.aws.amazon.com/redshift/latest/dg/t_rls_object_dependency.html)';
       END LOOP;
     END
     $$`,
  `CREATE EVENT TRIGGER local_redshift_lookup_rename ON ddl_command_end WHEN TAG IN ('ALTER TABLE') EXECUTE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.refuse_lookup_rename()`,
  `GRANT SELECT ON ${KEYS_TABLE} TO PUBLIC`,
  ...STRTOL,
  ...FNV_HASH,
  `GRANT SELECT ON ${SYSTEM_VIEWS_SCHEMA}.pg_constraint TO PUBLIC`,
];

/**
 * Row-level security and masking policies, as functions security-policies.ts
 * calls: an RLS attachment is a PostgreSQL policy on the table FOR SELECT, its
 * rows keyed on the table's oid (they follow a rename, go with a drop); only
 * superusers and sys:secadmin manage policies. The rest, as Redshift has it:
 * docs/redshift.md#row-level-security-masking-and-column-privileges
 * https://docs.aws.amazon.com/redshift/latest/dg/r_ATTACH_RLS_POLICY.html
 */
const SECADMIN = 'sys:secadmin';
const SECURITY_POLICIES: string[] = [
  `DO $$ BEGIN
     IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${SECADMIN}') THEN CREATE ROLE "${SECADMIN}" NOLOGIN; END IF;
   EXCEPTION WHEN unique_violation OR duplicate_object THEN NULL; END $$`,
  `CREATE TABLE ${SYSTEM_VIEWS_SCHEMA}.rls_policies (polname text PRIMARY KEY, polalias text, polatts json NOT NULL, polqual text NOT NULL,
     polmodifiedby text NOT NULL, polmodifiedtime timestamp NOT NULL)`,
  // A policy's lookup tables by oid, with the name each had: a rename changes it, and is refused.
  `CREATE TABLE ${SYSTEM_VIEWS_SCHEMA}.rls_lookups (polname text NOT NULL, relid oid NOT NULL, relname name NOT NULL, PRIMARY KEY (polname, relid))`,
  `CREATE TABLE ${SYSTEM_VIEWS_SCHEMA}.rls_attachments (polname text NOT NULL, relid oid NOT NULL, grantor text NOT NULL, grantee text NOT NULL,
     granteekind text NOT NULL, PRIMARY KEY (polname, relid, grantee, granteekind))`,
  `CREATE TABLE ${SYSTEM_VIEWS_SCHEMA}.rls_datashares (relid oid PRIMARY KEY, is_on boolean NOT NULL)`,
  `CREATE TABLE ${SYSTEM_VIEWS_SCHEMA}.masking_policies (policy_name text PRIMARY KEY, input_columns json NOT NULL, policy_expression text NOT NULL,
     policy_modified_by text NOT NULL, policy_modified_time timestamp NOT NULL)`,
  `CREATE TABLE ${SYSTEM_VIEWS_SCHEMA}.masking_attachments (policy_name text NOT NULL, relid oid NOT NULL, grantor text NOT NULL, grantee text NOT NULL,
     grantee_type text NOT NULL, priority int4 NOT NULL, input_columns json NOT NULL, output_columns json NOT NULL,
     PRIMARY KEY (policy_name, relid, grantee, grantee_type))`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.require_secadmin(p_what text) RETURNS void
     LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS $$
     BEGIN
       IF NOT pg_has_role(session_user, '${SECADMIN}', 'MEMBER') THEN
         RAISE EXCEPTION 'permission denied: only superusers and users with the sys:secadmin role can %', p_what USING ERRCODE = '42501';
       END IF;
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.require_table(p_table oid) RETURNS void
     LANGUAGE plpgsql STABLE AS $$
     BEGIN
       IF p_table IS NULL THEN RAISE EXCEPTION 'relation does not exist' USING ERRCODE = '42P01'; END IF;
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.create_rls_policy(p_name text, p_columns json, p_alias text, p_qual text, p_lookups oid[]) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('create an RLS policy');
       IF EXISTS (SELECT 1 FROM ${SYSTEM_VIEWS_SCHEMA}.rls_policies WHERE polname = p_name) THEN
         RAISE EXCEPTION 'Policy "%" already exists', p_name USING ERRCODE = '42710';
       END IF;
       INSERT INTO ${SYSTEM_VIEWS_SCHEMA}.rls_policies VALUES (p_name, p_alias, p_columns, p_qual, session_user, (now() AT TIME ZONE 'UTC'));
       INSERT INTO ${SYSTEM_VIEWS_SCHEMA}.rls_lookups SELECT DISTINCT p_name, c.oid, c.relname FROM pg_class c WHERE c.oid = ANY (p_lookups);
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.alter_rls_policy(p_name text, p_qual text) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     DECLARE a record;
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('alter an RLS policy');
       UPDATE ${SYSTEM_VIEWS_SCHEMA}.rls_policies SET polqual = p_qual, polmodifiedby = session_user, polmodifiedtime = (now() AT TIME ZONE 'UTC') WHERE polname = p_name;
       IF NOT FOUND THEN RAISE EXCEPTION 'Policy "%" does not exist', p_name USING ERRCODE = '42704'; END IF;
       FOR a IN SELECT DISTINCT relid FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments WHERE polname = p_name LOOP
         EXECUTE format('ALTER POLICY %I ON %s USING (%s)', p_name, a.relid::regclass, ${SYSTEM_VIEWS_SCHEMA}.rls_qual(p_name));
       END LOOP;
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.drop_rls_policy(p_name text, p_if_exists boolean, p_cascade boolean) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     DECLARE a record;
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('drop an RLS policy');
       IF NOT EXISTS (SELECT 1 FROM ${SYSTEM_VIEWS_SCHEMA}.rls_policies WHERE polname = p_name) THEN
         IF p_if_exists THEN RETURN; END IF;
         RAISE EXCEPTION 'Policy "%" does not exist', p_name USING ERRCODE = '42704';
       END IF;
       IF EXISTS (SELECT 1 FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments WHERE polname = p_name) AND NOT p_cascade THEN
         RAISE EXCEPTION 'cannot drop policy "%" because it is attached to a relation', p_name
           USING ERRCODE = '2BP01', HINT = 'DETACH it first, or DROP RLS POLICY ... CASCADE (https://docs.aws.amazon.com/redshift/latest/dg/r_DROP_RLS_POLICY.html)';
       END IF;
       FOR a IN SELECT DISTINCT relid FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments WHERE polname = p_name LOOP
         EXECUTE format('DROP POLICY IF EXISTS %I ON %s', p_name, a.relid::regclass);
       END LOOP;
       DELETE FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments WHERE polname = p_name;
       DELETE FROM ${SYSTEM_VIEWS_SCHEMA}.rls_lookups WHERE polname = p_name;
       DELETE FROM ${SYSTEM_VIEWS_SCHEMA}.rls_policies WHERE polname = p_name;
     END
     $$`,
  // A policy's predicate as a PostgreSQL policy reads it: columns named through the WITH alias named bare.
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.rls_qual(p_name text) RETURNS text
     LANGUAGE sql STABLE SET search_path = pg_catalog AS $$
       SELECT CASE WHEN polalias IS NULL THEN polqual
                   ELSE regexp_replace(polqual, '(^|[^A-Za-z0-9_$."])(' || polalias || '|"' || replace(polalias, '"', '""') || '")\\s*\\.\\s*', '\\1', 'g') END
         FROM ${SYSTEM_VIEWS_SCHEMA}.rls_policies WHERE polname = p_name
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.rls_roles(p_name text, p_table oid) RETURNS text
     LANGUAGE sql STABLE SET search_path = pg_catalog AS $$
       SELECT string_agg(CASE WHEN granteekind = 'public' THEN 'PUBLIC' ELSE quote_ident(grantee) END, ', ' ORDER BY grantee)
         FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments WHERE polname = p_name AND relid = p_table
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.attach_rls_policy(p_name text, p_table oid, p_grantee text, p_kind text) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     DECLARE qual text;
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('attach an RLS policy');
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_table(p_table);
       qual := ${SYSTEM_VIEWS_SCHEMA}.rls_qual(p_name);
       IF qual IS NULL THEN RAISE EXCEPTION 'Policy "%" does not exist', p_name USING ERRCODE = '42704'; END IF;
       IF p_kind <> 'public' AND NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = p_grantee) THEN
         RAISE EXCEPTION '% "%" does not exist', initcap(p_kind), p_grantee USING ERRCODE = '42704';
       END IF;
       -- "You can't attach a RLS policy to superusers or to a sys:secadmin" (r_ATTACH_RLS_POLICY).
       IF p_kind <> 'public' AND pg_has_role(p_grantee, '${SECADMIN}', 'MEMBER') THEN
         RAISE EXCEPTION 'cannot attach RLS policy "%" to superuser or sys:secadmin "%"', p_name, p_grantee USING ERRCODE = '0LP01';
       END IF;
       IF EXISTS (SELECT 1 FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments WHERE polname = p_name AND relid = p_table) THEN
         INSERT INTO ${SYSTEM_VIEWS_SCHEMA}.rls_attachments VALUES (p_name, p_table, session_user, p_grantee, p_kind) ON CONFLICT DO NOTHING;
         EXECUTE format('ALTER POLICY %I ON %s TO %s', p_name, p_table::regclass, ${SYSTEM_VIEWS_SCHEMA}.rls_roles(p_name, p_table));
       ELSE
         INSERT INTO ${SYSTEM_VIEWS_SCHEMA}.rls_attachments VALUES (p_name, p_table, session_user, p_grantee, p_kind);
         EXECUTE format('CREATE POLICY %I ON %s AS PERMISSIVE FOR SELECT TO %s USING (%s)', p_name, p_table::regclass,
                        ${SYSTEM_VIEWS_SCHEMA}.rls_roles(p_name, p_table), qual);
       END IF;
       EXECUTE format('DROP POLICY IF EXISTS local_redshift_ignore_rls ON %s', p_table::regclass);
       EXECUTE format('CREATE POLICY local_redshift_ignore_rls ON %s AS PERMISSIVE FOR ALL TO "${SECADMIN}" USING (true)', p_table::regclass);
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.detach_rls_policy(p_name text, p_table oid, p_grantee text, p_kind text) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('detach an RLS policy');
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_table(p_table);
       DELETE FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments WHERE polname = p_name AND relid = p_table AND grantee = p_grantee AND granteekind = p_kind;
       IF NOT FOUND THEN
         RAISE EXCEPTION 'Policy "%" is not attached to % "%" on relation %', p_name, p_kind, p_grantee, p_table::regclass USING ERRCODE = '42704';
       END IF;
       IF EXISTS (SELECT 1 FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments WHERE polname = p_name AND relid = p_table) THEN
         EXECUTE format('ALTER POLICY %I ON %s TO %s', p_name, p_table::regclass, ${SYSTEM_VIEWS_SCHEMA}.rls_roles(p_name, p_table));
       ELSE
         EXECUTE format('DROP POLICY %I ON %s', p_name, p_table::regclass);
       END IF;
     END
     $$`,
  // ALTER TABLE ... ROW LEVEL SECURITY: a superuser, sys:secadmin or the table's owner.
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.set_row_level_security(p_table oid, p_on boolean, p_datashares boolean) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_table(p_table);
       IF NOT pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = p_table), 'MEMBER') THEN
         PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('turn row-level security on or off');
       END IF;
       IF p_datashares THEN
         INSERT INTO ${SYSTEM_VIEWS_SCHEMA}.rls_datashares VALUES (p_table, p_on) ON CONFLICT (relid) DO UPDATE SET is_on = p_on;
       ELSE
         -- FORCE: the owner is subject too, as on Redshift; INSERT is not (t_rls_usage).
         EXECUTE format('ALTER TABLE %s %s ROW LEVEL SECURITY', p_table::regclass, CASE WHEN p_on THEN 'ENABLE' ELSE 'DISABLE' END);
         EXECUTE format('ALTER TABLE %s %s ROW LEVEL SECURITY', p_table::regclass, CASE WHEN p_on THEN 'FORCE' ELSE 'NO FORCE' END);
         EXECUTE format('DROP POLICY IF EXISTS local_redshift_ignore_rls ON %s', p_table::regclass);
         EXECUTE format('CREATE POLICY local_redshift_ignore_rls ON %s AS PERMISSIVE FOR ALL TO "${SECADMIN}" USING (true)', p_table::regclass);
         EXECUTE format('DROP POLICY IF EXISTS local_redshift_rls_insert ON %s', p_table::regclass);
         EXECUTE format('CREATE POLICY local_redshift_rls_insert ON %s AS PERMISSIVE FOR INSERT TO PUBLIC WITH CHECK (true)', p_table::regclass);
       END IF;
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.create_masking_policy(p_name text, p_columns json, p_expression text) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('create a masking policy');
       IF EXISTS (SELECT 1 FROM ${SYSTEM_VIEWS_SCHEMA}.masking_policies WHERE policy_name = p_name) THEN
         RAISE EXCEPTION 'Masking policy "%" already exists', p_name USING ERRCODE = '42710';
       END IF;
       INSERT INTO ${SYSTEM_VIEWS_SCHEMA}.masking_policies VALUES (p_name, p_columns, p_expression, session_user, (now() AT TIME ZONE 'UTC'));
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.alter_masking_policy(p_name text, p_expression text) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('alter a masking policy');
       UPDATE ${SYSTEM_VIEWS_SCHEMA}.masking_policies SET policy_expression = p_expression, policy_modified_by = session_user,
              policy_modified_time = (now() AT TIME ZONE 'UTC') WHERE policy_name = p_name;
       IF NOT FOUND THEN RAISE EXCEPTION 'Masking policy "%" does not exist', p_name USING ERRCODE = '42704'; END IF;
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.drop_masking_policy(p_name text) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('drop a masking policy');
       IF EXISTS (SELECT 1 FROM ${SYSTEM_VIEWS_SCHEMA}.masking_attachments WHERE policy_name = p_name) THEN
         RAISE EXCEPTION 'cannot drop masking policy "%" because it is attached to a relation', p_name USING ERRCODE = '2BP01';
       END IF;
       DELETE FROM ${SYSTEM_VIEWS_SCHEMA}.masking_policies WHERE policy_name = p_name;
       IF NOT FOUND THEN RAISE EXCEPTION 'Masking policy "%" does not exist', p_name USING ERRCODE = '42704'; END IF;
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.attach_masking_policy(p_name text, p_table oid, p_output json, p_input json, p_grantee text, p_kind text, p_priority int4)
     RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('attach a masking policy');
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_table(p_table);
       IF NOT EXISTS (SELECT 1 FROM ${SYSTEM_VIEWS_SCHEMA}.masking_policies WHERE policy_name = p_name) THEN
         RAISE EXCEPTION 'Masking policy "%" does not exist', p_name USING ERRCODE = '42704';
       END IF;
       IF p_kind <> 'public' AND NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = p_grantee) THEN
         RAISE EXCEPTION '% "%" does not exist', initcap(p_kind), p_grantee USING ERRCODE = '42704';
       END IF;
       IF EXISTS (SELECT 1 FROM json_array_elements_text(p_input) c
                   WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = p_table AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped))
       THEN RAISE EXCEPTION 'column named in ATTACH MASKING POLICY does not exist in %', p_table::regclass USING ERRCODE = '42703'; END IF;
       INSERT INTO ${SYSTEM_VIEWS_SCHEMA}.masking_attachments VALUES (p_name, p_table, session_user, p_grantee, p_kind, p_priority, p_input, p_output);
     END
     $$`,
  `CREATE FUNCTION ${SYSTEM_VIEWS_SCHEMA}.detach_masking_policy(p_name text, p_table oid, p_output json, p_grantee text, p_kind text) RETURNS void
     LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
     BEGIN
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_secadmin('detach a masking policy');
       PERFORM ${SYSTEM_VIEWS_SCHEMA}.require_table(p_table);
       DELETE FROM ${SYSTEM_VIEWS_SCHEMA}.masking_attachments
        WHERE policy_name = p_name AND relid = p_table AND grantee = p_grantee AND grantee_type = p_kind AND output_columns::text = p_output::text;
       IF NOT FOUND THEN RAISE EXCEPTION 'Masking policy "%" is not attached there', p_name USING ERRCODE = '42704'; END IF;
     END
     $$`,
];

const SECURITY_VIEWS: Record<string, string> = {
  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_RLS_POLICY.html
  // Visible to all users: superusers and sys:secadmin see every row, others the policies they last changed.
  svv_rls_policy: `
    SELECT current_database()::text AS poldb, p.polname::text AS polname, p.polalias::text AS polalias,
           p.polatts::text AS polatts, p.polqual::text AS polqual, true AS polenabled,
           p.polmodifiedby::text AS polmodifiedby, p.polmodifiedtime AS polmodifiedtime
      FROM ${SYSTEM_VIEWS_SCHEMA}.rls_policies p
     WHERE pg_has_role(current_user, '${SECADMIN}', 'USAGE') OR p.polmodifiedby = current_user`,
  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_RLS_ATTACHED_POLICY.html
  svv_rls_attached_policy: `
    SELECT n.nspname::text AS relschema, c.relname::text AS relname,
           (CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' ELSE 'table' END)::text AS relkind,
           a.polname::text AS polname, a.grantor::text AS grantor, a.grantee::text AS grantee, a.granteekind::text AS granteekind,
           true AS is_pol_on, c.relrowsecurity AS is_rls_on, 'and'::char(3) AS rls_conjunction_type
      FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments a
      JOIN pg_class c ON c.oid = a.relid
      JOIN pg_namespace n ON n.oid = c.relnamespace`,
  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_RLS_RELATION.html
  // Tables with RLS on, or with a policy attached, or RLS on for datashares.
  // Visible to all users: superusers and sys:secadmin see every row, others their own tables'.
  svv_rls_relation: `
    SELECT current_database()::text AS datname, n.nspname::text AS relschema, c.relname::text AS relname,
           (CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' ELSE 'table' END)::text AS relkind,
           c.relrowsecurity AS is_rls_on, COALESCE(d.is_on, false) AS is_rls_datashare_on,
           'and'::char(3) AS rls_conjunction_type, 'and'::char(3) AS rls_datashare_conjunction_type
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN ${SYSTEM_VIEWS_SCHEMA}.rls_datashares d ON d.relid = c.oid
     WHERE c.relkind IN ('r', 'p', 'v', 'm')
       AND (c.relrowsecurity OR d.relid IS NOT NULL OR EXISTS (SELECT 1 FROM ${SYSTEM_VIEWS_SCHEMA}.rls_attachments a WHERE a.relid = c.oid))
       AND (pg_has_role(current_user, '${SECADMIN}', 'USAGE') OR pg_has_role(current_user, c.relowner, 'USAGE'))`,
  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_MASKING_POLICY.html
  svv_masking_policy: `
    SELECT current_database()::text AS policy_database, p.policy_name::text AS policy_name, p.input_columns::text AS input_columns,
           p.policy_expression::text AS policy_expression, p.policy_modified_by::text AS policy_modified_by,
           p.policy_modified_time AS policy_modified_time
      FROM ${SYSTEM_VIEWS_SCHEMA}.masking_policies p`,
  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_ATTACHED_MASKING_POLICY.html
  svv_attached_masking_policy: `
    SELECT a.policy_name::text AS policy_name, n.nspname::text AS schema_name,
           c.relname::text AS table_name, (CASE c.relkind WHEN 'v' THEN 'view' ELSE 'table' END)::text AS table_type,
           a.grantor::text AS grantor, a.grantee::text AS grantee, a.grantee_type::text AS grantee_type, a.priority::int4 AS priority,
           a.input_columns::text AS input_columns, a.output_columns::text AS output_columns,
           false AS is_masking_datashare_on
      FROM ${SYSTEM_VIEWS_SCHEMA}.masking_attachments a
      JOIN pg_class c ON c.oid = a.relid
      JOIN pg_namespace n ON n.oid = c.relnamespace`,
  // https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_COLUMN_PRIVILEGES.html
  // Column grants (pg_attribute.attacl), the grantee classified as in svv_relation_privileges.
  svv_column_privileges: `
    SELECT n.nspname::text AS namespace_name,
           c.relname::text AS relation_name,
           att.attname::text AS column_name,
           a.privilege_type::text AS privilege_type,
           a.grantee::int4 AS identity_id,
           CASE WHEN a.grantee = 0 THEN 'public' ELSE r.rolname::text END AS identity_name,
           CASE WHEN a.grantee = 0 THEN 'public' WHEN r.rolcanlogin THEN 'user' ELSE 'role' END AS identity_type
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_attribute att ON att.attrelid = c.oid AND att.attnum > 0 AND NOT att.attisdropped AND att.attacl IS NOT NULL
     CROSS JOIN LATERAL aclexplode(att.attacl) a
      LEFT JOIN pg_roles r ON r.oid = a.grantee
     WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')
       AND n.nspname NOT IN ('pg_catalog', 'information_schema', ${STAND_INS})
       AND a.privilege_type IN ('SELECT', 'UPDATE')
       AND (${SEES_ALL} OR a.grantee = 0 OR pg_has_role(current_user, a.grantee, 'USAGE'))`,
};

/**
 * information_schema.columns as Redshift shows an identity column: its
 * column_default reads `"identity"(<table oid>, <column index>, '<seed>,<step>'::text)`
 * (`default_identity(...)` BY DEFAULT) where PostgreSQL gives NULL. Queries name
 * the view qualified, so no search_path can stand in: PostgreSQL's view is renamed
 * COLUMNS_AS_POSTGRES (once) and a view over it takes its name. The column index
 * is the position less one, unverified on a cluster: docs/decisions/identity-columns.md
 */
const COLUMNS_AS_POSTGRES = 'columns_postgres';
const INFORMATION_SCHEMA_COLUMNS = `DO $$
  DECLARE
    columns text;
  BEGIN
    IF to_regclass('information_schema.${COLUMNS_AS_POSTGRES}') IS NULL THEN
      ALTER VIEW information_schema.columns RENAME TO ${COLUMNS_AS_POSTGRES};
    END IF;
    SELECT string_agg(CASE WHEN attname = 'column_default' THEN
             $e$CAST(CASE WHEN is_identity = 'YES'
                          THEN (CASE WHEN identity_generation = 'ALWAYS' THEN '"identity"(' ELSE 'default_identity(' END)
                               || CAST(CAST(to_regclass(quote_ident(table_schema) || '.' || quote_ident(table_name)) AS oid) AS text)
                               || ', ' || CAST(ordinal_position - 1 AS text) || ', ''' || identity_start || ',' || identity_increment || '''::text)'
                          ELSE column_default END AS information_schema.character_data) AS column_default$e$
             ELSE quote_ident(attname) END, ', ' ORDER BY attnum)
      INTO columns
      FROM pg_attribute WHERE attrelid = CAST('information_schema.${COLUMNS_AS_POSTGRES}' AS regclass) AND attnum > 0 AND NOT attisdropped;
    EXECUTE 'CREATE OR REPLACE VIEW information_schema.columns AS SELECT ' || columns || ' FROM information_schema.${COLUMNS_AS_POSTGRES}';
    GRANT SELECT ON information_schema.columns TO PUBLIC;
  END
$$`;

/** Views any user may read (each filters its rows); the others only superusers, unless granted. */
const PUBLIC_VIEWS = ['svv_relation_privileges', 'svv_transactions', 'svv_redshift_columns', 'sys_query_history'];
const PUBLIC_PROVISIONED_VIEWS = ['stv_recents'];

/**
 * Installs the views in the connected database unless they are there in
 * this version. `client` must be a superuser's; a concurrent installer waits.
 */
export async function installSystemViews(client: pg.ClientBase): Promise<void> {
  const current = async () =>
    (await client.query(`SELECT obj_description(oid, 'pg_namespace') AS version FROM pg_namespace WHERE nspname = $1`, [SYSTEM_VIEWS_SCHEMA])).rows[0]
      ?.version === VERSION;
  if (await current()) return;
  await client.query('BEGIN');
  try {
    // One installer at a time per database; the lock ends with the transaction.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [SYSTEM_VIEWS_SCHEMA]);
    if (!(await current())) {
      await client.query('DROP EVENT TRIGGER IF EXISTS local_redshift_referenced_drop');
      await client.query('DROP EVENT TRIGGER IF EXISTS local_redshift_lookup_rename');
      await client.query(`DROP SCHEMA IF EXISTS ${PROVISIONED_VIEWS_SCHEMA} CASCADE`);
      await client.query(`DROP SCHEMA IF EXISTS ${SYSTEM_VIEWS_SCHEMA} CASCADE`);
      await client.query(`CREATE SCHEMA ${SYSTEM_VIEWS_SCHEMA}`);
      await client.query(`CREATE SCHEMA ${PROVISIONED_VIEWS_SCHEMA}`);
      for (const sql of TABLE_ATTRIBUTES) await client.query(sql);
      for (const [name, sql] of Object.entries(VIEWS)) await client.query(`CREATE VIEW ${SYSTEM_VIEWS_SCHEMA}.${name} AS ${sql}`);
      await client.query(`GRANT USAGE ON SCHEMA ${SYSTEM_VIEWS_SCHEMA} TO PUBLIC`);
      for (const name of PUBLIC_VIEWS) await client.query(`GRANT SELECT ON ${SYSTEM_VIEWS_SCHEMA}.${name} TO PUBLIC`);
      for (const [name, sql] of Object.entries(PROVISIONED_VIEWS)) await client.query(`CREATE VIEW ${PROVISIONED_VIEWS_SCHEMA}.${name} AS ${sql}`);
      await client.query(`GRANT USAGE ON SCHEMA ${PROVISIONED_VIEWS_SCHEMA} TO PUBLIC`);
      for (const name of PUBLIC_PROVISIONED_VIEWS) await client.query(`GRANT SELECT ON ${PROVISIONED_VIEWS_SCHEMA}.${name} TO PUBLIC`);
      for (const sql of KEY_CATALOG) await client.query(sql);
      await client.query(INFORMATION_SCHEMA_COLUMNS);
      for (const sql of ATTRIBUTE_FUNCTIONS) await client.query(sql);
      for (const sql of SECURITY_POLICIES) await client.query(sql);
      for (const [name, sql] of Object.entries(SECURITY_VIEWS)) await client.query(`CREATE VIEW ${SYSTEM_VIEWS_SCHEMA}.${name} AS ${sql}`);
      // The RLS and masking views: superusers and sys:secadmin (r_SVV_RLS_POLICY, r_SVV_MASKING_POLICY); svv_rls_policy, svv_rls_relation and svv_column_privileges: everyone.
      for (const name of Object.keys(SECURITY_VIEWS)) {
        const everyone = ['svv_column_privileges', 'svv_rls_relation', 'svv_rls_policy'].includes(name);
        await client.query(`GRANT SELECT ON ${SYSTEM_VIEWS_SCHEMA}.${name} TO ${everyone ? 'PUBLIC' : `"${SECADMIN}"`}`);
      }
      await client.query(`COMMENT ON SCHEMA ${SYSTEM_VIEWS_SCHEMA} IS '${VERSION}'`);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
