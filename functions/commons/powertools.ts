import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../domain/names.ts';

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
