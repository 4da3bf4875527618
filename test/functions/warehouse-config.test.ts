// The pure parts of functions/commons/warehouse.ts: the mapping of errors to
// transient/permanent classes and the settings read from the environment.
import { ActiveStatementsExceededException, ValidationException } from '@aws-sdk/client-redshift-data';
import { describe, expect, it } from 'vitest';
import { TransientWarehouseError, ValidationError, WarehouseError } from '../../domain/errors.ts';
import { redactRowValues } from '../../domain/redact.ts';
import { classifyApiError, classifySqlError, warehouseFromEnv } from '../../functions/commons/warehouse.ts';

describe('classifySqlError', () => {
  it.each([
    'ERROR: 1023 DETAIL: Serializable isolation violation on table - 123456, transactions forming the cycle are: 1, 2 (pid:3)',
    'ERROR: 1023',
    // The local endpoint's wording of a PostgreSQL serialization failure.
    'ERROR: 1023 DETAIL: Serializable isolation violation on table in Redshift (could not serialize access due to concurrent update)',
    'ERROR: deadlock detected DETAIL: Process 1 waits for AccessExclusiveLock',
    'ERROR: canceling statement due to lock timeout',
    'FATAL: terminating connection due to administrator command',
    'FATAL: sorry, too many clients already',
    'FATAL: the database system is starting up',
    'FATAL: the database system is shutting down',
    'FATAL: the database system is in recovery mode',
    // What the local Data API reports for a server that is down or went away mid-statement.
    'FATAL: connection to server at "127.0.0.1", port 5432 failed: Connection refused',
    'FATAL: connection to server at "127.0.0.1", port 5432 failed: Connection reset by peer',
    'FATAL: connection to server at "127.0.0.1", port 5432 failed: Broken pipe',
    'FATAL: connection to server at "127.0.0.1", port 5432 failed: Network is unreachable',
    'FATAL: Connection terminated unexpectedly',
    // Two Plans running the manifest's idempotent DDL at once; a retry finds the objects in place.
    'ERROR: tuple concurrently updated',
    'ERROR: duplicate key value violates unique constraint "pg_namespace_nspname_index" DETAIL: Key (nspname)=(atomic_publish) already exists.',
  ])('a retryable database message is a TransientWarehouseError: %s', (message) => {
    const error = classifySqlError(message, 'load chunk 3');

    expect(error).toBeInstanceOf(TransientWarehouseError);
    expect(error.name).toBe('TransientWarehouseError');
    expect(error.message).toBe(`load chunk 3: ${redactRowValues(message)}`);
  });

  it.each([
    'ERROR: division by zero',
    'ERROR: relation "public.missing" does not exist',
    'ERROR: syntax error at or near "SELEC"',
    'ERROR: canceling statement due to statement timeout',
    'ERROR: value too long for type character varying(1023)',
    'ERROR: invalid input syntax for type integer: "1023.5"',
    'FATAL: database "no_such_db" does not exist',
    'FATAL: password authentication failed for user "loader"',
  ])('a database message retrying cannot fix is a permanent WarehouseError: %s', (message) => {
    const error = classifySqlError(message, 'load chunk 3');

    expect(error).toBeInstanceOf(WarehouseError);
    expect(error).not.toBeInstanceOf(TransientWarehouseError);
    expect(error.name).toBe('WarehouseError');
    expect(error.message).toBe(`load chunk 3 failed: ${redactRowValues(message)}`);
  });

  it('redacts the row values a message quotes, keeping its wording', () => {
    const error = classifySqlError(
      'ERROR: new row for relation "t" violates check constraint "c" DETAIL: Failing row contains (42, secret-value).',
      'load chunk 3',
    );

    expect(error.message).toBe('load chunk 3 failed: ERROR: new row for relation "t" violates check constraint "c" DETAIL: Failing row contains (<redacted>)');
  });
});

describe('classifyApiError', () => {
  const named = (name: string, message = 'details') => Object.assign(new Error(message), { name });

  it.each([
    'ActiveStatementsExceededException',
    'ActiveSessionsExceededException',
    // The Data API's "environmental error while running" (after the Warehouse found the statement did not run).
    'ExecuteStatementException',
    'BatchExecuteStatementException',
    'InternalServerException',
    'DatabaseConnectionException',
    'ThrottlingException',
    'TooManyRequestsException',
    'ServiceUnavailableException',
    'TimeoutError',
  ])('%s is a TransientWarehouseError that keeps the cause', (name) => {
    const cause = named(name);

    const error = classifyApiError(cause, 'submit x');

    expect(error).toBeInstanceOf(TransientWarehouseError);
    expect(error.message).toBe(`Data API is busy or unavailable while trying to submit x: ${name}: details`);
    expect(error.cause).toBe(cause);
  });

  it("classifies the SDK's own ActiveStatementsExceededException as transient", () => {
    const sdkError = new ActiveStatementsExceededException({ message: 'limit', $metadata: {} });

    expect(classifyApiError(sdkError, 'submit x')).toBeInstanceOf(TransientWarehouseError);
  });

  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN'])(
    'a network error %s (on the error or its cause) is a TransientWarehouseError saying the warehouse is unreachable',
    (code) => {
      const direct = classifyApiError(Object.assign(new Error('socket'), { code }), 'describe y');
      const wrapped = classifyApiError(Object.assign(new Error('wrapped'), { cause: { code } }), 'describe y');

      expect(direct).toBeInstanceOf(TransientWarehouseError);
      expect(direct.message).toBe(`warehouse unreachable while trying to describe y (${code}): socket`);
      expect(wrapped).toBeInstanceOf(TransientWarehouseError);
      expect(wrapped.message).toContain(`(${code})`);
    },
  );

  it.each([
    [new ValidationException({ message: 'Database is required.', $metadata: {} }), 'ValidationException: Database is required.'],
    [named('ResourceNotFoundException', 'Query does not exist.'), 'ResourceNotFoundException: Query does not exist.'],
    [named('AccessDeniedException', 'not allowed'), 'AccessDeniedException: not allowed'],
    [new Error('odd'), 'Error: odd'],
    ['a string', 'Error: a string'],
  ])('anything else (%o) is a permanent WarehouseError', (thrown, detail) => {
    const error = classifyApiError(thrown, 'submit z');

    expect(error).toBeInstanceOf(WarehouseError);
    expect(error).not.toBeInstanceOf(TransientWarehouseError);
    expect(error.message).toBe(`Data API refused to submit z: ${detail}`);
    expect(error.cause).toBe(thrown);
  });

  it.each([new TransientWarehouseError('t'), new WarehouseError('w'), new ValidationError('v')])(
    'passes an already classified %o through unchanged',
    (classified) => {
      expect(classifyApiError(classified, 'anything')).toBe(classified);
    },
  );
});

describe('warehouseFromEnv settings', () => {
  it('rejects a poll cap that is not a positive number, naming the variable', () => {
    const env = { WAREHOUSE_DATABASE: 'dev', WAREHOUSE_WORKGROUP: 'wg', WAREHOUSE_POLL_MAX_MS: 'fast' };
    expect(() => warehouseFromEnv(env)).toThrow(/WAREHOUSE_POLL_MAX_MS must be a positive number/);
  });
});
