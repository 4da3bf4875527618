// `npm run test:unit`: every test file that needs no database, without
// starting PostgreSQL (test/support/needs-database.ts decides which). The
// whole suite, these included, is vitest.config.ts (`npm test`).
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { needsDatabase } from './test/support/needs-database.ts';
import { SAFETY_NET_MS } from './test/support/safety-net.ts';

const root = fileURLToPath(new URL('.', import.meta.url));
const testRoot = `${root}test/`;
const unit = readdirSync(testRoot, { recursive: true, encoding: 'utf8' })
  .map((file) => `test/${file}`)
  .filter((file) => file.endsWith('.test.ts') && !file.startsWith('test/workflow/') && !needsDatabase(`${root}${file}`, testRoot))
  .sort();

export default defineConfig({
  test: {
    name: 'unit',
    include: unit,
    testTimeout: SAFETY_NET_MS,
    hookTimeout: SAFETY_NET_MS,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    sequence: { shuffle: { files: false, tests: true } },
    // The slowest files wait on subprocesses (the AWS CLI, boto3, cdk synth's bundling) part of the time.
    maxWorkers: 3,
  },
});
