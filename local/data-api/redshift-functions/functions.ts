// Redshift's own SQL functions that PostgreSQL lacks, or has with other rules,
// as single-expression SQL functions (inlined: no call per row) in
// SYSTEM_VIEWS_SCHEMA, which sessions search before pg_catalog: a call as
// Redshift writes it finds them, and one with a PostgreSQL function's
// signature (date_part, date_trunc of a date, regexp_replace) stands in for it,
// calling pg_catalog's inside. Syntax no function call can take is syntax.ts's.
// Each follows its page under https://docs.aws.amazon.com/redshift/latest/dg/ (named
// beside it). Why: docs/decisions/redshift-functions-locally.md
import type pg from 'pg';
import { quoteIdent } from '../../../domain/identifiers.ts';
import { SYSTEM_VIEWS_SCHEMA } from '../system-views.ts';
import { unitCase } from './date-parts.ts';
import { HASHES } from './hashes.ts';

const S = quoteIdent(SYSTEM_VIEWS_SCHEMA);

/**
 * Bumped whenever a definition changes: a database holding another version
 * gets them replaced (CREATE OR REPLACE, so views that call them stay). A
 * function whose return type changes needs a new name, or the system
 * views' version bump, which creates the schema anew.
 */
const VERSION = 'atomic-publish local Redshift functions, version 6';

const TIMESTAMP_UNITS = [
  'millennium',
  'century',
  'decade',
  'year',
  'quarter',
  'month',
  'week',
  'day',
  'hour',
  'minute',
  'second',
  'millisecond',
  'microsecond',
];
const TIME_UNITS = ['hour', 'minute', 'second', 'millisecond', 'microsecond'];
const array = (units: readonly string[]) => `ARRAY[${units.map((u) => `'${u}'`).join(', ')}]`;

const sql = (signature: string, returns: string, body: string, volatility = 'IMMUTABLE') =>
  `CREATE OR REPLACE FUNCTION ${S}.${signature} RETURNS ${returns} LANGUAGE sql ${volatility} PARALLEL SAFE AS $$ SELECT ${body} $$`;

/** The end of v's month, as a date. */
const monthEnd = (v: string) => `(pg_catalog.date_trunc('month', ${v}) + interval '1 month - 1 day')::date`;

/** Date parts: https://docs.aws.amazon.com/redshift/latest/dg/r_Dateparts_for_datetime_functions.html */
const DATE_PART_NAMES: string[] = [
  // The unit a name stands for; a name Redshift does not list stays as written (PostgreSQL's own, such as isodow, keep working).
  sql('datepart_name(p text)', 'text', `COALESCE(${unitCase('lower(btrim(p))')}, p)`),
  `CREATE OR REPLACE FUNCTION ${S}.datepart_unit(p text, fn text, allowed text[]) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
     BEGIN
       IF ${S}.datepart_name(p) = ANY (allowed) THEN RETURN ${S}.datepart_name(p); END IF;
       RAISE EXCEPTION '% is not a date part % takes', COALESCE(p, 'NULL'), fn USING ERRCODE = '22023';
     END
   $$`,
];

/**
 * DATEADD (r_DATEADD_function): TIMESTAMP for a date or timestamp, TIME or
 * TIMETZ for those. A month added to a day the result month lacks gives
 * that month's last day (April 30 + 1 month is May 30, PostgreSQL's rule);
 * a year added to February 29 gives March 1 of a common year, as the
 * page's example does, while 12 months give February 28.
 */
