import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../domain/errors.ts';
import {
  databaseUserProblem,
  formatTimestamp,
  MAX_IDENTIFIER_LENGTH,
  qualifiedName,
  quoteIdent,
  quoteUser,
  sqlLiteral,
  validateIdentifier,
} from '../../domain/identifiers.ts';
import { errorOf } from './fixtures.ts';

describe('quoteIdent', () => {
  it.each(['sales_2026', '_private', 'a', 'order', 'x'.repeat(MAX_IDENTIFIER_LENGTH)])('double-quotes the valid lower-case name %s', (name) => {
    expect(quoteIdent(name)).toBe(`"${name}"`);
  });

  it.each([
    ['a"b', /not allowed/],
    ['a;drop table x', /not allowed/],
    ['A', /not allowed.*lower-case/],
    ['Sales', /not allowed/],
    ['1abc', /not allowed.*starting with a letter or underscore/],
    ['', /non-empty/],
    ['x'.repeat(MAX_IDENTIFIER_LENGTH + 1), /longer than 63 characters/],
    ['x'.repeat(200), /longer than 63 characters/],
    ['café', /not allowed/],
    ['ｓales', /not allowed/],
    ['sales table', /not allowed/],
    [' sales', /not allowed/],
    ['sales\n', /not allowed/],
    ['--', /not allowed/],
    ['a--b', /not allowed/],
    ['a.b', /not allowed/],
    ['a-b', /not allowed/],
    ["a'b", /not allowed/],
    ['a\\b', /not allowed/],
    ['a\u0000b', /not allowed/],
  ])('rejects the hostile or invalid name %j with a ValidationError saying why', (name, why) => {
    const error = errorOf(() => quoteIdent(name));

    expect(error).toBeInstanceOf(ValidationError);
    expect(error.name).toBe('ValidationError');
    expect(error.message).toMatch(why);
  });

  it.each([undefined, null, 42, {}, ['a']])('rejects the non-string %j', (name) => {
    expect(() => validateIdentifier(name)).toThrow(ValidationError);
  });

  it('names the field being validated in the message', () => {
    expect(() => validateIdentifier('Bad', 'target.table')).toThrow(/^target\.table "Bad" is not allowed/);
  });

  it('quotes a bounded part of a megabyte-long name and says how long it was', () => {
    const error = errorOf(() => validateIdentifier('n'.repeat(1024 * 1024), 'timeColumn'));

    expect(error.message.length).toBeLessThan(400);
    expect(error.message).toMatch(/^timeColumn "n+\.\.\. \(1048578 characters\) is longer than 63 characters$/);
  });

  it('returns a valid name unchanged from validateIdentifier', () => {
    expect(validateIdentifier('sales_2026')).toBe('sales_2026');
  });
});

describe('quoteUser', () => {
  it('quotes a plain user and the names the Data API gives IAM identities', () => {
    expect(quoteUser('etl_user')).toBe('"etl_user"');
    expect(quoteUser('IAMR:atomic-publish-steps')).toBe('"IAMR:atomic-publish-steps"');
    expect(quoteUser('IAM:ops.admin@example+1')).toBe('"IAM:ops.admin@example+1"');
  });

  it.each([
    ['a double quote', 'IAMR:x"y'],
    ['an upper-case plain name', 'EtlUser'],
    ['a role name longer than IAM allows', `IAMR:${'r'.repeat(65)}`],
    ['an unknown prefix', 'IAMX:role'],
    ['an empty role name', 'IAMR:'],
    ['a space', 'etl user'],
  ])('refuses %s', (_, name) => {
    expect(errorOf(() => quoteUser(name))).toBeInstanceOf(ValidationError);
    expect(databaseUserProblem(name)).toBeDefined();
  });
});

describe('qualifiedName', () => {
  it('quotes schema and table separately', () => {
    expect(qualifiedName('analytics', 'orders')).toBe('"analytics"."orders"');
  });

  it.each([
    ['Analytics', 'orders'],
    ['analytics', 'orders"; drop table x; --'],
    ['analytics.x', 'orders'],
  ])('rejects an invalid part (%j, %j)', (schema, table) => {
    expect(() => qualifiedName(schema, table)).toThrow(ValidationError);
  });
});

describe('sqlLiteral', () => {
  it.each([
    ['plain', "'plain'"],
    ["it's", "'it''s'"],
    ["''", "''''''"],
    ["'; DROP TABLE x; --", "'''; DROP TABLE x; --'"],
    ['', "''"],
    ['Zürich €', "'Zürich €'"],
  ])('renders the string %j with single quotes doubled as %s', (value, expected) => {
    expect(sqlLiteral(value)).toBe(expected);
  });

  it.each([
    [0, '0'],
    [42, '42'],
    [-7, '-7'],
    [1.5, '1.5'],
  ])('renders the finite number %d as %s', (value, expected) => {
    expect(sqlLiteral(value)).toBe(expected);
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])('rejects the non-finite number %d', (value) => {
    expect(() => sqlLiteral(value)).toThrow(ValidationError);
  });

  it('renders booleans and null as SQL keywords', () => {
    expect(sqlLiteral(true)).toBe('TRUE');
    expect(sqlLiteral(false)).toBe('FALSE');
    expect(sqlLiteral(null)).toBe('NULL');
  });

  it('renders a Date as a timestamp in its UTC text form with milliseconds', () => {
    expect(sqlLiteral(new Date('2026-01-02T03:04:05.678Z'))).toBe("CAST('2026-01-02 03:04:05.678' AS timestamp)");
  });

  it('renders a Date created with a zone offset in UTC', () => {
    expect(sqlLiteral(new Date('2026-03-29T02:30:00+02:00'))).toContain("'2026-03-29 00:30:00.000'");
  });

  it('rejects an invalid Date', () => {
    expect(() => sqlLiteral(new Date('not a date'))).toThrow(ValidationError);
  });

  it.each(['back\\slash', '\\', "\\'", 'new\nline', 'tab\there', 'nul\u0000', 'esc\u001b[0m', 'cr\r'])(
    'refuses the string %j with a backslash or control character instead of escaping it',
    (value) => {
      const error = errorOf(() => sqlLiteral(value));

      expect(error).toBeInstanceOf(ValidationError);
      expect(error.message).toMatch(/backslash or control character/);
    },
  );
});

describe('formatTimestamp', () => {
  it('drops the T and Z of the ISO form', () => {
    expect(formatTimestamp(new Date('2026-12-31T23:59:59.999Z'))).toBe('2026-12-31 23:59:59.999');
  });
});
