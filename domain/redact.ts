/**
 * Row values out of database error messages. A statement's error text
 * travels far: into the step's error, the Catch's `$.error`, the execution
 * history (Step Functions' execution log, with execution data), the
 * manifest's `error`, the failure page and the functions' logs. The
 * statements themselves carry no values (values are parameters), but the
 * database quotes values of the row it refused; those parts are replaced by
 * REDACTED, the rest of the message (what failed, on which column, table or
 * constraint) is kept. See docs/decisions/logs-and-traces.md, "What the logs
 * may carry".
 */

export const REDACTED = '<redacted>';

/** PostgreSQL and Redshift wordings that quote a row's values, each with the part to keep. */
const VALUE_QUOTES: readonly (readonly [RegExp, string])[] = [
  // PostgreSQL, a NOT NULL or CHECK violation: `DETAIL: Failing row contains (1, 2, ...).` — the whole row, to
  // the end of the message (a value may hold parentheses, so the row's end cannot be found reliably).
  [/Failing row contains \(.*$/s, `Failing row contains (${REDACTED})`],
  // PostgreSQL, a unique or foreign key violation: `Key (order_id, line_no)=(42, 1) already exists.` — the columns are kept.
  [/Key \(([^)]*)\)=\(.*?\)(?= already exists| is not present| is still referenced| conflicts|\.?$)/gs, `Key ($1)=(${REDACTED})`],
  // PostgreSQL and Redshift, a cast: `invalid input syntax for type integer: "abc"`, `invalid input value for enum mood: "x"`.
  [/(invalid input (?:syntax|value) for (?:type|enum) [^:"]+): ".*?"(?=\s|$|\.)/gs, `$1: "${REDACTED}"`],
  // PostgreSQL: `value "99999999999" is out of range for type integer`.
  [/value ".*?" is out of range/gs, `value "${REDACTED}" is out of range`],
  // Redshift's load errors: `Invalid digit, Value 'x', Pos 0, Type: Integer`.
  [/Value '.*?'(?=,|\s|$)/gs, `Value '${REDACTED}'`],
];

/** `message` with every quoted row value replaced by REDACTED. */
export function redactRowValues(message: string): string {
  return VALUE_QUOTES.reduce((text, [pattern, replacement]) => text.replace(pattern, replacement), message);
}
