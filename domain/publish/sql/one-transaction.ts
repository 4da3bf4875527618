/**
 * A publish transaction of any size as one BatchExecuteStatement within the
 * Data API's limits: when its statements outnumber MAX_BATCH_STATEMENTS,
 * each run of consecutive carry-over statements (grants, revokes, keys,
 * policies) goes as CALLs of the manifest's run_statements, which EXECUTEs
 * them in order inside the same transaction (manifest.ts, version 13;
 * docs/decisions/one-transaction-however-large.md).
 */
import { sqlLiteral } from '../../identifiers.ts';
import { MANIFEST as M, MAX_BATCH_STATEMENTS, MAX_SQL_BYTES } from '../../sql/statement.ts';

/**
 * What run_statements may run: statements that need no transaction context
 * of their own and return no rows
 * (https://docs.aws.amazon.com/redshift/latest/dg/stored-procedure-constraints.html),
 * and whose text a string literal carries as written (no backslash or
 * control character: sqlLiteral).
 */
const CARRY_OVER = /^(GRANT|REVOKE|ATTACH|DETACH) |^ALTER TABLE \S+ (ADD CONSTRAINT|DROP CONSTRAINT|ROW LEVEL SECURITY) /;
const NOT_LITERAL = /[\\\u0000-\u001f]/;

/** The most bytes of statements one CALL carries: the procedure's argument is a VARCHAR(65535). */
export const RUN_STATEMENTS_BYTES = 60_000;

export function isCarryOver(sql: string): boolean {
  return CARRY_OVER.test(sql) && !NOT_LITERAL.test(sql);
}

/** Each statement as `<characters>:<text>`, one after another: what run_statements reads. */
export function encodeStatements(statements: readonly string[]): string {
  return statements.map((s) => `${[...s].length}:${s}`).join('');
}

/** The statements `encodeStatements` wrote (the local engine gates each). Throws on a malformed text. */
export function decodeStatements(text: string): string[] {
  const chars = [...text];
  const statements: string[] = [];
  let at = 0;
  while (at < chars.length) {
    const colon = chars.indexOf(':', at);
    const length = Number(chars.slice(at, colon).join(''));
    if (colon < 0 || !Number.isInteger(length) || length <= 0 || colon + 1 + length > chars.length) {
      throw new Error(`malformed run_statements argument at character ${at}`);
    }
    statements.push(chars.slice(colon + 1, colon + 1 + length).join(''));
    at = colon + 1 + length;
  }
  return statements;
}

/** `statements` as the fewest CALLs of run_statements, each argument within RUN_STATEMENTS_BYTES. */
export function runStatementsCalls(statements: readonly string[]): string[] {
  const calls: string[] = [];
  let part: string[] = [];
  const flush = () => {
    if (part.length > 0) calls.push(`CALL ${M}.run_statements(${sqlLiteral(encodeStatements(part))})`);
    part = [];
  };
  for (const sql of statements) {
    if (part.length > 0 && Buffer.byteLength(encodeStatements([...part, sql]), 'utf8') > RUN_STATEMENTS_BYTES) flush();
    part.push(sql);
  }
  flush();
  return calls;
}

/** Within one BatchExecuteStatement's limits: at most MAX_BATCH_STATEMENTS statements and MAX_SQL_BYTES bytes. */
export function fitsOneBatch(statements: readonly string[]): boolean {
  return statements.length <= MAX_BATCH_STATEMENTS && statements.reduce((sum, sql) => sum + Buffer.byteLength(sql, 'utf8'), 0) <= MAX_SQL_BYTES;
}

/**
 * The transaction's statements as they go: as given when they fit one
 * batch; else with every run of two or more consecutive carry-over
 * statements (isCarryOver) as CALLs of run_statements, in the same order.
 * The callers check the result against the limits and refuse what still
 * does not fit (bytes do not shrink).
 */
export function withinOneBatch(statements: readonly string[]): string[] {
  if (fitsOneBatch(statements)) return [...statements];
  const out: string[] = [];
  let run: string[] = [];
  const flush = () => {
    out.push(...(run.length > 1 ? runStatementsCalls(run) : run));
    run = [];
  };
  for (const sql of statements) {
    if (isCarryOver(sql)) {
      run.push(sql);
      continue;
    }
    flush();
    out.push(sql);
  }
  flush();
  return out;
}
