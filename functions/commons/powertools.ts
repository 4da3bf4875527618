import { InvokeStore } from '@aws/lambda-invoke-store';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../domain/names.ts';

// With AWS_LAMBDA_MAX_CONCURRENCY set (invocations running at once in one
// environment: Lambda's, or the local sandbox's, local/lambda-sandbox.ts)
// Powertools keeps per-invocation state in the runtime's InvokeStore and
// throws if there is none. The Lambda runtime creates it before loading the
// handler; this creates it for any other loader (a process that inherited
// the variable) and returns the runtime's otherwise. Without the variable:
// nothing to do.
if (process.env.AWS_LAMBDA_MAX_CONCURRENCY !== undefined) await InvokeStore.getInstanceAsync();

/** One logger, one metrics and one tracer instance per function (Lambda runs one invocation at a time). */
export const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? SERVICE_NAME });

export const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE,
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? SERVICE_NAME,
});

/**
 * X-Ray tracing, active on AWS (lib/step-handler.ts). The Tracer turns itself
 * off outside Lambda (no AWS_EXECUTION_ENV) and when POWERTOOLS_TRACE_ENABLED
 * is "false" (the local runner sets it): then it records nothing and needs no
 * X-Ray daemon, and `captureAWSv3Client` returns the client as it is.
 */
export const tracer = new Tracer({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? SERVICE_NAME });

export const codeVersion = (): string => process.env.CODE_VERSION ?? 'dev';
