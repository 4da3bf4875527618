// A CDK App makes its output directory as soon as it is created; without an
// outdir that is a new cdk.out* folder in the system temp directory on every
// `new App()`. Tests give their apps this one and remove it afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A temporary directory for this test file's cloud assemblies, removed after its tests. */
export function useCdkOutdir(): string {
  const outdir = mkdtempSync(join(tmpdir(), 'atomic-publish-test-cdk-'));
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));
  return outdir;
}