const DATEADD: string[] = [
  sql(
    'add_years(v timestamp, n bigint)',
    'timestamp',
    `CASE WHEN extract(day FROM v + make_interval(years => n::int)) = extract(day FROM v)
          THEN v + make_interval(years => n::int) ELSE v + make_interval(years => n::int) + interval '1 day' END`,
  ),
  sql(
    'time_step(u text)',
    'interval',
    `CASE u WHEN 'hour' THEN interval '1 hour' WHEN 'minute' THEN interval '1 minute'
     WHEN 'second' THEN interval '1 second' WHEN 'millisecond' THEN interval '1 millisecond' WHEN 'microsecond' THEN interval '1 microsecond' END`,
  ),
  sql(
    'dateadd_timestamp(u text, n bigint, v timestamp)',
    'timestamp',
    `CASE u
     WHEN 'millennium' THEN ${S}.add_years(v, n * 1000)
     WHEN 'century' THEN ${S}.add_years(v, n * 100)
     WHEN 'decade' THEN ${S}.add_years(v, n * 10)
     WHEN 'year' THEN ${S}.add_years(v, n)
     WHEN 'quarter' THEN v + make_interval(months => (n * 3)::int)
     WHEN 'month' THEN v + make_interval(months => n::int)
     WHEN 'week' THEN v + make_interval(weeks => n::int)
     WHEN 'day' THEN v + make_interval(days => n::int)
     ELSE v + n * ${S}.time_step(u) END`,
  ),
  sql('dateadd(p text, n bigint, v timestamp)', 'timestamp', `${S}.dateadd_timestamp(${S}.datepart_unit(p, 'DATEADD', ${array(TIMESTAMP_UNITS)}), n, v)`),
  sql('dateadd(p text, n bigint, v date)', 'timestamp', `${S}.dateadd(p, n, v::timestamp)`),
  // A literal ('2008-02-28') arrives as text: a string is what the unknown type of a literal resolves to first.
  sql('dateadd(p text, n bigint, v text)', 'timestamp', `${S}.dateadd(p, n, v::timestamp)`, 'STABLE'),
  sql('dateadd(p text, n bigint, v timestamptz)', 'timestamptz', `${S}.dateadd(p, n, v::timestamp)::timestamptz`, 'STABLE'),
  sql('dateadd(p text, n bigint, v time)', 'time', `v + n * ${S}.time_step(${S}.datepart_unit(p, 'DATEADD', ${array(TIME_UNITS)}))`),
  sql('dateadd(p text, n bigint, v timetz)', 'timetz', `v + n * ${S}.time_step(${S}.datepart_unit(p, 'DATEADD', ${array(TIME_UNITS)}))`),
];

/**
 * DATEDIFF (r_DATEDIFF_function): BIGINT, the number of the part's
 * boundaries crossed from the first value to the second (2008-12-31 to
 * 2009-01-01 is 1 year), negative when the second is earlier. Weeks start
 * on Monday, as DATE_TRUNC('week') truncates; TIMETZ values compare in UTC.
 */
const epochAt = (unit: string, v: string) => `extract(epoch FROM pg_catalog.date_trunc('${unit}', ${v}))`;
const DATEDIFF: string[] = [
  sql(
    'datediff_timestamp(u text, a timestamp, b timestamp)',
    'bigint',
    `(CASE u
     WHEN 'millennium' THEN extract(millennium FROM b) - extract(millennium FROM a)
     WHEN 'century' THEN extract(century FROM b) - extract(century FROM a)
     WHEN 'decade' THEN extract(decade FROM b) - extract(decade FROM a)
     WHEN 'year' THEN extract(year FROM b) - extract(year FROM a)
     WHEN 'quarter' THEN (extract(year FROM b) * 4 + extract(quarter FROM b)) - (extract(year FROM a) * 4 + extract(quarter FROM a))
     WHEN 'month' THEN (extract(year FROM b) * 12 + extract(month FROM b)) - (extract(year FROM a) * 12 + extract(month FROM a))
     WHEN 'week' THEN (pg_catalog.date_trunc('week', b)::date - pg_catalog.date_trunc('week', a)::date) / 7
     WHEN 'day' THEN b::date - a::date
     WHEN 'hour' THEN (${epochAt('hour', 'b')} - ${epochAt('hour', 'a')}) / 3600
     WHEN 'minute' THEN (${epochAt('minute', 'b')} - ${epochAt('minute', 'a')}) / 60
     WHEN 'second' THEN ${epochAt('second', 'b')} - ${epochAt('second', 'a')}
     WHEN 'millisecond' THEN (${epochAt('milliseconds', 'b')} - ${epochAt('milliseconds', 'a')}) * 1000
     WHEN 'microsecond' THEN (extract(epoch FROM b) - extract(epoch FROM a)) * 1000000 END)::bigint`,
  ),
  sql('datediff(p text, a timestamp, b timestamp)', 'bigint', `${S}.datediff_timestamp(${S}.datepart_unit(p, 'DATEDIFF', ${array(TIMESTAMP_UNITS)}), a, b)`),
  sql('datediff(p text, a date, b date)', 'bigint', `${S}.datediff(p, a::timestamp, b::timestamp)`),
  sql('datediff(p text, a text, b text)', 'bigint', `${S}.datediff(p, a::timestamp, b::timestamp)`, 'STABLE'),
  sql('datediff(p text, a timestamptz, b timestamptz)', 'bigint', `${S}.datediff(p, a::timestamp, b::timestamp)`, 'STABLE'),
  sql(
    'datediff(p text, a time, b time)',
    'bigint',
    `${S}.datediff_timestamp(${S}.datepart_unit(p, 'DATEDIFF', ${array(TIME_UNITS)}), DATE '2000-01-01' + a, DATE '2000-01-01' + b)`,
  ),
  sql(
    'datediff(p text, a timetz, b timetz)',
    'bigint',
    `${S}.datediff_timestamp(${S}.datepart_unit(p, 'DATEDIFF', ${array(TIME_UNITS)}), DATE '2000-01-01' + (a AT TIME ZONE 'UTC')::time, DATE '2000-01-01' + (b AT TIME ZONE 'UTC')::time)`,
  ),
];

