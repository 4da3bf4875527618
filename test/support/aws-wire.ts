// A request to a local endpoint in the bytes the AWS CLI v2 and boto3 (botocore)
// send for the AWS JSON protocols, not the JS SDK's: `POST /`, `Content-Type:
// application/x-amz-json-1.0` or `-1.1`, `X-Amz-Target: <prefix>.<Operation>`, a
// SigV4 Authorization header (only its access key id is read), the members given.
//
//   const r = await awsJsonRequest(endpoint, { protocol: '1.1', service: 'redshift-data', target: 'RedshiftData.ListTables', body: { ... } });

export interface AwsJsonRequest {
  readonly protocol: '1.0' | '1.1';
  /** The signing name (`redshift-data`, `states`). */
  readonly service: string;
  /** `RedshiftData.ListTables`, `AWSStepFunctions.DescribeStateMachine`. */
  readonly target: string;
  readonly body: Record<string, unknown>;
  /** @default 'AKIDLOCALCLI' */
  readonly accessKeyId?: string;
}

export interface AwsJsonResponse {
  readonly status: number;
  readonly contentType: string | null;
  /** `x-amzn-ErrorType`, which botocore reads before `__type`. */
  readonly errorType: string | null;
  readonly body: Record<string, unknown>;
}

export async function awsJsonRequest(endpoint: string, request: AwsJsonRequest): Promise<AwsJsonResponse> {
  const now = new Date();
  const amzDate = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const scope = `${amzDate.slice(0, 8)}/us-east-1/${request.service}/aws4_request`;
  const response = await fetch(`${endpoint}/`, {
    method: 'POST',
    headers: {
      'Content-Type': `application/x-amz-json-${request.protocol}`,
      'X-Amz-Target': request.target,
      'X-Amz-Date': amzDate,
      'User-Agent': 'aws-cli/2.27.0 md/awscrt#0.26.1 ua/2.1 os/linux#6.8 md/arch#x86_64 lang/python#3.13.3 cfg/retry-mode#standard',
      Authorization: `AWS4-HMAC-SHA256 Credential=${request.accessKeyId ?? 'AKIDLOCALCLI'}/${scope}, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=${'0'.repeat(64)}`,
    },
    body: JSON.stringify(request.body),
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    errorType: response.headers.get('x-amzn-errortype'),
    body: (await response.json()) as Record<string, unknown>,
  };
}
