// The gate's section of the pipeline spec's schema (`checks`): declared
// checks, measures, drift, dimensions and quarantine, each field with the
// message its author reads. domain/spec.ts puts it in the pipeline's schema.
import { z } from 'zod';
import { identifierProblem, qualifiedName, sqlLiteral } from '../identifiers.ts';
import { checkSqlProblem } from '../redshift-sql/source-sql.ts';
import { checked, identifier, integer, normalizeSourceSql, section, withDefault } from '../schema-fields.ts';
import { clip, echo } from '../text.ts';
import {
  acceptedValuesName,
  CHECK_ACTIONS,
  DEFAULT_DRIFT_MIN_ROWS,
  type DriftChecks,
  declaredCheckNames,
  MAX_INCREASE_PCT,
  MAX_TOLERANCE,
  type MeasureTolerance,
  NULL_RATE_DRIFT,
  notNullName,
  patternName,
  ROW_COUNT_DRIFT,
  referencesName,
  SEVERITIES,
  type Severity,
  STAGING_PLACEHOLDER,
  sqlCheckName,
} from './config.ts';

/**
 * A declared check: its own fields, then `severity` and `tolerance`,
 * whose messages name the check (`name`).
 */
function judged<Shape extends z.core.$ZodLooseShape>(shape: Shape, name: (check: z.output<z.ZodObject<Shape>>) => string, quarantinable = false) {
  return z
    .object(
      { ...shape, severity: z.unknown().optional(), tolerance: z.unknown().optional(), ...(quarantinable ? { action: z.unknown().optional() } : {}) },
      { error: 'must be an object' },
    )
    .transform((raw, ctx) => {
      const { action, ...check } = raw as unknown as z.output<z.ZodObject<Shape>> & { action?: unknown };
      const label = `of check ${name(check as z.output<z.ZodObject<Shape>>)}`;
      const given = raw as { severity?: unknown; tolerance?: unknown };
      if (action !== undefined && !(CHECK_ACTIONS as readonly unknown[]).includes(action)) {
        ctx.addIssue({ code: 'custom', path: ['action'], message: `${label}: ${echo(action)} must be one of ${CHECK_ACTIONS.join(', ')}` });
      }
      const severity = given.severity ?? 'block';
      const tolerance = given.tolerance ?? 0;
      if (!(SEVERITIES as readonly unknown[]).includes(severity)) {
        ctx.addIssue({ code: 'custom', path: ['severity'], message: `${label}: ${echo(severity)} must be one of ${SEVERITIES.join(', ')}` });
      }
      if (typeof tolerance !== 'number' || !Number.isInteger(tolerance) || tolerance < 0 || tolerance > MAX_TOLERANCE) {
        ctx.addIssue({
          code: 'custom',
          path: ['tolerance'],
          message: `${label}: ${echo(tolerance)} must be an integer from 0 to ${MAX_TOLERANCE} (offending rows allowed)`,
        });
      }
      // The action is kept only when it quarantines: the spec hashes of checks without it stay.
      return {
        ...(check as z.output<z.ZodObject<Shape>>),
        severity: severity as Severity,
        tolerance: tolerance as number,
        ...(action === 'quarantine' ? { action: 'quarantine' as const } : {}),
      };
    });
}

/** Accepted values: strings or finite numbers, each one a SQL literal can carry. */
const acceptedValuesSchema = z
  .array(z.union([z.string(), z.number().finite()]), { error: 'must list the accepted values (strings or numbers)' })
  .min(1, { error: 'must list at least one value' })
  .superRefine((values, ctx) => {
    for (const value of values) {
      try {
        sqlLiteral(value);
      } catch {
        ctx.addIssue({ code: 'custom', message: `cannot hold ${echo(value)} (no backslash or control character)` });
      }
    }
  });

/**
 * What is wrong with a custom check's SQL: the placeholder replaced as
 * Reconcile replaces it, then checked as one read-only SELECT that
 * Redshift runs inside `(<sql>) AS src`.
 */
function customSqlProblem(sql: string): string | undefined {
  const probe = sql.replaceAll(STAGING_PLACEHOLDER, qualifiedName('target_schema', 'staging_table'));
  return checkSqlProblem(probe, [`SELECT COUNT(*) AS ap_rows FROM (${probe}\n) AS src`, `SELECT * FROM (${probe}\n) AS src LIMIT 5`]);
}

