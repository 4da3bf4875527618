import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { boundedErrorMessage } from '../../domain/errors.ts';
import { clip } from '../../domain/text.ts';
import { logger, metrics, tracer } from './powertools.ts';
import { runKeysOf } from './run-keys.ts';

/** X-Ray annotations (indexed: a trace can be searched by them) every step's segment gets from its input. */
export const TRACE_ANNOTATIONS = ['pipeline', 'group', 'batchId'] as const;

/**
 * The invocation's run keys (run-keys.ts) on every log line and as trace
 * annotations. Temporary logger keys: the previous invocation's are dropped
 * first (a warm Lambda must not carry the last batch's), and
 * injectLambdaContext's resetKeys drops these when the invocation ends.
 */
function runKeys(): middy.MiddlewareObj {
  return {
    before: (request) => {
      logger.resetKeys();
      const keys = runKeysOf(request.event);
      logger.appendKeys({ ...keys });
      for (const name of TRACE_ANNOTATIONS) {
        const value = keys[name];
        if (value !== undefined) tracer.putAnnotation(name, value);
      }
    },
  };
}

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

/**
 * A step's Lambda handler: the step function wired with the Powertools
 * tracer, logger (with the run keys on every line), its metrics, and
 * bounded errors. The tracer records no response (a step's result may carry
 * a failed check's business-key samples); an error it records is bounded
 * first (middy runs onError in reverse order).
 */
export function stepHandler<E, R>(step: (event: E, context: Context) => Promise<R>, options: StepHandlerOptions = {}) {
  const handler = middy(step)
    .use(captureLambdaHandler(tracer, { captureResponse: false }))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(runKeys())
    .use(boundedErrors());
  return options.metrics ? handler.use(logMetrics(metrics)) : handler;
}
