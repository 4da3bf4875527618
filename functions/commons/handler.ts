import type { Context } from 'aws-lambda';
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { boundedErrorMessage } from '../../domain/errors.ts';
import { clip } from '../../domain/text.ts';
import { logger, metrics } from './powertools.ts';

/**
 * An error leaves the step with a bounded message, and a stack whose first
 * line quotes only its start. Lambda reports both in the Cause Step
 * Functions catches ({"errorType", "errorMessage", "trace"}); the Catch
 * puts that into the state, where more than 256 KB would end the execution
 * with the terminal States.DataLimitExceeded, before any alert. A database
 * error can be that long (it may quote the statement).
 */
function boundedErrors(): middy.MiddlewareObj {
  return {
    onError: (request) => {
      const error = request.error;
      if (!(error instanceof Error)) return;
      const bounded = boundedErrorMessage(error.message);
      if (bounded === error.message) return;
      const frames = (error.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
      error.message = bounded;
      error.stack = [`${error.name}: ${clip(bounded)}`, ...frames].join('\n');
    },
  };
}

export interface StepHandlerOptions {
  /** The step emits metrics (Embedded Metric Format, flushed when the invocation ends). @default false */
  readonly metrics?: boolean;
}

/** A step's Lambda handler: the step function wired with the Powertools logger, its metrics, and bounded errors. */
export function stepHandler<E, R>(step: (event: E, context: Context) => Promise<R>, options: StepHandlerOptions = {}) {
  const handler = middy(step).use(injectLambdaContext(logger)).use(boundedErrors());
  return options.metrics ? handler.use(logMetrics(metrics)) : handler;
}