/** Most `checks.dimensions` a pipeline declares. */
export const MAX_DIMENSIONS = 3;

/** A POSIX regular expression, sent as a parameter: any text a varchar holds, but no control character. */
const regexSchema = z
  .string({ error: 'must be a POSIX regular expression (a string)' })
  .min(1, { error: 'must be a POSIX regular expression (a string)' })
  .max(1000, { error: 'must be at most 1000 characters' })
  .refine((regex) => !/[\u0000-\u001f]/.test(regex), { error: 'must hold no control character' });

/** The tolerance of quarantined rows: at least one limit; each given must hold. */
const quarantineSchema = z
  .object(
    {
      maxRows: z.preprocess((value) => value ?? undefined, integer(0, MAX_TOLERANCE, ' (quarantined rows the batch may still publish with)').optional()),
      maxPct: z.preprocess(
        (value) => value ?? undefined,
        z
          .number({ error: 'must be a number from 0 to 100 (percent of the source rows)' })
          .refine((n) => Number.isFinite(n) && n >= 0 && n <= 100, { error: 'must be a number from 0 to 100 (percent of the source rows)' })
          .optional(),
      ),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `has unknown field(s) ${issue.keys.join(', ')}: give maxRows or maxPct`
          : 'must be an object with maxRows or maxPct',
    },
  )
  .strict()
  .refine((q) => q.maxRows !== undefined || q.maxPct !== undefined, { error: 'must give maxRows or maxPct (or both): how many rows may be quarantined' })
  .transform((q) => ({ ...(q.maxRows === undefined ? {} : { maxRows: q.maxRows }), ...(q.maxPct === undefined ? {} : { maxPct: q.maxPct }) }));
/** A decimal an absolute tolerance may be: digits, a point, digits. */
const DECIMAL_TEXT = /^\d{1,38}(\.\d{1,38})?$/;

/** A measure's tolerance: an absolute difference (a decimal) or a relative one (0 to 1), at least one. */
const measureToleranceSchema = z
  .strictObject(
    { absolute: z.unknown().optional(), relative: z.unknown().optional() },
    { error: 'must be an object naming absolute and/or relative, nothing else' },
  )
  .transform((raw, ctx): MeasureTolerance => {
    const absolute = typeof raw.absolute === 'number' && Number.isFinite(raw.absolute) && raw.absolute >= 0 ? String(raw.absolute) : raw.absolute;
    if (absolute !== undefined && (typeof absolute !== 'string' || !DECIMAL_TEXT.test(absolute))) {
      ctx.addIssue({ code: 'custom', path: ['absolute'], message: `${echo(raw.absolute)} must be a difference of at least 0, as a decimal (e.g. "0.01")` });
    }
    const { relative } = raw;
    if (relative !== undefined && (typeof relative !== 'number' || !(relative >= 0 && relative <= 1))) {
      ctx.addIssue({ code: 'custom', path: ['relative'], message: `${echo(relative)} must be a number from 0 to 1 (a fraction of the source's sum)` });
    }
    if (absolute === undefined && relative === undefined) ctx.addIssue({ code: 'custom', message: 'must declare absolute, relative or both' });
    return { ...(absolute === undefined ? {} : { absolute: absolute as string }), ...(relative === undefined ? {} : { relative: relative as number }) };
  });

const measureObjectSchema = z.object(
  { column: identifier, tolerance: z.preprocess((v) => v ?? undefined, measureToleranceSchema.optional()) },
  { error: 'must be a column name or { column, tolerance }' },
);

/** A measure: a column name (reported as the entry itself when wrong), or `{ column, tolerance }`. */
const measureSchema = z.unknown().transform((value, ctx): z.output<typeof measureObjectSchema> => {
  if (typeof value === 'string') {
    const problem = identifierProblem(value);
    if (problem === undefined) return { column: value };
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  }
  const parsed = measureObjectSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', path: issue.path as (string | number)[], message: issue.message });
  return z.NEVER;
});

/** A percentage or a number of points from `min` to `max`. */
function share(min: number, max: number, what: string) {
  const message = `must be a number from ${min} to ${max} (${what})`;
  return z.number({ error: message }).refine((n) => Number.isFinite(n) && n >= min && n <= max, { error: message });
}

