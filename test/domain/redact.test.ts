// Row values out of database error messages (domain/redact.ts): each
// wording PostgreSQL and Redshift quote values in, and what is kept.
import { describe, expect, it } from 'vitest';
import { REDACTED, redactRowValues } from '../../domain/redact.ts';

describe('redactRowValues', () => {
  it.each([
    [
      'a NOT NULL violation quoting the failing row, to the end of the message (a value may hold parentheses)',
      'ERROR: null value in column "customer_id" of relation "s" violates not-null constraint DETAIL: Failing row contains (4242, 7, (x) y, null, 77123.45).',
      `ERROR: null value in column "customer_id" of relation "s" violates not-null constraint DETAIL: Failing row contains (${REDACTED})`,
    ],
    [
      'a unique violation: the key columns kept, their values not',
      'ERROR: duplicate key value violates unique constraint "pk" DETAIL: Key (order_id, line_no)=(4242, 7) already exists.',
      `ERROR: duplicate key value violates unique constraint "pk" DETAIL: Key (order_id, line_no)=(${REDACTED}) already exists.`,
    ],
    [
      'a foreign key violation',
      'ERROR: insert or update on table "l" violates foreign key constraint "fk" DETAIL: Key (customer_id)=(991) is not present in table "customers".',
      `ERROR: insert or update on table "l" violates foreign key constraint "fk" DETAIL: Key (customer_id)=(${REDACTED}) is not present in table "customers".`,
    ],
    ['a cast', 'ERROR: invalid input syntax for type integer: "77123.45"', `ERROR: invalid input syntax for type integer: "${REDACTED}"`],
    ['an enum', 'ERROR: invalid input value for enum mood: "gloomy"', `ERROR: invalid input value for enum mood: "${REDACTED}"`],
    ['a range', 'ERROR: value "99999999999" is out of range for type integer', `ERROR: value "${REDACTED}" is out of range for type integer`],
    ["Redshift's load error", "ERROR: Invalid digit, Value 'x7', Pos 0, Type: Integer", `ERROR: Invalid digit, Value '${REDACTED}', Pos 0, Type: Integer`],
    [
      'an API validation error quoting a parameter value',
      "1 validation error detected: Value 'hunter2' at 'parameters.1.member.value' failed to satisfy constraint",
      `1 validation error detected: Value '${REDACTED}' at 'parameters.1.member.value' failed to satisfy constraint`,
    ],
  ])('redacts %s', (_, message, redacted) => {
    expect(redactRowValues(message)).toBe(redacted);
  });

  it.each([
    'ERROR: division by zero',
    'ERROR: relation "analytics.sales_order_lines__stg_1" does not exist',
    'ERROR: 1023 DETAIL: Serializable isolation violation on table - 123456, transactions forming the cycle are: 1, 2 (pid:3)',
    'ERROR: value too long for type character varying(10)',
  ])('leaves a message that quotes no value as it is: %s', (message) => {
    expect(redactRowValues(message)).toBe(message);
  });
});
