import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository root: bundling, the lock file and entry metadata are relative to it. */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');

/** Where the local engine keeps its state: PostgreSQL data, caches, the alert outbox (git-ignored). */
export const STATE_DIR = `${PROJECT_ROOT}/.atomic-publish`;

/** package.json version: recorded as CODE_VERSION in every batch the deployed code runs. */
export const CODE_VERSION: string = (JSON.parse(readFileSync(`${PROJECT_ROOT}/package.json`, 'utf8')) as { version: string }).version;
