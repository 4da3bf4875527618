// Redshift's hash functions that PostgreSQL lacks, as functions of
// SYSTEM_VIEWS_SCHEMA beside the others of functions.ts, which installs
// them. PostgreSQL has neither SHA-1 (but in pgcrypto, which is not
// installed), CRC-32C, Murmur3 nor FarmHash, so each is a PL/pgSQL loop
// over the value's bytes (a string's UTF-8 bytes: a CHAR's trailing
// blanks, which its cast to text drops, not included); NULL in, NULL out.
// Each follows its page under https://docs.aws.amazon.com/redshift/latest/dg/
// (named beside it). FNV_HASH is the system views' (system-views.ts).
import { quoteIdent } from '../../../domain/identifiers.ts';
import { SYSTEM_VIEWS_SCHEMA } from '../system-views.ts';

const S = quoteIdent(SYSTEM_VIEWS_SCHEMA);

/** An inlined SQL function of one expression. */
const sql = (signature: string, returns: string, body: string, volatility = 'IMMUTABLE') =>
  `CREATE OR REPLACE FUNCTION ${S}.${signature} RETURNS ${returns} LANGUAGE sql ${volatility} PARALLEL SAFE AS $$ SELECT ${body} $$`;
/** A PL/pgSQL function, NULL of NULL. */
const plpgsql = (signature: string, returns: string, body: string) =>
  `CREATE OR REPLACE FUNCTION ${S}.${signature} RETURNS ${returns} LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$ ${body} $$`;

/** The hashes' unsigned 32-bit words live in BIGINTs: this mask keeps a value's low 32 bits. */
const U32 = '4294967295';
const rotl = (x: string, n: number) => `(((${x} << ${n}) | (${x} >> ${32 - n})) & ${U32})`;

/** CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the remainder of each byte value, for a table-driven loop. */
const CRC32C_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  return c >>> 0;
});

/**
 * SHA1, SHA, FUNC_SHA1: the 40 hex digits of SHA-1. CRC32 (crc32-function): 8 hex digits
 * of CRC-32C, as the page's example proves (f2726906). MURMUR3_32_HASH: INTEGER, Murmur3
 * x86 32-bit of the bytes Apache Iceberg's spec (Appendix B) gives a value: integers as
 * 8-byte little-endian longs, a DATE as days since 1970, a TIME as microseconds since
 * midnight, a TIMESTAMP as microseconds since 1970 (a TIMESTAMPTZ's in UTC), strings as
 * UTF-8, BYTEA as is; the seed (default 0) is the initial state, so hashes chain.
 */
