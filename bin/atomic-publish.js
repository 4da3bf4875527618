#!/usr/bin/env node
// The `atomic-publish` bin: runs the TypeScript command line
// (bin/atomic-publish.ts) through tsx, resolved from this package, so it
// works from any directory after `npm link` or a global install.
import { register } from 'tsx/esm/api';

register();
await import('./atomic-publish.ts');