/**
 * DATE_PART (r_DATE_PART_function): DOUBLE PRECISION, PostgreSQL's after Redshift's
 * names, DECADE counted from year 1 (201 is 2000-2009: r_Dateparts_for_datetime_functions).
 * EXTRACT (r_EXTRACT_function) of a second, millisecond, microsecond or decade is the
 * part alone, an INTEGER (DOUBLE PRECISION of a TIMESTAMPTZ): 43 and 101 of 12:08:43.101.
 * DATE_TRUNC (r_DATE_TRUNC) of a date is a TIMESTAMP (PostgreSQL's gives a timestamptz);
 * of a timestamp it is PostgreSQL's, but for Redshift's own names (qtrs, dw, ...).
 */
const decadeFix = (p: string) => `CASE WHEN ${S}.datepart_name(${p}) = 'decade' THEN 1 ELSE 0 END`;
const extractPart = (v: string) => `CASE u
     WHEN 'second' THEN floor(extract(second FROM ${v}))
     WHEN 'millisecond' THEN floor(extract(microseconds FROM ${v}) / 1000) - floor(extract(second FROM ${v})) * 1000
     WHEN 'microsecond' THEN extract(microseconds FROM ${v}) - floor(extract(microseconds FROM ${v}) / 1000) * 1000
     WHEN 'decade' THEN floor(extract(decade FROM ${v})) + 1 END`;
const DATE_PART: string[] = [
  ...['timestamp', 'time', 'timetz'].map((type) => sql(`extract_part(u text, v ${type})`, 'integer', `(${extractPart('v')})::integer`)),
  sql('extract_part(u text, v date)', 'integer', `(${extractPart('v::timestamp')})::integer`),
  sql('extract_part(u text, v timestamptz)', 'double precision', `(${extractPart('v')})::double precision`, 'STABLE'),
  ...['timestamp', 'date', 'time', 'timetz', 'interval'].map((type) =>
    sql(`date_part(p text, v ${type})`, 'double precision', `pg_catalog.date_part(${S}.datepart_name(p), v) + ${decadeFix('p')}`),
  ),
  sql('date_part(p text, v timestamptz)', 'double precision', `pg_catalog.date_part(${S}.datepart_name(p), v) + ${decadeFix('p')}`, 'STABLE'),
  sql('date_trunc(p text, v date)', 'timestamp', `pg_catalog.date_trunc(${S}.datepart_name(p), v::timestamp)`),
];

