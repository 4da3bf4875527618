// Redshift's syntax that PostgreSQL parses differently, rewritten into calls
// that give Redshift's results (PostgreSQL's functions or functions.ts's), by
// edits at token and parse-tree locations (domain/redshift-sql/text-edits.ts):
// the rest of the text, `$n` parameters included, runs as written.
// beforeParse turns the words PostgreSQL's grammar rejects into its grammar, as
// the synth-time checks do (domain/redshift-sql/postgres-grammar.ts);
// withRedshiftSyntax runs on what the gate let through, as some results call
// functions the gate refuses in a user's text (array_agg). Only unqualified
// names are Redshift's (`pg_catalog.decode` stays). Each rewrite and its page:
// docs/redshift.md#redshifts-functions-locally; why: docs/decisions/redshift-functions-locally.md

import { quoteIdent } from '../../../domain/identifiers.ts';
import { walk } from '../../../domain/redshift-sql/ast.ts';
import { parsePositional, type Token } from '../../../domain/redshift-sql/parser.ts';
import { matching, type Rewrite, render, tokensOf } from '../../../domain/redshift-sql/text-edits.ts';
import { SYSTEM_VIEWS_SCHEMA } from '../system-views.ts';
import { DATE_PART_NAMES, DATE_PARTS } from './date-parts.ts';

/** `text` with the Redshift words PostgreSQL's grammar rejects rewritten; unchanged when it has none. */
export { inPostgresGrammar as beforeParse } from '../../../domain/redshift-sql/postgres-grammar.ts';

type Fields = Record<string, unknown>;

const AFTER_GATE = /\b(nvl|decode|dateadd|datediff|date_part|sysdate|listagg|extract)\b/i;

/** `text` (that PostgreSQL parses) with Redshift's functions and syntax as PostgreSQL runs them; unchanged when it has none. */
export function withRedshiftSyntax(text: string): string {
  if (!AFTER_GATE.test(text)) return text;
  let statements;
  try {
    statements = parsePositional(text);
  } catch {
    return text; // the database reports what is wrong with it
  }
  const tokens = tokensOf(text);
  if (!tokens) return text;
  const at = new Map(tokens.map((t, i) => [t.start, i]));
  const rewrites: Rewrite[] = [];
  for (const { node } of statements) {
    walk(node, ({ kind, fields }) => {
      const rewrite =
        kind === 'FuncCall'
          ? (call(fields, tokens, at) ?? extract(fields, tokens, at))
          : kind === 'ColumnRef'
            ? sysdate(fields, tokens, at)
            : kind === 'ResTarget'
              ? columnName(fields, tokens, at)
              : undefined;
      if (rewrite) rewrites.push(rewrite);
    });
  }
  return rewrites.length === 0 ? text : render(Buffer.from(text), rewrites);
}

const S = quoteIdent(SYSTEM_VIEWS_SCHEMA);

function sysdate(fields: Fields, tokens: Token[], at: Map<number, number>): Rewrite | undefined {
  const parts = fieldNames(fields.fields);
  const token = tokens[at.get(Number(fields.location)) ?? -1];
  if (parts.length !== 1 || parts[0] !== 'sysdate' || token?.text.toLowerCase() !== 'sysdate') return undefined;
  return { start: token.start, end: token.end, build: () => `${S}.sysdate()` };
}

/** Redshift's default column names of the calls whose local form would name the column otherwise (the pages' examples). */
const COLUMN_NAMES: Record<string, string> = { dateadd: 'date_add', datediff: 'date_diff', date_part: 'pgdate_part', listagg: 'listagg' };