const SHA1_CRC32_MURMUR3: string[] = [
  plpgsql(
    'sha1(v text)',
    'varchar',
    `
     DECLARE
       m bytea := convert_to(v, 'UTF8');
       bits constant bigint := length(m)::bigint * 8;
       h0 bigint := 1732584193; h1 bigint := 4023233417; h2 bigint := 2562383102; h3 bigint := 271733878; h4 bigint := 3285377520;
       w bigint[];
       a bigint; b bigint; c bigint; d bigint; e bigint; f bigint; k bigint; t bigint;
     BEGIN
       -- Padding: 0x80, zeros up to 56 bytes modulo 64, the length in bits as a big-endian 64-bit number.
       m := m || decode('80', 'hex') || decode(repeat('00', ((55 - length(m)) % 64 + 64) % 64), 'hex') || int8send(bits);
       FOR blk IN 0 .. length(m) / 64 - 1 LOOP
         -- w[j] is the word numbered j - 1.
         FOR i IN 0 .. 15 LOOP
           w[i + 1] := (get_byte(m, blk * 64 + i * 4)::bigint << 24) | (get_byte(m, blk * 64 + i * 4 + 1)::bigint << 16)
                       | (get_byte(m, blk * 64 + i * 4 + 2)::bigint << 8) | get_byte(m, blk * 64 + i * 4 + 3)::bigint;
         END LOOP;
         FOR i IN 16 .. 79 LOOP
           t := ((w[i - 2] # w[i - 7]) # w[i - 13]) # w[i - 15];
           w[i + 1] := ${rotl('t', 1)};
         END LOOP;
         a := h0; b := h1; c := h2; d := h3; e := h4;
         FOR i IN 0 .. 79 LOOP
           IF i < 20 THEN f := (b & c) | (((~b) & ${U32}) & d); k := 1518500249;
           ELSIF i < 40 THEN f := (b # c) # d; k := 1859775393;
           ELSIF i < 60 THEN f := ((b & c) | (b & d)) | (c & d); k := 2400959708;
           ELSE f := (b # c) # d; k := 3395469782;
           END IF;
           t := (${rotl('a', 5)} + f + e + k + w[i + 1]) & ${U32};
           e := d; d := c; c := ${rotl('b', 30)}; b := a; a := t;
         END LOOP;
         h0 := (h0 + a) & ${U32}; h1 := (h1 + b) & ${U32}; h2 := (h2 + c) & ${U32}; h3 := (h3 + d) & ${U32}; h4 := (h4 + e) & ${U32};
       END LOOP;
       RETURN lpad(to_hex(h0), 8, '0') || lpad(to_hex(h1), 8, '0') || lpad(to_hex(h2), 8, '0') || lpad(to_hex(h3), 8, '0') || lpad(to_hex(h4), 8, '0');
     END`,
  ),
  sql('sha(v text)', 'varchar', `${S}.sha1(v)`),
  sql('func_sha1(v text)', 'varchar', `${S}.sha1(v)`),
  plpgsql(
    'crc32(v text)',
    'varchar',
    `
     DECLARE
       remainders constant bigint[] := '{${CRC32C_TABLE.join(',')}}';
       m constant bytea := convert_to(v, 'UTF8');
       c bigint := ${U32};
     BEGIN
       FOR i IN 0 .. length(m) - 1 LOOP
         c := remainders[((c # get_byte(m, i)) & 255) + 1] # (c >> 8);
       END LOOP;
       RETURN lpad(to_hex(c # ${U32}), 8, '0');
     END`,
  ),
  // The product of two 32-bit words modulo 2^32, from b's halves, so that no product leaves 64 bits.
  sql('u32_mul(a bigint, b bigint)', 'bigint', `((a * (b & 65535)) + (((a * (b >> 16)) & 65535) << 16)) & ${U32}`),
  plpgsql(
    'murmur3_32_bytes(m bytea, seed integer)',
    'integer',
    `
     DECLARE
       n constant integer := length(m);
       h bigint := seed::bigint & ${U32};
       k bigint;
     BEGIN
       FOR i IN 0 .. n / 4 - 1 LOOP
         k := ((get_byte(m, i * 4)::bigint | (get_byte(m, i * 4 + 1)::bigint << 8)) | (get_byte(m, i * 4 + 2)::bigint << 16)) | (get_byte(m, i * 4 + 3)::bigint << 24);
         k := ${S}.u32_mul(${rotl(`${S}.u32_mul(k, 3432918353)`, 15)}, 461845907);
         h := h # k;
         h := (${S}.u32_mul(${rotl('h', 13)}, 5) + 3864292196) & ${U32};
       END LOOP;
       k := 0;
       IF n % 4 >= 3 THEN k := k # (get_byte(m, n - n % 4 + 2)::bigint << 16); END IF;
       IF n % 4 >= 2 THEN k := k # (get_byte(m, n - n % 4 + 1)::bigint << 8); END IF;
       IF n % 4 >= 1 THEN
         k := k # get_byte(m, n - n % 4)::bigint;
         h := h # ${S}.u32_mul(${rotl(`${S}.u32_mul(k, 3432918353)`, 15)}, 461845907);
       END IF;
       h := h # n;
       h := ${S}.u32_mul(h # (h >> 16), 2246822507);
       h := ${S}.u32_mul(h # (h >> 13), 3266489909);
       h := h # (h >> 16);
       RETURN (CASE WHEN h >= 2147483648 THEN h - 4294967296 ELSE h END)::integer;
     END`,
  ),
  // A long's 8 bytes, least significant first (int8send gives them most significant first).
  sql('le8(v bigint)', 'bytea', `(SELECT string_agg(substring(int8send(v) FROM i FOR 1), ''::bytea ORDER BY i DESC) FROM generate_series(1, 8) i)`),
  ...(
    [
      ['smallint', `${S}.le8(v)`],
      ['integer', `${S}.le8(v)`],
      ['bigint', `${S}.le8(v)`],
      ['text', `convert_to(v, 'UTF8')`],
      ['bytea', 'v'],
      ['date', `${S}.le8(v - DATE '1970-01-01')`],
      ['time', `${S}.le8((extract(epoch FROM v) * 1000000)::bigint)`],
      ['timestamp', `${S}.le8((extract(epoch FROM v) * 1000000)::bigint)`],
      ['timestamptz', `${S}.le8((extract(epoch FROM v) * 1000000)::bigint)`],
    ] as const
  ).map(([type, bytes]) =>
    sql(
      `murmur3_32_hash(v ${type}, seed integer DEFAULT 0)`,
      'integer',
      `${S}.murmur3_32_bytes(${bytes}, seed)`,
      type === 'timestamptz' ? 'STABLE' : 'IMMUTABLE',
    ),
  ),
];

