// The pause probe's and the circuit breaker's settings: refused at synth
// (stack props) and at a handler's startup (its environment) unless whole
// positive numbers, with a message naming the setting; what the stack
// writes into every handler's environment.
import { App, Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { breakerFromEnv, pauseProbeFromEnv } from '../../domain/neighbour/neighbour.ts';
import { AtomicPublishStack, type AtomicPublishStackProps } from '../../lib/atomic-publish-stack.ts';
import { useCdkOutdir } from './cdk-outdir.ts';

const outdir = useCdkOutdir();
const stackWith = (extra: Partial<AtomicPublishStackProps>) =>
  new AtomicPublishStack(new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } }), 'Test', {
    warehouse: { database: 'dev', workgroupName: 'wg' },
    pipelines: [],
    ...extra,
  });
/** The step handlers' environments (the freshness monitor runs no step and reads neither setting). */
const environments = (stack: AtomicPublishStack) =>
  Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function'))
    .filter((r) => (r as { Metadata?: Record<string, unknown> }).Metadata?.['atomic-publish:entry'] !== 'functions/freshness-monitor/index.ts')
    .map((r) => (r as { Properties: { Environment?: { Variables?: Record<string, string> } } }).Properties.Environment?.Variables ?? {});

describe('bad input', () => {
  it.each([
    [{ pauseProbe: { whenQueued: 0 } }, /pauseProbe\.whenQueued must be a positive whole number, got 0/],
    [{ pauseProbe: { whenQueued: 2.5 } }, /pauseProbe\.whenQueued must be a positive whole number, got 2\.5/],
    [{ pauseProbe: { whenQueued: -3 } }, /pauseProbe\.whenQueued must be a positive whole number, got -3/],
    [{ pauseProbe: { whenQueued: 4, interval: Duration.millis(0) } }, /pauseProbe\.interval \(milliseconds\) must be a positive whole number, got 0/],
    [{ circuitBreaker: { failures: 0 } }, /circuitBreaker\.failures must be a positive whole number, got 0/],
    [{ circuitBreaker: { failures: Number.NaN } }, /circuitBreaker\.failures must be a positive whole number/],
    [{ circuitBreaker: { coolDown: Duration.millis(1500) } }, /circuitBreaker\.coolDown \(seconds\) must be a positive whole number, got 1\.5/],
  ] as [Partial<AtomicPublishStackProps>, RegExp][])('refuses %j at synth, naming the prop', (props, message) => {
    expect(() => stackWith(props)).toThrow(message);
    expect(() => stackWith(props)).toThrow(/^AtomicPublishStack: /);
  });

  it.each([
    [{ PAUSE_WHEN_QUEUED: '0' }, /PAUSE_WHEN_QUEUED must be a positive whole number, got "0"/],
    [{ PAUSE_WHEN_QUEUED: 'ten' }, /PAUSE_WHEN_QUEUED must be a positive whole number, got "ten"/],
    [{ PAUSE_WHEN_QUEUED: '3', PAUSE_PROBE_INTERVAL_MS: '1e-3' }, /PAUSE_PROBE_INTERVAL_MS must be a positive whole number/],
    [{ PAUSE_PROBE_INTERVAL_MS: '100' }, /PAUSE_PROBE_INTERVAL_MS is set but PAUSE_WHEN_QUEUED is not/],
  ])('a handler refuses the pause probe environment %j at startup', (env, message) => {
    expect(() => pauseProbeFromEnv(env)).toThrow(message);
  });

  it.each([
    [{ BREAKER_FAILURES: '-1' }, /BREAKER_FAILURES must be a positive whole number, got "-1"/],
    [{ BREAKER_FAILURES: '5', BREAKER_COOL_DOWN_SECONDS: '0.5' }, /BREAKER_COOL_DOWN_SECONDS must be a positive whole number, got "0\.5"/],
    [{ BREAKER_COOL_DOWN_SECONDS: '60' }, /BREAKER_COOL_DOWN_SECONDS is set but BREAKER_FAILURES is not/],
  ])('a handler refuses the breaker environment %j at startup', (env, message) => {
    expect(() => breakerFromEnv(env)).toThrow(message);
  });
});

describe('the handlers environment', () => {
  it('has the breaker by default (5 failures, 15 minutes) and no pause probe', () => {
    for (const env of environments(stackWith({}))) {
      expect(env).toMatchObject({ BREAKER_FAILURES: '5', BREAKER_COOL_DOWN_SECONDS: '900' });
      expect(env.PAUSE_WHEN_QUEUED).toBeUndefined();
    }
    expect(breakerFromEnv({ BREAKER_FAILURES: '5', BREAKER_COOL_DOWN_SECONDS: '900' })).toEqual({ failures: 5, coolDownSeconds: 900 });
  });

  it('carries the pause probe when given, and no breaker when it is turned off', () => {
    const envs = environments(stackWith({ pauseProbe: { whenQueued: 8, interval: Duration.seconds(5) }, circuitBreaker: false }));
    for (const env of envs) {
      expect(env).toMatchObject({ PAUSE_WHEN_QUEUED: '8', PAUSE_PROBE_INTERVAL_MS: '5000' });
      expect(env.BREAKER_FAILURES).toBeUndefined();
      expect(pauseProbeFromEnv(env)).toEqual({ whenQueued: 8, intervalMs: 5000 });
      expect(breakerFromEnv(env)).toBeUndefined();
    }
  });
});
