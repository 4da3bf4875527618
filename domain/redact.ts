/**
 * Row values out of database error messages, which become the step's error, the
 * page, the manifest's `error` and the execution history: the quoted values of a
 * refused row are replaced by REDACTED, the rest (what failed, on which column,
 * table or constraint) kept. Why: docs/decisions/logs-and-traces.md ("Redacted at the source")
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