const DATES: string[] = [
  // r_GETDATE: the current statement's start, in the session's time zone, without fractional seconds.
  sql('getdate()', 'timestamp', `pg_catalog.date_trunc('second', statement_timestamp()::timestamp)`, 'STABLE'),
  // r_SYSDATE: the current transaction's start, with microseconds (syntax.ts turns the bare SYSDATE into this call).
  sql('sysdate()', 'timestamp', 'transaction_timestamp()::timestamp', 'STABLE'),
  // r_TRUNC_date: a timestamp's date.
  sql('trunc(v timestamp)', 'date', 'v::date'),
  sql('trunc(v timestamptz)', 'date', 'v::date', 'STABLE'),
  // CONVERT_TIMEZONE: a TIMESTAMP from source_timezone (UTC unless given) to target_timezone, names and abbreviations as PostgreSQL's.
  sql('convert_timezone(target text, v timestamp)', 'timestamp', `(v AT TIME ZONE 'UTC') AT TIME ZONE target`),
  sql('convert_timezone(source text, target text, v timestamp)', 'timestamp', '(v AT TIME ZONE source) AT TIME ZONE target'),
  // r_ADD_MONTHS: TIMESTAMP; from the last day of a month to the last day of the result month (April 30 + 1 is May 31).
  sql(
    'add_months(v timestamp, n integer)',
    'timestamp',
    `CASE WHEN v::date = ${monthEnd('v')} THEN ${monthEnd('v + make_interval(months => n)')} + v::time ELSE v + make_interval(months => n) END`,
  ),
  sql('add_months(v date, n integer)', 'timestamp', `${S}.add_months(v::timestamp, n)`),
  sql('add_months(v text, n integer)', 'timestamp', `${S}.add_months(v::timestamp, n)`, 'STABLE'),
  // r_MONTHS_BETWEEN_function: FLOAT8; whole months when both are the same day of their months or both their months' last days, else days and time over 31-day months.
  sql(
    'months_between(a timestamp, b timestamp)',
    'double precision',
    `((extract(year FROM a) - extract(year FROM b)) * 12 + extract(month FROM a) - extract(month FROM b)
     + CASE WHEN extract(day FROM a) = extract(day FROM b) OR (a::date = ${monthEnd('a')} AND b::date = ${monthEnd('b')}) THEN 0
            ELSE (extract(day FROM a) - extract(day FROM b)) / 31.0 + (extract(epoch FROM a::time) - extract(epoch FROM b::time)) / (31.0 * 86400) END)::double precision`,
  ),
  sql('months_between(a date, b date)', 'double precision', `${S}.months_between(a::timestamp, b::timestamp)`),
  sql('months_between(a text, b text)', 'double precision', `${S}.months_between(a::timestamp, b::timestamp)`, 'STABLE'),
  // r_LAST_DAY: the DATE of the last day of the value's month.
  sql('last_day(v timestamp)', 'date', monthEnd('v')),
  sql('last_day(v date)', 'date', monthEnd('v::timestamp')),
  sql('last_day(v text)', 'date', monthEnd('v::timestamp'), 'STABLE'),
];

/**
 * r_MEDIAN, r_WF_MEDIAN: the middle value, or the mean of the two middle ones,
 * NULLs left out; DECIMAL of integers and decimals with one digit more of scale
 * (the page's 1.0 of an integer), DOUBLE PRECISION of floats, a DATE or TIMESTAMP
 * of those. One overload per integer type, lest an integer resolve to the float
 * one. Why an aggregate of its own: docs/decisions/redshift-functions-locally.md
 */
const middle = (v: string) => `(SELECT x FROM unnest(${v}) x ORDER BY x OFFSET (cardinality(${v}) - 1) / 2 LIMIT 2 - cardinality(${v}) % 2) m`;
const MEDIAN_TYPES: [input: string, state: string, final: string][] = [
  ['smallint', 'numeric', 'number'],
  ['integer', 'numeric', 'number'],
  ['bigint', 'numeric', 'number'],
  ['numeric', 'numeric', 'number'],
  ['real', 'double precision', 'number'],
  ['double precision', 'double precision', 'number'],
  ['date', 'date', 'time'],
  ['timestamp', 'timestamp', 'time'],
  ['timestamptz', 'timestamptz', 'time'],
];
const ident = (type: string) => type.replace(' ', '_');
const MEDIAN: string[] = [
  ...[...new Map(MEDIAN_TYPES.map(([, state, final]) => [state, final])).entries()].map(([state, final]) =>
    sql(
      `median_of_${ident(state)}(v ${state}[])`,
      state,
      state === 'numeric'
        ? `(SELECT round((min(x) + max(x)) / 2, max(scale(x)) + 1) FROM ${middle('v')})`
        : final === 'number'
          ? `(SELECT (min(x) + max(x)) / 2 FROM ${middle('v')})`
          : `(SELECT min(x) + (max(x) - min(x)) / 2 FROM ${middle('v')})`,
    ),
  ),
  ...MEDIAN_TYPES.flatMap(([input, state]) => [
    // Strict: a NULL leaves the state as it is.
    sql(`median_add_${ident(input)}(a ${state}[], v ${input})`, `${state}[]`, `array_append(a, v::${state})`).replace('PARALLEL SAFE', 'STRICT PARALLEL SAFE'),
    `CREATE OR REPLACE AGGREGATE ${S}.median(${input}) (SFUNC = ${S}.median_add_${ident(input)}, STYPE = ${state}[], INITCOND = '{}', FINALFUNC = ${S}.median_of_${ident(state)}, PARALLEL = SAFE)`,
  ]),
];

