// The pieces every section of the pipeline spec's schema is made of: a field
// checked by a function that names what is wrong, bounded integers,
// defaults, sections that may be left out (docs/decisions/code-layout-and-contracts.md).
import { z } from 'zod';
import { identifierProblem } from './identifiers.ts';

/** A field checked by a function that says what is wrong with it (undefined: nothing), or rejects it with that. */
export function checked<T>(problem: (value: unknown) => string | undefined) {
  return z.unknown().transform((value, ctx) => {
    const found = problem(value);
    if (found === undefined) return value as T;
    ctx.addIssue({ code: 'custom', message: found });
    return z.NEVER;
  });
}

/** A whole number in `[min, max]`, with one message for every way of missing it. */
export function integer(min: number, max: number, why = '') {
  const message = `must be an integer from ${min} to ${max}${why}`;
  return z.number({ error: message }).refine((n) => Number.isInteger(n) && n >= min && n <= max, { error: message });
}

/** A whole number of at least 1, with one message for every way of missing it. */
export function positiveInteger(why = '') {
  const message = `must be a positive integer${why}`;
  return z.number({ error: message }).refine((n) => Number.isSafeInteger(n) && n >= 1, { error: message });
}

/** A field that takes `fallback` when left out or null (as a JSON-sourced spec may say). */
export function withDefault<S extends z.ZodType>(schema: S, fallback: z.output<S>) {
  return z.preprocess((value) => value ?? undefined, schema.optional()).transform((value) => value ?? fallback);
}

/** A section of the spec: an object, or left out (then every field takes its default or reports itself missing). */
export function section<Shape extends z.core.$ZodLooseShape>(shape: Shape) {
  return z.preprocess((value) => value ?? {}, z.object(shape, { error: 'must be an object' }));
}

export const identifier = checked<string>(identifierProblem);

/** A query without surrounding blanks and trailing semicolons: it is wrapped as `(<sql>) AS src`. */
export function normalizeSourceSql(sql: string): string {
  return sql.replace(/[\s;]+$/, '').trim();
}
