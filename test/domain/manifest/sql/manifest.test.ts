import { describe, expect, it } from 'vitest';
import {
  CATALOG_CHANGED,
  CHUNK_STATE_QUERY,
  MANIFEST_VERSION,
  manifestDdl,
  manifestInstall,
  PUBLISH_GUARD,
  publishGuardRefusal,
} from '../../../../domain/manifest/sql/manifest.ts';
import { MAX_BATCH_STATEMENTS, MAX_SQL_BYTES } from '../../../../domain/sql/statement.ts';
import { NOW } from '../../sql/support.ts';

describe('manifestDdl', () => {
  it("passes RAISE only variables after the format, as Redshift's PL/pgSQL requires", () => {
    const raises = manifestDdl(NOW).flatMap((sql) => [...sql.matchAll(/RAISE EXCEPTION '[^']*'((?:, *[^;]+)?);/g)].map((m) => m[1]!));

    expect(raises.length).toBeGreaterThanOrEqual(2);
    for (const args of raises) {
      for (const arg of args
        .split(',')
        .map((a) => a.trim())
        .filter(Boolean))
        expect(arg).toMatch(/^[a-z_][a-z0-9_]*$/);
    }
  });

  it('is safe to run again: every statement creates if not exists, replaces, adds a column only if missing, or inserts its version once', () => {
    for (const sql of manifestDdl(NOW)) {
      expect(sql).toMatch(
        /^(CREATE (SCHEMA IF NOT EXISTS|TABLE IF NOT EXISTS|OR REPLACE PROCEDURE|OR REPLACE VIEW) |CALL "atomic_publish".(add_column_if_missing|create_view_if_missing)\(|INSERT INTO "atomic_publish".(manifest_version|circuit_breaker) .* WHERE NOT EXISTS|UPDATE "atomic_publish".publications SET event_sent_at = .* WHERE event_sent_at IS NULL AND NOT EXISTS \(SELECT 1 FROM "atomic_publish".manifest_version WHERE version >= 11\)$)/s,
      );
    }
    const adder = manifestDdl(NOW).find((sql) => sql.includes('PROCEDURE "atomic_publish".add_column_if_missing('))!;
    expect(adder).toMatch(/IF present = 0 THEN\s+EXECUTE 'ALTER TABLE '/);
  });

  it('adds the rollback columns of version 5 to the publications, after the procedure that adds them exists', () => {
    const ddl = manifestDdl(NOW);
    const procedure = ddl.findIndex((sql) => sql.includes('PROCEDURE "atomic_publish".add_column_if_missing('));
    const calls = ddl.flatMap((sql, i) => (sql.startsWith('CALL "atomic_publish".add_column_if_missing') ? [[i, sql] as const] : []));
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(5);
    // Versions 5 to 11 in order.
    expect(calls.map(([, sql]) => sql)).toEqual([
      `CALL "atomic_publish".add_column_if_missing('publications', 'rollback_of', 'int')`,
      `CALL "atomic_publish".add_column_if_missing('publications', 'restored_at', 'timestamp')`,
      `CALL "atomic_publish".add_column_if_missing('publications', 'publish_mode', 'varchar(32)')`,
      `CALL "atomic_publish".add_column_if_missing('publications', 'interval_start', 'timestamp')`,
      `CALL "atomic_publish".add_column_if_missing('publications', 'interval_end', 'timestamp')`,
      `CALL "atomic_publish".add_column_if_missing('check_results', 'severity', 'varchar(8)')`,
      `CALL "atomic_publish".add_column_if_missing('publications', 'event_sent_at', 'timestamp')`,
      `CALL "atomic_publish".add_column_if_missing('publications', 'restatement', 'int')`,
      `CALL "atomic_publish".add_column_if_missing('batches', 'restatement', 'int')`,
      `CALL "atomic_publish".add_column_if_missing('publications', 'live_columns', 'varchar(65535)')`,
      `CALL "atomic_publish".add_column_if_missing('publications', 'live_fingerprint', 'varchar(128)')`,
      `CALL "atomic_publish".add_column_if_missing('publications', 'live_rows_before', 'timestamp')`,
      `CALL "atomic_publish".add_column_if_missing('batches', 'purpose', 'varchar(16)')`,
    ]);
    for (const [i] of calls) expect(i).toBeGreaterThan(procedure);
  });

  it('adds in version 7 the circuit breaker: one table, its one row inserted only when missing, before the version row', () => {
    const ddl = manifestDdl(NOW);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(7);
    const table = ddl.findIndex((sql) => sql.startsWith('CREATE TABLE IF NOT EXISTS "atomic_publish".circuit_breaker ('));
    const row = ddl.findIndex((sql) => sql.startsWith('INSERT INTO "atomic_publish".circuit_breaker'));
    expect(table).toBeGreaterThan(0);
    expect(row).toBeGreaterThan(table);
    expect(ddl[row]).toContain('WHERE NOT EXISTS (SELECT 1 FROM "atomic_publish".circuit_breaker)');
    expect(ddl.at(-1)).toContain('INSERT INTO "atomic_publish".manifest_version');
  });

  it('adds in version 8 the windows of a long batch, before the version row', () => {
    const ddl = manifestDdl(NOW);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(8);
    const windows = ddl.findIndex((sql) => sql.startsWith('CREATE TABLE IF NOT EXISTS "atomic_publish".batch_windows ('));
    expect(windows).toBeGreaterThan(ddl.findIndex((sql) => sql.startsWith('CREATE TABLE IF NOT EXISTS "atomic_publish".circuit_breaker (')));
    expect(ddl[windows]).toContain('PRIMARY KEY (batch_id, window_index)');
    expect(ddl.at(-1)).toContain('INSERT INTO "atomic_publish".manifest_version');
  });

  it('adds in version 9 the publish mode and interval of each publication, and refuses older data only to a swap', () => {
    const ddl = manifestDdl(NOW);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(9);
    const windows = ddl.findIndex((sql) => sql.startsWith('CREATE TABLE IF NOT EXISTS "atomic_publish".batch_windows ('));
    const mode = ddl.findIndex((sql) => sql.includes("'publications', 'publish_mode'"));
    expect(mode).toBeGreaterThan(windows);
    const guard = ddl.find((sql) => sql.includes('PROCEDURE "atomic_publish".assert_publishable('))!;
    expect(guard).toContain("IF batch_mode = 'swap' AND latest_end IS NOT NULL AND latest_end > batch_end THEN");
  });

  it('adds in version 10 the severity of each check result, after the table it extends', () => {
    const ddl = manifestDdl(NOW);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(10);
    const table = ddl.findIndex((sql) => sql.startsWith('CREATE TABLE IF NOT EXISTS "atomic_publish".check_results ('));
    const severity = ddl.findIndex((sql) => sql.includes("'check_results', 'severity', 'varchar(8)'"));
    expect(severity).toBeGreaterThan(table);
  });

  it('adds in version 11 what each publication recorded of the live table, and the procedure recording it on the newest publication', () => {
    const ddl = manifestDdl(NOW);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(11);
    const added = ['live_columns', 'live_fingerprint', 'live_rows_before'].map((column) => ddl.findIndex((sql) => sql.includes(`'publications', '${column}'`)));
    expect(Math.min(...added)).toBeGreaterThan(ddl.findIndex((sql) => sql.includes("'check_results', 'severity'")));
    const procedure = ddl.find((sql) => sql.includes('PROCEDURE "atomic_publish".record_live_fingerprint('))!;
    expect(procedure).toContain('IF cols = p_columns THEN');
    expect(procedure).toContain('UPDATE "atomic_publish".publications SET live_columns = cols, live_fingerprint = fp, live_rows_before = p_rows_before');
    expect(ddl.indexOf(procedure)).toBeGreaterThan(Math.max(...added));
    expect(ddl.indexOf(procedure)).toBeLessThan(ddl.findIndex((sql) => sql.includes('manifest_version (version, installed_at)')));
  });

  it('adds in version 11 the purpose of each batch (a check or a publishing batch), after the table it extends', () => {
    const ddl = manifestDdl(NOW);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(11);
    const table = ddl.findIndex((sql) => sql.startsWith('CREATE TABLE IF NOT EXISTS "atomic_publish".batches ('));
    const purpose = ddl.findIndex((sql) => sql.includes("'batches', 'purpose', 'varchar(16)'"));
    expect(table).toBeGreaterThanOrEqual(0);
    expect(purpose).toBeGreaterThan(table);
  });

  it('adds in version 10 the re-check of the source inside the publish transaction, raising a refusal that names the chunk', () => {
    const ddl = manifestDdl(NOW);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(10);
    const recheck = ddl.find((sql) => sql.includes('PROCEDURE "atomic_publish".assert_source_unchanged('))!;
    expect(recheck).toContain('EXECUTE p_query INTO fp;');
    expect(recheck).toContain(
      "RAISE EXCEPTION 'source changed: % holds rows:checksum % in the source now, but % in staging, which Reconcile checked against the source', p_what, fp, p_expected;",
    );
    expect(ddl.findIndex((sql) => sql === recheck)).toBeLessThan(ddl.findIndex((sql) => sql.includes('manifest_version (version, installed_at)')));
  });

  it('adds in version 11 the record of each publication event sent, marking those of earlier publications sent before the version is recorded', () => {
    const ddl = manifestDdl(NOW);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(11);
    const column = ddl.findIndex((sql) => sql.includes("'publications', 'event_sent_at', 'timestamp'"));
    const marked = ddl.findIndex((sql) => sql.startsWith('UPDATE "atomic_publish".publications SET event_sent_at'));
    expect(ddl[marked]).toContain(`CAST('2026-03-15 10:20:30.456' AS timestamp)`);
    expect(marked).toBeGreaterThan(column);
    expect(marked).toBeLessThan(ddl.findIndex((sql) => sql.includes('manifest_version (version, installed_at)')));
  });

  it('adds in version 6 the record of chunk loads, and the chunk state every reader reads, created only when missing', () => {
    const ddl = manifestDdl(NOW);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(6);
    const loads = ddl.findIndex((sql) => sql.startsWith('CREATE TABLE IF NOT EXISTS "atomic_publish".chunk_loads ('));
    const creator = ddl.findIndex((sql) => sql.includes('PROCEDURE "atomic_publish".create_view_if_missing('));
    const view = ddl.findIndex((sql) => sql.startsWith(`CALL "atomic_publish".create_view_if_missing('chunk_state', `));
    expect(loads).toBeGreaterThan(ddl.findIndex((sql) => sql.startsWith('CREATE TABLE IF NOT EXISTS "atomic_publish".chunks (')));
    expect(view).toBeGreaterThan(Math.max(loads, creator));
    expect(ddl[creator]).toMatch(/IF present = 0 THEN\s+EXECUTE 'CREATE VIEW '/);
    // A chunk is DONE when a load of its current generation committed.
    expect(CHUNK_STATE_QUERY).toContain("CASE WHEN l.loads IS NOT NULL THEN 'DONE' ELSE c.status END AS status");
    expect(CHUNK_STATE_QUERY).toContain('AND l.generation = c.attempt');
    expect(ddl.some((sql) => /^\s*CREATE OR REPLACE VIEW/.test(sql))).toBe(false);
  });

  it('records the manifest version it installs, which Plan compares before installing again', () => {
    expect(manifestDdl(NOW).at(-1)).toContain(`SELECT ${MANIFEST_VERSION}, CAST('2026-03-15 10:20:30.456' AS timestamp)`);
  });

  it('is installed in transactions the Data API takes, in order, the version recorded by the last', () => {
    const parts = manifestInstall(NOW);

    expect(parts.flat()).toEqual(manifestDdl(NOW));
    for (const part of parts) {
      expect(part.length).toBeGreaterThan(0);
      expect(part.length).toBeLessThanOrEqual(MAX_BATCH_STATEMENTS);
      expect(Buffer.byteLength(part.join(''))).toBeLessThanOrEqual(MAX_SQL_BYTES);
    }
    expect(parts.flat().filter((sql) => sql.includes('manifest_version (version'))).toEqual([parts.at(-1)!.at(-1)]);
  });

  it('records what a chunk load inserted with the INSERT itself: ROW_COUNT of its EXECUTE, no second read of the source', () => {
    const procedure = manifestDdl(NOW).find((sql) => sql.includes('PROCEDURE "atomic_publish".load_chunk('))!;

    expect(procedure).toMatch(/EXECUTE p_insert;\s+GET DIAGNOSTICS n := ROW_COUNT;\s+INSERT INTO "atomic_publish"\.chunk_loads/);
    expect(MANIFEST_VERSION).toBeGreaterThanOrEqual(14);
  });

  it('guards the publish against an older batch, a changed staging table and a moved base, all by raising', () => {
    const procedure = manifestDdl(NOW).find((sql) => sql.includes('PROCEDURE'))!;
    expect(procedure).toContain('latest_end > batch_end');
    expect(procedure).toContain('staged_rows <> checked_rows');
    expect(procedure).toContain('latest <> p_base');
  });
});

describe('the publish guard prefix', () => {
  it('starts every refusal the guard procedure raises', () => {
    const guard = manifestDdl(NOW).find((sql) => sql.includes('assert_publishable('))!;
    const formats = [...guard.matchAll(/RAISE EXCEPTION '([^']*)'/g)].map((m) => m[1]!);

    expect(formats).toHaveLength(4);
    for (const format of formats) expect(format.startsWith(`${PUBLISH_GUARD}: `)).toBe(true);
  });

  it('is not the prefix of the catalog check, which Publish retries rather than reports as superseded', () => {
    const check = manifestDdl(NOW).find((sql) => sql.includes('assert_catalog_unchanged('))!;
    const formats = [...check.matchAll(/RAISE EXCEPTION '([^']*)'/g)].map((m) => m[1]!);

    expect(formats).toHaveLength(1);
    expect(formats[0]!.startsWith(`${CATALOG_CHANGED}: `)).toBe(true);
    expect(publishGuardRefusal(`ERROR: ${formats[0]!}`)).toBeUndefined();
  });

  it("finds the guard's refusal behind the database's own words", () => {
    const message =
      'atomic-publish:orders:publish:swap:b1 failed: ERROR: publish guard: pipeline orders is at publication 2 but batch b1 was planned on publication 1';

    expect(publishGuardRefusal(message)).toBe('publish guard: pipeline orders is at publication 2 but batch b1 was planned on publication 1');
  });

  it('finds no refusal in a swap that failed for another reason', () => {
    expect(publishGuardRefusal('atomic-publish:orders:publish:swap:b1 failed: ERROR: relation "analytics.orders" does not exist')).toBeUndefined();
  });
});