/** -1, 0 or 1 as a is before, at or after b; NULL when either is NULL. */
const cmp = `(CASE WHEN a < b THEN -1 WHEN a > b THEN 1 WHEN a = b THEN 0 END)`;
/** Day names by their first two letters, and the one-letter abbreviations (r_NEXT_DAY). */
const weekday = `CASE lower(left(btrim(day), 2)) WHEN 'su' THEN 0 WHEN 'mo' THEN 1 WHEN 'tu' THEN 2 WHEN 'we' THEN 3 WHEN 'th' THEN 4 WHEN 'fr' THEN 5 WHEN 'sa' THEN 6
     ELSE CASE lower(btrim(day)) WHEN 'm' THEN 1 WHEN 'w' THEN 3 WHEN 'f' THEN 5 END END`;
const COMPARISONS: string[] = [
  // r_DATE_CMP, r_DATE_CMP_TIMESTAMP, r_DATE_CMP_TIMESTAMPTZ, r_TIMESTAMP_CMP, r_TIMESTAMP_CMP_DATE, r_TIMESTAMP_CMP_TIMESTAMPTZ, r_INTERVAL_CMP: INTEGER.
  sql('date_cmp(a date, b date)', 'integer', cmp),
  sql('date_cmp_timestamp(a date, b timestamp)', 'integer', cmp),
  sql('date_cmp_timestamptz(a date, b timestamptz)', 'integer', cmp, 'STABLE'),
  sql('timestamp_cmp(a timestamp, b timestamp)', 'integer', cmp),
  sql('timestamp_cmp_date(a timestamp, b date)', 'integer', cmp),
  sql('timestamp_cmp_timestamptz(a timestamp, b timestamptz)', 'integer', cmp, 'STABLE'),
  sql('interval_cmp(a interval, b interval)', 'integer', cmp),
  // r_DATE_PART_YEAR: the year of a date, INTEGER.
  sql('date_part_year(v date)', 'integer', 'extract(year FROM v)::integer'),
  // r_NEXT_DAY: the DATE of the first given weekday after the value's date.
  sql('next_day(v date, day text)', 'date', `v + ((${weekday}) - extract(dow FROM v)::int + 6) % 7 + 1`),
  sql('next_day(v timestamp, day text)', 'date', `${S}.next_day(v::date, day)`),
  sql('next_day(v text, day text)', 'date', `${S}.next_day(v::date, day)`, 'STABLE'),
];