/** 64-bit words as BIGINTs (two's complement): sums and products modulo 2^64 by way of NUMERIC, logical shifts and rotations. */
const M64 = '18446744073709551616';
const u64 = (hex: string) => BigInt.asIntN(64, BigInt(hex)).toString();
const K0 = u64('0xc3a5c85c97cb3127');
const K1 = u64('0xb492b66fbe98f273');
const K2 = u64('0x9ae16a3b2f90404f');
const add = (...terms: string[]) => terms.reduce((a, b) => `${S}.u64_add(${a}, ${b})`);
const mul = (a: string, b: string) => `${S}.u64_mul(${a}, ${b})`;
const rot = (a: string, n: number) => `${S}.u64_rotr(${a}, ${n})`;
const shiftMix = (a: string) => `${S}.u64_shift_mix(${a})`;
const fetch = (offset: string) => `${S}.u64_fetch(m, ${offset})`;
const len16 = (u: string, v: string, k: string) => `${S}.farm_len16(${u}, ${v}, ${k})`;
const weak32 = (offset: string, a: string, b: string) => `${S}.farm_weak32(m, ${offset}, ${a}, ${b})`;

/**
 * FARMFINGERPRINT64 (r_FARMFINGERPRINT64): BIGINT, FarmHash's
 * Fingerprint64 (farmhashna::Hash64) of a VARCHAR's or BYTEA's bytes,
 * step for step as farmhash.cc writes it: by length up to 16, 32 and 64
 * bytes, else 64-byte blocks and the last 64 bytes.
 */