const severitySchema = (check: string) =>
  withDefault(
    checked<Severity>((value) =>
      (SEVERITIES as readonly unknown[]).includes(value) ? undefined : `of check ${check}: ${echo(value)} must be one of ${SEVERITIES.join(', ')}`,
    ),
    'block',
  );
const minRowsSchema = withDefault(integer(1, MAX_TOLERANCE, ' (live rows below which nothing is compared)'), DEFAULT_DRIFT_MIN_ROWS);

const driftSchema = z
  .strictObject(
    {
      rowCount: z.preprocess(
        (v) => v ?? undefined,
        z
          .strictObject(
            {
              maxDecreasePct: z.preprocess((v) => v ?? undefined, share(0, 100, "percent of live's rows a chunk may lose").optional()),
              maxIncreasePct: z.preprocess((v) => v ?? undefined, share(0, MAX_INCREASE_PCT, "percent of live's rows a chunk may gain").optional()),
              minRows: minRowsSchema,
              severity: severitySchema(ROW_COUNT_DRIFT),
            },
            { error: 'must be an object naming maxDecreasePct and/or maxIncreasePct, minRows, severity, nothing else' },
          )
          .superRefine((r, ctx) => {
            if (r.maxDecreasePct === undefined && r.maxIncreasePct === undefined)
              ctx.addIssue({ code: 'custom', message: `of check ${ROW_COUNT_DRIFT} must declare maxDecreasePct, maxIncreasePct or both` });
          })
          .optional(),
      ),
      nullRate: z.preprocess(
        (v) => v ?? undefined,
        z
          .strictObject(
            {
              columns: z.preprocess(
                (v) => v ?? undefined,
                z
                  .array(identifier, { error: 'must list columns of the live table' })
                  .min(1, { error: 'must list at least one column (or be left out: every column)' })
                  .superRefine((columns, ctx) => {
                    const repeated = columns.filter((c, i) => columns.indexOf(c) !== i);
                    if (repeated.length > 0) ctx.addIssue({ code: 'custom', message: `names ${[...new Set(repeated)].join(', ')} more than once` });
                  })
                  .optional(),
              ),
              maxIncreasePoints: share(0, 100, 'percentage points the NULL share may rise by'),
              minRows: minRowsSchema,
              severity: severitySchema(NULL_RATE_DRIFT),
            },
            { error: 'must be an object naming maxIncreasePoints, columns, minRows, severity, nothing else' },
          )
          .optional(),
      ),
    },
    { error: 'must be an object naming rowCount and/or nullRate, nothing else' },
  )
  .transform((d): DriftChecks => {
    const { maxDecreasePct, maxIncreasePct, ...rowCount } = d.rowCount ?? { minRows: 0, severity: 'block' as Severity };
    const { columns, ...nullRate } = d.nullRate ?? { maxIncreasePoints: 0, minRows: 0, severity: 'block' as Severity };
    return {
      ...(d.rowCount === undefined
        ? {}
        : {
            rowCount: { ...rowCount, ...(maxDecreasePct === undefined ? {} : { maxDecreasePct }), ...(maxIncreasePct === undefined ? {} : { maxIncreasePct }) },
          }),
      ...(d.nullRate === undefined ? {} : { nullRate: { ...nullRate, ...(columns === undefined ? {} : { columns }) } }),
    };
  });