function columnName(fields: Fields, tokens: Token[], at: Map<number, number>): Rewrite | undefined {
  const target = (fields.val as Fields | undefined)?.FuncCall as Fields | undefined;
  const name = target && fieldNames(target.funcname).join('.');
  const column =
    name === undefined ? undefined : name === 'pg_catalog.extract' && target!.funcformat === 'COERCE_SQL_SYNTAX' ? 'date_part' : COLUMN_NAMES[name];
  if (fields.name !== undefined || !target || !column || target.over !== undefined) return undefined;
  const first = at.get(Number(target.location));
  const close = first === undefined || tokens[first + 1]?.text !== '(' ? undefined : matching(tokens, first + 1);
  if (close === undefined) return undefined;
  return { start: tokens[close]!.end, end: tokens[close]!.end, build: () => ` AS ${column}` };
}

/** The unit each of Redshift's part names stands for. */
const UNIT_OF = new Map(Object.entries(DATE_PARTS).flatMap(([unit, names]) => names.map((n) => [n, unit] as const)));

function extract(fields: Fields, tokens: Token[], at: Map<number, number>): Rewrite | undefined {
  if (fieldNames(fields.funcname).join('.') !== 'pg_catalog.extract' || fields.funcformat !== 'COERCE_SQL_SYNTAX') return undefined;
  const part = (fields.args as Fields[] | undefined)?.[0]?.A_Const as Fields | undefined;
  const unit = UNIT_OF.get(String((part?.sval as Fields | undefined)?.sval ?? '').toLowerCase());
  const token = tokens[at.get(Number(part?.location)) ?? -1];
  if (!unit || !token || token.text.startsWith("'") || (token.text.toLowerCase() === unit && !EXTRACT_PARTS.has(unit))) return undefined;
  const first = at.get(Number(fields.location));
  const close = first === undefined || tokens[first + 1]?.text !== '(' ? undefined : matching(tokens, first + 1);
  const from = tokens.indexOf(token) + 1;
  if (EXTRACT_PARTS.has(unit) && close !== undefined && tokens[from]?.text.toLowerCase() === 'from' && from + 1 < close) {
    const [start, end] = [tokens[from + 1]!.start, tokens[close - 1]!.end];
    return { start: tokens[first!]!.start, end: tokens[close]!.end, build: (r) => `${S}.extract_part('${unit}', ${r(start, end)})` };
  }
  return { start: token.start, end: token.end, build: () => unit };
}

/** The parts whose EXTRACT differs from PostgreSQL's (functions.ts, extract_part). */
const EXTRACT_PARTS = new Set(['second', 'millisecond', 'microsecond', 'decade']);

