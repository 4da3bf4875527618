/**
 * The per-row value of the gate's content checksum and of the live fingerprint:
 * Redshift's 64-bit FNV_HASH(value, seed) chained over the columns' binary forms
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_FNV_HASH.html). A NULL hashes
 * as its type's zero, a mask of the NULL columns last; source values are cast to
 * staging's types first (`castToType`), so both sides hash the same bytes.
 * Why: docs/decisions/content-checksum-in-the-gate.md
 */
import { quoteIdent } from '../identifiers.ts';

/** Types whose values have no text form shared by both engines: left out of the checksum (still counted). */
const UNHASHED_TYPES = new Set(['super', 'geometry', 'geography', 'hllsketch', 'varbyte', 'binary varying', 'bytea']);

/** A type as the catalog writes it (out-of-band.ts liveColumnsQuery): words, then optionally `(n)` or `(p,s)`; only such a text is used as a cast target. */
export const CATALOG_TYPE = /^[a-z][a-z ]*[a-z](\(\d+(,\d+)?\))?$/;

/** Whether a column (`name type` text) is of a type left out of the checksum. */
export function isUnhashed(column: string): boolean {
  return UNHASHED_TYPES.has(column.split(' ').slice(1).join(' ').replace(/\(.*$/, ''));
}

/** The columns (`name type` texts) the row digest reads: those of a type with a text form shared by both engines. */
export function hashedColumns(columns: readonly string[]): string[] {
  return columns.filter((c) => !isUnhashed(c));
}

/**
 * The zero a NULL of the type hashes as, by the catalog's data type (the
 * type text without its `(n)` or `(p,s)`); undefined for a type with none
 * here, whose values are hashed as text.
 */
function zeroOf(dataType: string): string | undefined {
  switch (dataType) {
    case 'smallint':
    case 'integer':
    case 'bigint':
    case 'numeric':
    case 'real':
    case 'double precision':
      return '0';
    case 'boolean':
      return 'false';
    case 'character':
    case 'character varying':
    case 'text':
      return `''`;
    case 'date':
      return `CAST('2000-01-01' AS date)`;
    case 'timestamp without time zone':
      return `CAST('2000-01-01 00:00:00' AS timestamp)`;
    case 'timestamp with time zone':
      return `CAST('2000-01-01 00:00:00+00' AS timestamptz)`;
    case 'time without time zone':
      return `CAST('00:00:00' AS time)`;
    case 'time with time zone':
      return `CAST('00:00:00+00' AS timetz)`;
    default:
      return undefined;
  }
}

/** Columns per NULL mask: bits of a BIGINT that stay positive. */
const MASK_BITS = 62;

/** The FNV offset basis as a signed BIGINT: the chain's first seed, so the first column is hashed as FNV_HASH(value) is. */
export const FNV_OFFSET_BASIS = '-3750763034362895579';

/**
 * One row's value as DECIMAL(38,0): FNV_HASH chained over `columns`
 * (`name type` texts, catalog order; types without a binary form shared by
 * both engines are left out, as the fingerprint leaves them out), then the
 * NULL masks. A sum of them over any set of rows is order-independent and
 * cannot overflow: each value is a signed 64-bit number, and 38 digits hold
 * the sum of more than 10^19 of them.
 */
export function rowHashValue(columns: readonly string[], alias?: string, castToType = false): string {
  const values = hashedColumns(columns).map((column) => {
    const [name, ...type] = column.split(' ');
    const fullType = type.join(' ');
    const read = `${alias === undefined ? '' : `${alias}.`}${quoteIdent(name!)}`;
    const value = castToType && CATALOG_TYPE.test(fullType) ? `CAST(${read} AS ${fullType})` : read;
    const zero = zeroOf(fullType.replace(/\(.*$/, ''));
    return { value, hashed: zero === undefined ? `COALESCE(CAST(${value} AS varchar(65535)), '')` : `COALESCE(${value}, ${zero})` };
  });
  if (values.length === 0) return 'CAST(0 AS decimal(38, 0))';
  let chain = FNV_OFFSET_BASIS;
  for (const v of values) chain = `FNV_HASH(${v.hashed}, ${chain})`;
  for (let i = 0; i < values.length; i += MASK_BITS) {
    const bits = values.slice(i, i + MASK_BITS).map((v, bit) => `CASE WHEN ${v.value} IS NULL THEN ${(2n ** BigInt(bit)).toString()} ELSE 0 END`);
    chain = `FNV_HASH(CAST(${bits.join(' + ')} AS bigint), ${chain})`;
  }
  return `CAST(${chain} AS decimal(38, 0))`;
}