const FARMFINGERPRINT64: string[] = [
  // n modulo 2^64 as a signed 64-bit value.
  sql('u64_wrap(n numeric)', 'bigint', `(((n % ${M64}) + ${M64} + 9223372036854775808) % ${M64} - 9223372036854775808)::bigint`),
  sql('u64_add(a bigint, b bigint)', 'bigint', `${S}.u64_wrap(a::numeric + b)`),
  sql('u64_mul(a bigint, b bigint)', 'bigint', `${S}.u64_wrap(a::numeric * b)`),
  // For n from 1 to 63: >> shifts the sign in, the mask clears it.
  sql('u64_shr(a bigint, n integer)', 'bigint', '(a >> n) & ~((-1)::bigint << (64 - n))'),
  sql('u64_rotr(a bigint, n integer)', 'bigint', `${S}.u64_shr(a, n) | (a << (64 - n))`),
  sql('u64_shift_mix(a bigint)', 'bigint', `a # ${S}.u64_shr(a, 47)`),
  // The 8 bytes (4 for u32_fetch) from offset i, least significant first.
  sql(
    'u64_fetch(m bytea, i integer)',
    'bigint',
    `(((((((get_byte(m, i)::bigint | (get_byte(m, i + 1)::bigint << 8)) | (get_byte(m, i + 2)::bigint << 16))
     | (get_byte(m, i + 3)::bigint << 24)) | (get_byte(m, i + 4)::bigint << 32)) | (get_byte(m, i + 5)::bigint << 40)) | (get_byte(m, i + 6)::bigint << 48)) | (get_byte(m, i + 7)::bigint << 56))`,
  ),
  sql(
    'u32_fetch(m bytea, i integer)',
    'bigint',
    '(((get_byte(m, i)::bigint | (get_byte(m, i + 1)::bigint << 8)) | (get_byte(m, i + 2)::bigint << 16)) | (get_byte(m, i + 3)::bigint << 24))',
  ),
  plpgsql(
    'farm_len16(u bigint, v bigint, k bigint)',
    'bigint',
    `
     DECLARE a bigint; b bigint;
     BEGIN
       a := ${mul('u # v', 'k')}; a := a # ${S}.u64_shr(a, 47);
       b := ${mul('v # a', 'k')}; b := b # ${S}.u64_shr(b, 47);
       RETURN ${mul('b', 'k')};
     END`,
  ),
  // WeakHashLen32WithSeeds of the 32 bytes from offset i: the pair as an array.
  plpgsql(
    'farm_weak32(m bytea, i integer, a bigint, b bigint)',
    'bigint[]',
    `
     DECLARE c bigint; z constant bigint := ${fetch('i + 24')};
     BEGIN
       a := ${add('a', fetch('i'))};
       b := ${rot(add('b', 'a', 'z'), 21)};
       c := a;
       a := ${add('a', fetch('i + 8'), fetch('i + 16'))};
       b := ${add('b', rot('a', 44))};
       RETURN ARRAY[${add('a', 'z')}, ${add('b', 'c')}];
     END`,
  ),
  plpgsql(
    'farmfingerprint64(m bytea)',
    'bigint',
    `
     DECLARE
       n constant integer := length(m);
       mu bigint; a bigint; b bigint; c bigint; d bigint; e bigint; f bigint; g bigint; h bigint;
       x bigint; y bigint; z bigint; t bigint; v bigint[]; w bigint[];
       s integer := 0;
     BEGIN
       IF n <= 16 THEN
         IF n >= 8 THEN
           mu := ${add(K2, 'n * 2')};
           a := ${add(fetch('0'), K2)};
           b := ${fetch('n - 8')};
           RETURN ${len16(add(mul(rot('b', 37), 'mu'), 'a'), mul(add(rot('a', 25), 'b'), 'mu'), 'mu')};
         ELSIF n >= 4 THEN
           RETURN ${len16(`n + (${S}.u32_fetch(m, 0) << 3)`, `${S}.u32_fetch(m, n - 4)`, add(K2, 'n * 2'))};
         ELSIF n > 0 THEN
           y := get_byte(m, 0) + (get_byte(m, n >> 1) << 8);
           z := n + (get_byte(m, n - 1) << 2);
           RETURN ${mul(shiftMix(`${mul('y', K2)} # ${mul('z', K0)}`), K2)};
         END IF;
         RETURN ${K2};
       ELSIF n <= 32 THEN
         mu := ${add(K2, 'n * 2')};
         a := ${mul(fetch('0'), K1)};
         b := ${fetch('8')};
         c := ${mul(fetch('n - 8'), 'mu')};
         d := ${mul(fetch('n - 16'), K2)};
         RETURN ${len16(add(rot(add('a', 'b'), 43), rot('c', 30), 'd'), add('a', rot(add('b', K2), 18), 'c'), 'mu')};
       ELSIF n <= 64 THEN
         mu := ${add(K2, 'n * 2')};
         a := ${mul(fetch('0'), K2)};
         b := ${fetch('8')};
         c := ${mul(fetch('n - 8'), 'mu')};
         d := ${mul(fetch('n - 16'), K2)};
         y := ${add(rot(add('a', 'b'), 43), rot('c', 30), 'd')};
         z := ${len16('y', add('a', rot(add('b', K2), 18), 'c'), 'mu')};
         e := ${mul(fetch('16'), 'mu')};
         f := ${fetch('24')};
         g := ${mul(add('y', fetch('n - 32')), 'mu')};
         h := ${mul(add('z', fetch('n - 24')), 'mu')};
         RETURN ${len16(add(rot(add('e', 'f'), 43), rot('g', 30), 'h'), add('e', rot(add('f', 'a'), 18), 'g'), 'mu')};
       END IF;
       x := 81;
       y := ${add(mul('81', K1), '113')};
       z := ${mul(shiftMix(add(mul('y', K2), '113')), K2)};
       v := ARRAY[0, 0]; w := ARRAY[0, 0];
       x := ${add(mul('x', K2), fetch('0'))};
       -- Every whole 64-byte block but the one the last byte is in.
       LOOP
         x := ${mul(rot(add('x', 'y', 'v[1]', fetch('s + 8')), 37), K1)};
         y := ${mul(rot(add('y', 'v[2]', fetch('s + 48')), 42), K1)};
         x := x # w[2];
         y := ${add('y', 'v[1]', fetch('s + 40'))};
         z := ${mul(rot(add('z', 'w[1]'), 33), K1)};
         v := ${weak32('s', mul('v[2]', K1), add('x', 'w[1]'))};
         w := ${weak32('s + 32', add('z', 'w[2]'), add('y', fetch('s + 16')))};
         t := z; z := x; x := t;
         s := s + 64;
         EXIT WHEN s = (n - 1) / 64 * 64;
       END LOOP;
       -- The last 64 bytes.
       mu := ${add(K1, '(z & 255) << 1')};
       s := n - 64;
       w[1] := ${add('w[1]', '(n - 1) & 63')};
       v[1] := ${add('v[1]', 'w[1]')};
       w[1] := ${add('w[1]', 'v[1]')};
       x := ${mul(rot(add('x', 'y', 'v[1]', fetch('s + 8')), 37), 'mu')};
       y := ${mul(rot(add('y', 'v[2]', fetch('s + 48')), 42), 'mu')};
       x := x # ${mul('w[2]', '9')};
       y := ${add('y', mul('v[1]', '9'), fetch('s + 40'))};
       z := ${mul(rot(add('z', 'w[1]'), 33), 'mu')};
       v := ${weak32('s', mul('v[2]', 'mu'), add('x', 'w[1]'))};
       w := ${weak32('s + 32', add('z', 'w[2]'), add('y', fetch('s + 16')))};
       t := z; z := x; x := t;
       RETURN ${len16(add(len16('v[1]', 'w[1]', 'mu'), mul(shiftMix('y'), K0), 'z'), add(len16('v[2]', 'w[2]', 'mu'), 'x'), 'mu')};
     END`,
  ),
  sql('farmfingerprint64(v text)', 'bigint', `${S}.farmfingerprint64(convert_to(v, 'UTF8'))`),
];

/** In the order of their dependencies. */
export const HASHES: string[] = [...SHA1_CRC32_MURMUR3, ...FARMFINGERPRINT64];