function call(fields: Fields, tokens: Token[], at: Map<number, number>): Rewrite | undefined {
  const name = fieldNames(fields.funcname);
  if (name.length !== 1 || (fields.over !== undefined && name[0] !== 'listagg')) return undefined;
  const first = at.get(Number(fields.location));
  if (first === undefined || tokens[first + 1]?.text !== '(') return undefined;
  const close = matching(tokens, first + 1);
  if (close === undefined) return undefined;
  const start = tokens[first]!.start;
  const end = tokens[close]!.end;
  const { args, distinct, order } = callParts(tokens, first + 1, close);
  const argNodes = Array.isArray(fields.args) ? (fields.args as Fields[]) : [];
  switch (name[0]) {
    case 'nvl':
      return { start, end: tokens[first]!.end, build: () => 'COALESCE' };
    case 'decode':
      if (args.length < 3) return undefined;
      return {
        start,
        end,
        build: (r) => {
          const [e, ...rest] = args.map((a) => `(${r(a.start, a.end)})`);
          const arms: string[] = [];
          for (let i = 0; i + 1 < rest.length; i += 2) arms.push(`WHEN ${e} IS NOT DISTINCT FROM ${rest[i]} THEN ${rest[i + 1]}`);
          return `CASE ${arms.join(' ')}${rest.length % 2 === 1 ? ` ELSE ${rest.at(-1)}` : ''} END`;
        },
      };
    case 'dateadd':
    case 'datediff':
    case 'date_part': {
      const part = argNodes[0]?.ColumnRef as Fields | undefined;
      const word = part && fieldNames(part.fields);
      if (!word || word.length !== 1 || !DATE_PART_NAMES.has(word[0]!.toLowerCase()) || !args[0]) return undefined;
      return { start: args[0].start, end: args[0].end, build: () => `'${word[0]!.toLowerCase()}'` };
    }
    case 'listagg': {
      if (args.length < 1 || args.length > 2 || fields.agg_filter !== undefined) return undefined;
      const window = fields.over === undefined ? undefined : partitionOnly(fields.over as Fields, tokens, close);
      if (fields.over !== undefined && (!window || distinct)) return undefined;
      return {
        start,
        end: window?.end ?? end,
        build: (r) => {
          const value = r(args[0]!.start, args[0]!.end);
          const ordered = order ? ` ORDER BY ${r(order.start, order.end)}` : '';
          const delimiter = args[1] ? r(args[1].start, args[1].end) : "''";
          const nonEmpty = `FILTER (WHERE (${value})::text <> '')`;
          if (!window) return `array_to_string(array_agg(${distinct ? 'DISTINCT ' : ''}${value}${ordered}) ${nonEmpty}, ${delimiter})`;
          // r_WF_LISTAGG: the whole partition, in the WITHIN GROUP order (PostgreSQL has no ordered aggregate in a window).
          const partition = window.inner ? `${r(window.inner.start, window.inner.end)} ` : '';
          return `array_to_string(array_agg(${value}) ${nonEmpty} OVER (${partition}${ordered.trimStart()}${ordered ? ' ' : ''}ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), ${delimiter})`;
        },
      };
    }
    default:
      return undefined;
  }
}

/** The span of `OVER ( [PARTITION BY ...] )` after a call's closing token, and of its contents; undefined for another window. */
function partitionOnly(over: Fields, tokens: Token[], close: number): { end: number; inner?: Span } | undefined {
  const clause = (over.WindowDef ?? over) as Fields;
  if (clause.orderClause !== undefined || clause.refname !== undefined || tokens[close + 1]?.text.toLowerCase() !== 'over' || tokens[close + 2]?.text !== '(')
    return undefined;
  const shut = matching(tokens, close + 2);
  if (shut === undefined) return undefined;
  return { end: tokens[shut]!.end, ...(shut > close + 3 ? { inner: { start: tokens[close + 3]!.start, end: tokens[shut - 1]!.end } } : {}) };
}

interface Span {
  start: number;
  end: number;
}

/** The arguments of a call whose parentheses are tokens `open` and `close`: a leading DISTINCT, the comma-separated spans, an ORDER BY list. */
function callParts(tokens: Token[], open: number, close: number): { args: Span[]; distinct: boolean; order?: Span } {
  let from = open + 1;
  const distinct = tokens[from]?.text.toLowerCase() === 'distinct';
  if (distinct) from++;
  const args: Span[] = [];
  let order: Span | undefined;
  let depth = 0;
  let argStart = from;
  for (let i = from; i < close; i++) {
    const text = tokens[i]!.text.toLowerCase();
    if (text === '(') depth++;
    else if (text === ')') depth--;
    else if (depth === 0 && text === ',') {
      args.push({ start: tokens[argStart]!.start, end: tokens[i - 1]!.end });
      argStart = i + 1;
    } else if (depth === 0 && text === 'order' && tokens[i + 1]?.text.toLowerCase() === 'by') {
      if (i > argStart) args.push({ start: tokens[argStart]!.start, end: tokens[i - 1]!.end });
      order = { start: tokens[i + 2]!.start, end: tokens[close - 1]!.end };
      return { args, distinct, order };
    }
  }
  if (close > argStart) args.push({ start: tokens[argStart]!.start, end: tokens[close - 1]!.end });
  return { args, distinct };
}

function fieldNames(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((item) => (item as { String?: { sval?: string } }).String?.sval ?? '\0');
}