const VALUES: string[] = [
  // r_NVL2: not_null_return_value when expression is not NULL, else null_return_value, of their common type.
  sql('nvl2(e anyelement, not_null anycompatible, if_null anycompatible)', 'anycompatible', 'CASE WHEN e IS NOT NULL THEN not_null ELSE if_null END'),
  // r_LEN: characters; a CHAR's trailing blanks are not counted (its cast to text drops them), a VARCHAR's are.
  sql('len(v text)', 'integer', 'pg_catalog.length(v)'),
  sql('len(v bytea)', 'integer', 'pg_catalog.length(v)'),
  // r_TEXTLEN: LEN's synonym. r_REPLICATE: REPEAT's.
  sql('textlen(v text)', 'integer', 'pg_catalog.length(v)'),
  sql('replicate(v text, n integer)', 'text', 'pg_catalog.repeat(v, n)'),
  // r_CHARINDEX: the 1-based position of substring in string, 0 when it is not there.
  sql('charindex(sub text, str text)', 'integer', 'pg_catalog.strpos(str, sub)'),
  // REGEXP_REPLACE: every occurrence from position on (PostgreSQL's replaces the first unless told 'g'); replace_string defaults to ''.
  sql('regexp_replace(s text, pattern text)', 'text', `pg_catalog.regexp_replace(s, pattern, '', 'g')`),
  sql('regexp_replace(s text, pattern text, replacement text)', 'text', `pg_catalog.regexp_replace(s, pattern, replacement, 'g')`),
  sql('regexp_replace(s text, pattern text, replacement text, pos integer)', 'text', 'pg_catalog.regexp_replace(s, pattern, replacement, pos, 0)'),
  // Redshift's parameters: c and i as PostgreSQL's flags; p (Perl-style) is PostgreSQL's default syntax.
  sql(
    'regexp_replace(s text, pattern text, replacement text, pos integer, parameters text)',
    'text',
    `pg_catalog.regexp_replace(s, pattern, replacement, pos, 0, pg_catalog.translate(parameters, 'p', ''))`,
  ),
  // r_ROUND, r_TRUNC: of the input's type, to n places (negative: left of the point); PostgreSQL has them only for NUMERIC
  // with places, and makes an integer's ROUND a DOUBLE PRECISION.
  ...['smallint', 'integer', 'bigint', 'real', 'double precision'].flatMap((type) => [
    sql(`round(v ${type}, n integer)`, type, `pg_catalog.round(v::numeric, n)::${type}`),
    sql(`trunc(v ${type}, n integer)`, type, `pg_catalog.trunc(v::numeric, n)::${type}`),
  ]),
  ...['smallint', 'integer', 'bigint'].flatMap((type) => [sql(`round(v ${type})`, type, 'v'), sql(`trunc(v ${type})`, type, 'v')]),
  // r_DEXP, r_DLOG1, r_DLOG10.
  sql('dexp(v double precision)', 'double precision', 'exp(v)'),
  sql('dlog1(v double precision)', 'double precision', 'ln(v)'),
  sql('dlog10(v double precision)', 'double precision', 'log10(v)'),
  // SHA2: the hex digest of bits 224, 256 (or 0), 384 or 512; NULL for other lengths.
  sql(
    'sha2(v text, bits integer)',
    'varchar',
    `encode(CASE bits WHEN 224 THEN sha224(convert_to(v, 'UTF8')) WHEN 0 THEN sha256(convert_to(v, 'UTF8'))
     WHEN 256 THEN sha256(convert_to(v, 'UTF8')) WHEN 384 THEN sha384(convert_to(v, 'UTF8')) WHEN 512 THEN sha512(convert_to(v, 'UTF8')) END, 'hex')`,
  ),
];

/** In the order of their dependencies (a SQL function's body is checked when it is created). */
const FUNCTIONS: string[] = [...DATE_PART_NAMES, ...DATEADD, ...DATEDIFF, ...DATE_PART, ...DATES, ...COMPARISONS, ...VALUES, ...HASHES, ...MEDIAN];

/**
 * Creates the functions in the connected database unless they are there in
 * this version (the system views' installer, which drops the schema for a
 * version of its own, runs first). `client` must be a superuser's.
 */
export async function installRedshiftFunctions(client: pg.ClientBase): Promise<void> {
  const current = async () =>
    (await client.query(`SELECT obj_description(to_regprocedure($1), 'pg_proc') AS version`, [`${SYSTEM_VIEWS_SCHEMA}.redshift_functions_version()`])).rows[0]
      ?.version === VERSION;
  if (await current()) return;
  await client.query('BEGIN');
  try {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`${SYSTEM_VIEWS_SCHEMA} functions`]);
    if (!(await current())) {
      await client.query(FUNCTIONS.join(';\n')); // one round trip
      await client.query(`CREATE OR REPLACE FUNCTION ${S}.redshift_functions_version() RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT '${VERSION}' $$`);
      await client.query(`COMMENT ON FUNCTION ${S}.redshift_functions_version() IS '${VERSION}'`);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
