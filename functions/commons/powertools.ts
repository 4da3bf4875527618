import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

/** One logger and one metrics instance per function (Lambda runs one invocation at a time). */
export const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'atomic-publish' });

export const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'AtomicPublish',
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'atomic-publish',
});

export const codeVersion = (): string => process.env.CODE_VERSION ?? 'dev';
