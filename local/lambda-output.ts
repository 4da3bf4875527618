/**
 * What CloudWatch does with a Lambda's stdout, on one machine: JSON lines
 * carrying an Embedded Metric Format block become metric records, other
 * JSON lines (Powertools logs) become log records; anything else is passed
 * through. Installed only while a local run is active.
 */

export interface MetricRecord {
  readonly namespace: string;
  readonly dimensions: Record<string, string>;
  readonly values: Record<string, number>;
  readonly timestamp: number;
}

export interface LambdaOutputSink {
  readonly metrics: MetricRecord[];
  readonly logs: Record<string, unknown>[];
}

function toMetricRecords(line: Record<string, unknown>): MetricRecord[] {
  const aws = line._aws as { Timestamp: number; CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] } | undefined;
  if (!aws?.CloudWatchMetrics) return [];
  return aws.CloudWatchMetrics.map((directive) => {
    const dimensions: Record<string, string> = {};
    for (const name of directive.Dimensions.flat()) dimensions[name] = String(line[name]);
    const values: Record<string, number> = {};
    for (const metric of directive.Metrics) {
      const value = line[metric.Name];
      values[metric.Name] = Array.isArray(value) ? Number(value[value.length - 1]) : Number(value);
    }
    return { namespace: directive.Namespace, dimensions, values, timestamp: aws.Timestamp };
  });
}

type Write = typeof process.stdout.write;

let installed: { sink: LambdaOutputSink; restore: () => void; users: number } | undefined;

/** Diverts JSON lines written to `stream` into the sink; returns a function that undoes it. */
function divert(stream: NodeJS.WriteStream, sink: LambdaOutputSink): () => void {
  const original = stream.write.bind(stream) as Write;
  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    const text = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : undefined;
    if (text !== undefined && text.trimStart().startsWith('{')) {
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        parsed = undefined;
      }
      if (parsed) {
        const records = toMetricRecords(parsed);
        if (records.length > 0) sink.metrics.push(...records);
        else sink.logs.push(parsed);
        const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
        callback?.();
        return true;
      }
    }
    return (original as (...args: unknown[]) => boolean)(chunk, ...rest);
  };
  stream.write = write as Write;
  return () => {
    stream.write = original;
  };
}

/** Starts capturing stdout and stderr (nested calls share one sink); returns the sink and a function that stops. */
export function captureLambdaOutput(): { sink: LambdaOutputSink; release: () => void } {
  if (!installed) {
    const sink: LambdaOutputSink = { metrics: [], logs: [] };
    const restoreOut = divert(process.stdout, sink);
    const restoreErr = divert(process.stderr, sink);
    installed = {
      sink,
      restore: () => {
        restoreOut();
        restoreErr();
      },
      users: 0,
    };
  }
  installed.users += 1;
  const current = installed;
  let released = false;
  return {
    sink: current.sink,
    release: () => {
      if (released) return;
      released = true;
      current.users -= 1;
      if (current.users === 0 && installed === current) {
        current.restore();
        installed = undefined;
      }
    },
  };
}
