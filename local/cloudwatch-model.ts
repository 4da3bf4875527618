// CloudWatch's service model as @aws-sdk/client-cloudwatch ships it: the
// operation and error schemas its clients serialize with. The local
// endpoint's protocols other than JSON read and write each operation's
// members by them (names, types, lists and maps, timestamps), and take the
// query error codes from them, so nothing of the model is written down
// twice here and a newer client's model is the endpoint's too.
// https://smithy.io/2.0/aws/protocols/aws-query-protocol.html#aws-protocols-awsqueryerror-trait
import * as model from '@aws-sdk/client-cloudwatch';
import { NormalizedSchema } from '@smithy/core/schema';

export const CLOUDWATCH_API_VERSION = '2010-08-01';
/** The service's shape name: the JSON protocol's X-Amz-Target prefix and the CBOR protocol's path. */
export const CLOUDWATCH_SERVICE_TARGET = 'GraniteServiceVersion20100801';
/** The model's namespace, of an error's absolute shape id (`com.amazonaws.cloudwatch#ResourceNotFound`). */
export const CLOUDWATCH_NAMESPACE = 'com.amazonaws.cloudwatch';

/** An operation's schema: `[9, namespace, name, traits, input, output]`. */
type OperationSchema = readonly [number, string, string, unknown, unknown, unknown];

function schemaNamed(name: string): unknown {
  return Object.hasOwn(model, `${name}$`) ? (model as unknown as Record<string, unknown>)[`${name}$`] : undefined;
}

export function operationSchema(operation: string): OperationSchema | undefined {
  const schema = schemaNamed(operation);
  return Array.isArray(schema) && schema[0] === 9 ? (schema as unknown as OperationSchema) : undefined;
}

/** Query codes of the errors the model leaves out: AWS's common errors. */
const COMMON_ERRORS: Readonly<Record<string, { code: string; status: number }>> = {
  ValidationException: { code: 'ValidationError', status: 400 },
  UnknownOperationException: { code: 'InvalidAction', status: 400 },
};

export interface QueryError {
  readonly code: string;
  readonly status: number;
  /** Who is at fault: the `Type` of an XML error, the part after `;` of `x-amzn-query-error`. */
  readonly fault: 'Sender' | 'Receiver';
}

/**
 * An error shape's awsQuery code and HTTP status: the model's awsQueryError
 * trait (InvalidParameterValueException: InvalidParameterValue, 400;
 * ResourceNotFound: 404), else AWS's common error codes, else the shape's
 * own name with 400.
 */
export function queryErrorOf(shape: string): QueryError {
  const schema = schemaNamed(shape);
  const trait = schema === undefined ? undefined : (NormalizedSchema.of(schema as never).getMergedTraits().awsQueryError as [string, number] | undefined);
  const { code, status } = trait ? { code: trait[0], status: trait[1] } : (COMMON_ERRORS[shape] ?? { code: shape, status: 400 });
  return { code, status, fault: status >= 500 ? 'Receiver' : 'Sender' };
}

export const inputSchema = (operation: string) => NormalizedSchema.of(operationSchema(operation)![4] as never);
export const outputSchema = (operation: string) => NormalizedSchema.of(operationSchema(operation)![5] as never);
