// CloudWatch's awsQuery protocol, which clients on botocore before 1.42.7
// (boto3 1.26, AWS CLI v2.9) send: a form-encoded `POST /` answered in XML,
// errors as `<ErrorResponse>` with the model's query codes. Members, types
// and codes come from the SDK's service model (local/cloudwatch-model.ts);
// a request is read into the JSON protocol's form, so one operation serves
// every protocol. Why: docs/decisions/cloudwatch-protocols-from-the-sdk-model.md
// https://smithy.io/2.0/aws/protocols/aws-query-protocol.html
import type http from 'node:http';
import { NormalizedSchema } from '@smithy/core/schema';
import { type AwsJsonError, AwsJsonRequestError, AwsServiceError, type AwsWireProtocol, type AwsWireResponse } from './aws-json-server.ts';
import { CLOUDWATCH_API_VERSION, inputSchema, operationSchema, outputSchema, queryErrorOf } from './cloudwatch-model.ts';

const XMLNS = `http://monitoring.amazonaws.com/doc/${CLOUDWATCH_API_VERSION}/`;

// Characters XML 1.0 cannot hold at all become U+FFFD; the five it reserves become entities.
function escapeXml(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, '\ufffd')
    .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** A member read from the form as its schema types it (a timestamp as epoch seconds, as JSON has it); undefined when absent. */
function readForm(schema: NormalizedSchema, form: ReadonlyMap<string, string>, key: string): unknown {
  if (schema.isStructSchema()) {
    const struct: Record<string, unknown> = {};
    for (const [name, member] of schema.structIterator()) {
      const value = readForm(member, form, key === '' ? name : `${key}.${name}`);
      if (value !== undefined) struct[name] = value;
    }
    return key === '' || Object.keys(struct).length > 0 ? struct : undefined;
  }
  if (schema.isListSchema()) {
    // An empty list is sent as the bare name with an empty value.
    if (form.get(key) === '') return [];
    const items: unknown[] = [];
    for (let i = 1; ; i++) {
      const item = readForm(schema.getValueSchema(), form, `${key}.member.${i}`);
      if (item === undefined) return items.length > 0 ? items : undefined;
      items.push(item);
    }
  }
  if (schema.isMapSchema()) {
    const map: Record<string, unknown> = {};
    for (let i = 1; form.has(`${key}.entry.${i}.key`); i++)
      map[form.get(`${key}.entry.${i}.key`)!] = readForm(schema.getValueSchema(), form, `${key}.entry.${i}.value`);
    return Object.keys(map).length > 0 ? map : undefined;
  }
  const raw = form.get(key);
  if (raw === undefined) return undefined;
  const refuse = (what: string) => new AwsServiceError('InvalidParameterValueException', `The value ${raw} for parameter ${key} is not ${what}.`);
  if (schema.isTimestampSchema()) {
    const ms = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) * 1000 : Date.parse(raw);
    if (Number.isNaN(ms)) throw refuse('an ISO 8601 timestamp');
    return ms / 1000;
  }
  if (schema.isNumericSchema()) {
    const n = raw.trim() === '' ? Number.NaN : Number(raw);
    if (Number.isNaN(n)) throw refuse('a number');
    return n;
  }
  if (schema.isBooleanSchema()) {
    if (raw !== 'true' && raw !== 'false') throw refuse('true or false');
    return raw === 'true';
  }
  return raw;
}

/** A member as an XML element named `name`, as its schema types it; nothing when absent. */
function writeXml(name: string, schema: NormalizedSchema, value: unknown): string {
  if (value === undefined || value === null) return '';
  let inner: string;
  if (schema.isStructSchema()) {
    const struct = value as Record<string, unknown>;
    inner = [...schema.structIterator()].map(([member, memberSchema]) => writeXml(member, memberSchema, struct[member])).join('');
  } else if (schema.isListSchema()) {
    inner = (value as unknown[]).map((item) => writeXml('member', schema.getValueSchema(), item)).join('');
  } else if (schema.isMapSchema()) {
    inner = Object.entries(value as Record<string, unknown>)
      .map(([key, item]) => `<entry><key>${escapeXml(key)}</key>${writeXml('value', schema.getValueSchema(), item)}</entry>`)
      .join('');
  } else if (schema.isTimestampSchema()) {
    // ISO 8601 as CloudWatch writes it: milliseconds only when there are some.
    inner = new Date((value as number) * 1000).toISOString().replace('.000Z', 'Z');
  } else {
    inner = escapeXml(String(value));
  }
  return `<${name}>${inner}</${name}>`;
}

const xmlResponse = (status: number, body: string): AwsWireResponse => ({
  status,
  contentType: 'text/xml',
  body: `<?xml version="1.0" encoding="UTF-8"?>\n${body}`,
});

/** The awsQuery protocol of CloudWatch, for local/aws-json-server.ts. */
export const cloudWatchQueryProtocol: AwsWireProtocol = {
  claims: (req: http.IncomingMessage) =>
    (req.method === 'POST' && String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) ||
    (req.method === 'GET' && /[?&]Action=/.test(req.url ?? '')),
  decode: (req, body) => {
    const form = new Map(new URLSearchParams(req.method === 'GET' ? (req.url ?? '').replace(/^[^?]*\?/, '') : body.toString('utf8')));
    const action = form.get('Action') ?? '';
    if (operationSchema(action) === undefined || form.get('Version') !== CLOUDWATCH_API_VERSION) {
      throw new AwsJsonRequestError(
        'UnknownOperationException',
        `Could not find operation ${action} for version ${form.get('Version') ?? 'NO_VERSION_SPECIFIED'}`,
      );
    }
    return { operation: action, input: readForm(inputSchema(action), form, '') as Record<string, unknown> };
  },
  output: (operation, output, requestId) => {
    const schema = outputSchema(operation);
    const result = schema.isUnitSchema() ? '' : writeXml(`${operation}Result`, schema, output);
    return xmlResponse(
      200,
      `<${operation}Response xmlns="${XMLNS}">${result}<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${operation}Response>`,
    );
  },
  error: (error: AwsJsonError, requestId) => {
    const { code, fault } = queryErrorOf(error.shape);
    return xmlResponse(
      error.status,
      `<ErrorResponse xmlns="${XMLNS}"><Error><Type>${fault}</Type><Code>${escapeXml(code)}</Code><Message>${escapeXml(error.message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
    );
  },
};
