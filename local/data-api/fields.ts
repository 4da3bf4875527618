// Typed result fields and column metadata the way the Data API returns them,
// from PostgreSQL's text output (every type parser on our pool returns the raw
// text). DECIMAL, dates and timestamps stay strings, in the format Redshift
// prints them (PostgreSQL's ISO DateStyle with TimeZone UTC is the same).

export type Field =
  | { isNull: true }
  | { booleanValue: boolean }
  | { longValue: number }
  | { doubleValue: number }
  | { stringValue: string }
  | { blobValue: string };

export interface ColumnMetadata {
  name: string;
  label: string;
  typeName: string;
  nullable: number;
  isSigned: boolean;
  isCaseSensitive: boolean;
  isCurrency: boolean;
  precision: number;
  scale: number;
  length: number;
  schemaName: string;
  tableName: string;
  columnDefault?: string;
}

/** What the result's RowDescription says about a column, plus catalog facts when it comes from a table. */
export interface ColumnSource {
  name: string;
  typeOid: number;
  typeModifier: number;
  /** pg_type.typname for types this module does not know by OID. */
  typeName?: string;
  table?: { schemaName: string; tableName: string; notNull: boolean; columnDefault?: string };
}

type Encoding = 'long' | 'double' | 'bool' | 'blob' | 'string';

interface TypeInfo {
  name: string;
  encoding: Encoding;
  precision?: number;
  signed?: boolean;
  caseSensitive?: boolean;
}

// Built-in OIDs are fixed in PostgreSQL. Names follow Redshift, which has no `text`.
const TYPES = new Map<number, TypeInfo>([
  [16, { name: 'bool', encoding: 'bool', precision: 1 }],
  [17, { name: 'bytea', encoding: 'blob' }],
  [18, { name: 'char', encoding: 'string', precision: 1, caseSensitive: true }],
  [19, { name: 'name', encoding: 'string', precision: 63, caseSensitive: true }],
  [20, { name: 'int8', encoding: 'long', precision: 19, signed: true }],
  [21, { name: 'int2', encoding: 'long', precision: 5, signed: true }],
  [23, { name: 'int4', encoding: 'long', precision: 10, signed: true }],
  [25, { name: 'varchar', encoding: 'string', precision: 65535, caseSensitive: true }],
  [26, { name: 'oid', encoding: 'long', precision: 10 }],
  [700, { name: 'float4', encoding: 'double', precision: 8, signed: true }],
  [701, { name: 'float8', encoding: 'double', precision: 17, signed: true }],
  [1042, { name: 'bpchar', encoding: 'string', caseSensitive: true }],
  [1043, { name: 'varchar', encoding: 'string', caseSensitive: true }],
  [1082, { name: 'date', encoding: 'string', precision: 13 }],
  [1083, { name: 'time', encoding: 'string', precision: 15 }],
  [1114, { name: 'timestamp', encoding: 'string', precision: 29 }],
  [1184, { name: 'timestamptz', encoding: 'string', precision: 35 }],
  [1266, { name: 'timetz', encoding: 'string', precision: 21 }],
  [1700, { name: 'numeric', encoding: 'string', signed: true }],
]);

export function encodeRecord(row: (string | null)[], encodings: Encoding[]): Field[] {
  return row.map((value, i) => encodeField(value, encodings[i] ?? 'string'));
}

export function encodingsOf(columns: ColumnSource[]): Encoding[] {
  return columns.map((c) => TYPES.get(c.typeOid)?.encoding ?? 'string');
}

function encodeField(value: string | null, encoding: Encoding): Field {
  if (value === null) return { isNull: true };
  switch (encoding) {
    case 'long':
      return { longValue: Number(value) };
    case 'double': {
      const n = Number(value);
      // JSON has no NaN or Infinity.
      return Number.isFinite(n) ? { doubleValue: n } : { stringValue: value };
    }
    case 'bool':
      return { booleanValue: value === 't' };
    case 'blob':
      return { blobValue: Buffer.from(value.startsWith('\\x') ? value.slice(2) : value, 'hex').toString('base64') };
    default:
      return { stringValue: value };
  }
}

export function columnMetadata(column: ColumnSource): ColumnMetadata {
  const info = TYPES.get(column.typeOid);
  const { precision, scale, length } = sizeOf(column, info);
  return {
    name: column.name,
    label: column.name,
    typeName: info?.name ?? column.typeName ?? 'unknown',
    // 0 = NOT NULL, 1 = nullable (JDBC's columnNoNulls / columnNullable).
    nullable: column.table?.notNull ? 0 : 1,
    isSigned: info?.signed ?? false,
    isCaseSensitive: info?.caseSensitive ?? false,
    isCurrency: false,
    precision,
    scale,
    length,
    schemaName: column.table?.schemaName ?? '',
    tableName: column.table?.tableName ?? '',
    ...(column.table?.columnDefault !== undefined ? { columnDefault: column.table.columnDefault } : {}),
  };
}

function sizeOf(column: ColumnSource, info: TypeInfo | undefined): { precision: number; scale: number; length: number } {
  const mod = column.typeModifier;
  if (column.typeOid === 1700) {
    // numeric(p, s) packs both into the type modifier; -1 means unconstrained.
    return mod < 4 ? { precision: 0, scale: 0, length: 0 } : { precision: ((mod - 4) >> 16) & 0xffff, scale: (mod - 4) & 0xffff, length: 0 };
  }
  if (column.typeOid === 1042 || column.typeOid === 1043) {
    const chars = mod >= 4 ? mod - 4 : 65535;
    return { precision: chars, scale: 0, length: chars };
  }
  const fractional = column.typeOid === 1114 || column.typeOid === 1184 ? (mod >= 0 ? mod : 6) : 0;
  return { precision: info?.precision ?? 0, scale: fractional, length: 0 };
}

export function isKnownType(oid: number): boolean {
  return TYPES.has(oid);
}
