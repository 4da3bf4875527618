// What CloudWatch refuses in a request, in its words, and its paging
// tokens: the checks the local endpoint's operations share. Each error is
// the model's shape (the JSON protocol's `__type`; local/cloudwatch-query.ts
// maps it to the query code). Messages follow those CloudWatch sends where
// they are known ("The parameter StartTime must be less than the parameter
// EndTime.", "1 validation error detected: Value '200' at 'maxRecords'
// failed to satisfy constraint: ...").
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/CommonErrors.html
import { AwsServiceError } from './aws-json-server.ts';

export const invalid = (message: string) => new AwsServiceError('InvalidParameterValueException', message);
/** AWS's common ValidationError (not in the model: its JSON shape is ValidationException). */
export const validation = (message: string) => new AwsServiceError('ValidationException', message);
export const combination = (message: string) => new AwsServiceError('InvalidParameterCombinationException', message);
export const missing = (parameter: string) => new AwsServiceError('MissingRequiredParameterException', `The parameter ${parameter} is required.`);
export const exclusive = (a: string, b: string) => combination(`The parameters ${a} and ${b} are mutually exclusive and you have specified both.`);

/** A model constraint a value breaks, as the service's validation layer words it (`member` in the model's case; the message has it camel-cased). */
function constraint(value: unknown, member: string, rule: string): AwsServiceError {
  const shown = Array.isArray(value) ? `[${value.join(', ')}]` : String(value);
  return validation(`1 validation error detected: Value '${shown}' at '${member[0]!.toLowerCase()}${member.slice(1)}' failed to satisfy constraint: ${rule}`);
}

/** An optional enum member: undefined or one of `allowed`. */
export function optionalEnum<T extends string>(value: unknown, member: string, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw constraint(value, member, `Member must satisfy enum value set: [${allowed.join(', ')}]`);
}

/** An optional integer member within [min, max]. */
export function optionalRange(value: unknown, member: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw constraint(value, member, 'Member must be an integer');
  if (value < min) throw constraint(value, member, `Member must have value greater than or equal to ${min}`);
  if (value > max) throw constraint(value, member, `Member must have value less than or equal to ${max}`);
  return value;
}

/** An optional list member of at most `max` items. */
export function optionalList<T>(value: unknown, member: string, max: number): T[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw constraint(value, member, 'Member must be a list');
  if (value.length > max) throw constraint(value, member, `Member must have length less than or equal to ${max}`);
  return value as T[];
}

export interface Page<T> {
  readonly items: T[];
  /** The token of the next page; absent on the last. */
  readonly nextToken?: string;
}

/**
 * One page of `items`, ordered by `keyOf`, after the item the token names.
 * A token holds the last key it returned, so a page stays right when items
 * are added between calls (ListMetrics while metrics arrive).
 */
export function pageOf<T>(items: readonly T[], keyOf: (item: T) => string, nextToken: unknown, size: number, refuseToken: () => Error): Page<T> {
  let after: string | undefined;
  if (nextToken !== undefined) {
    try {
      const decoded = JSON.parse(Buffer.from(String(nextToken), 'base64url').toString('utf8')) as { after?: unknown };
      if (typeof decoded.after !== 'string') throw new Error('no key');
      after = decoded.after;
    } catch {
      throw refuseToken();
    }
  }
  const sorted = [...items].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  const rest = after === undefined ? sorted : sorted.filter((item) => keyOf(item) > after);
  const chosen = rest.slice(0, size);
  return rest.length > size
    ? { items: chosen, nextToken: Buffer.from(JSON.stringify({ after: keyOf(chosen.at(-1)!) })).toString('base64url') }
    : { items: chosen };
}
