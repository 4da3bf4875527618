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
    // One worker thread per core, each loading the CDK and the SDK once for all its files (no per-file
    // isolation: a file that changes process.env or a module's state restores it, as test/functions/handler.test.ts does).
    pool: 'threads',
    maxWorkers: 2,
    isolate: false,
  },
});