export const checksSchema = section({
  allowEmpty: withDefault(z.boolean({ error: 'must be true or false' }), false),
  measures: withDefault(
    z.array(measureSchema, { error: 'must list numeric columns of the live table to sum per chunk' }).superRefine((measures, ctx) => {
      const columns = measures.map((m) => m.column);
      const repeated = columns.filter((c, i) => columns.indexOf(c) !== i);
      if (repeated.length > 0) ctx.addIssue({ code: 'custom', message: `names ${[...new Set(repeated)].join(', ')} more than once` });
    }),
    [],
  ),
  drift: z.preprocess((v) => v ?? undefined, driftSchema.optional()),
  contentChecksum: withDefault(z.boolean({ error: 'must be true or false' }), true),
  // Optional, not defaulted: a pipeline without dimensions keeps its checks (and spec hash) as they were.
  dimensions: z.preprocess(
    (value) => value ?? undefined,
    z
      .array(identifier, { error: 'must list columns of the live table to locate differences by' })
      .max(MAX_DIMENSIONS, { error: `must list at most ${MAX_DIMENSIONS} columns (each multiplies the segments an alert lists)` })
      .superRefine((columns, ctx) => {
        const repeated = columns.filter((c, i) => columns.indexOf(c) !== i);
        if (repeated.length > 0) ctx.addIssue({ code: 'custom', message: `names ${[...new Set(repeated)].join(', ')} more than once` });
      })
      .optional(),
  ),
  notNull: withDefault(
    z.array(
      z.preprocess((v) => (typeof v === 'string' ? { column: v } : v), judged({ column: identifier }, notNullName, true)),
      { error: 'must list columns' },
    ),
    [],
  ),
  acceptedValues: withDefault(
    z.array(judged({ column: identifier, values: acceptedValuesSchema }, acceptedValuesName, true), {
      error: 'must list objects with a column and its values',
    }),
    [],
  ),
  pattern: withDefault(
    z.array(judged({ column: identifier, regex: regexSchema }, patternName, true), { error: 'must list objects with a column and its regex' }),
    [],
  ),
  references: withDefault(
    z.array(
      judged(
        {
          columns: z.array(identifier, { error: 'must list the key columns of staging' }).min(1, { error: 'must list the key columns of staging' }),
          parent: z.object(
            {
              schema: identifier,
              table: identifier,
              columns: z.array(identifier, { error: 'must list the key columns of the parent' }).min(1, { error: 'must list the key columns of the parent' }),
            },
            { error: 'must be an object with schema, table and columns' },
          ),
        },
        referencesName,
      ).superRefine((c, ctx) => {
        if (c.columns.length !== c.parent.columns.length) {
          ctx.addIssue({
            code: 'custom',
            path: ['parent', 'columns'],
            message: `of check ${referencesName(c)} must list as many columns as columns (${c.columns.length})`,
          });
        }
      }),
      { error: 'must list objects with columns and a parent' },
    ),
    [],
  ),
  sql: withDefault(
    z.array(
      judged(
        { name: identifier, sql: z.string({ error: 'must be a SELECT statement returning the offending rows' }).transform(normalizeSourceSql) },
        sqlCheckName,
      ).superRefine((c, ctx) => {
        const problem = customSqlProblem(c.sql);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['sql'], message: `of check ${sqlCheckName(c)} ${problem}` });
      }),
      { error: 'must list objects with a name and the SQL' },
    ),
    [],
  ),
  quarantine: z.preprocess((value) => value ?? undefined, quarantineSchema.optional()),
})
  .superRefine((checks, ctx) => {
    const quarantining = [
      ...checks.notNull.filter((c) => c.action === 'quarantine').map(notNullName),
      ...checks.acceptedValues.filter((c) => c.action === 'quarantine').map(acceptedValuesName),
      ...checks.pattern.filter((c) => c.action === 'quarantine').map(patternName),
    ];
    if (quarantining.length > 0 && checks.quarantine === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['quarantine'],
        message: `must be declared ({ maxRows, maxPct }: how many rows may be quarantined) for check(s) ${quarantining.join(', ')} with action quarantine`,
      });
    }
    const names = declaredCheckNames(checks);
    const repeated = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))];
    if (repeated.length > 0) ctx.addIssue({ code: 'custom', message: `declare check(s) ${repeated.join(', ')} more than once` });
    // check_results.check_name is a varchar(128) (domain/manifest/sql/manifest.ts).
    const long = names.filter((n) => n.length > MAX_CHECK_NAME_LENGTH);
    if (long.length > 0)
      ctx.addIssue({ code: 'custom', message: `name check(s) longer than ${MAX_CHECK_NAME_LENGTH} characters: ${long.map((n) => clip(n, 60)).join(', ')}` });
  })
  .transform(({ measures, drift, ...checks }) => {
    const tolerances = measures.filter((m) => m.tolerance !== undefined).map((m): [string, MeasureTolerance] => [m.column, m.tolerance!]);
    return {
      ...checks,
      measures: measures.map((m) => m.column),
      ...(tolerances.length === 0 ? {} : { measureTolerances: Object.fromEntries(tolerances) }),
      ...(drift === undefined ? {} : { drift }),
    };
  });

/** The longest check name check_results holds. */
const MAX_CHECK_NAME_LENGTH = 128;
