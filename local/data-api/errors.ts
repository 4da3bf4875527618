// Errors of the Data API's model, serialized as AWS JSON 1.1 errors: the SDK
// turns `__type` into the exception class of the same name.

export type ErrorShape =
  | 'ValidationException'
  | 'ResourceNotFoundException'
  | 'ActiveStatementsExceededException'
  | 'ExecuteStatementException'
  | 'BatchExecuteStatementException'
  | 'InternalServerException'
  | 'DatabaseConnectionException'
  | 'UnknownOperationException'
  | 'SerializationException';

/** The shapes the Data API answers with HTTP 500 (the SDK's standard retry retries them). */
const SERVER_ERRORS: ReadonlySet<ErrorShape> = new Set([
  'InternalServerException',
  'ExecuteStatementException',
  'BatchExecuteStatementException',
  'DatabaseConnectionException',
]);

export class DataApiError extends Error {
  readonly shape: ErrorShape;
  readonly httpStatus: number;
  /** Members of the error shape besides `message` (e.g. ResourceId). */
  readonly members: Record<string, string>;

  constructor(shape: ErrorShape, message: string, members: Record<string, string> = {}) {
    super(message);
    this.name = shape;
    this.shape = shape;
    this.httpStatus = SERVER_ERRORS.has(shape) ? 500 : 400;
    this.members = members;
  }
}

export function validation(message: string): DataApiError {
  return new DataApiError('ValidationException', message);
}

export function notFound(id: string, message = 'Query does not exist.'): DataApiError {
  return new DataApiError('ResourceNotFoundException', message, { ResourceId: id });
}
