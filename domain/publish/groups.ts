/**
 * Publish groups: pipelines that must change together (a fact and its
 * dimensions), each built and checked as its own batch, published in ONE
 * swap transaction, all or none. Declared in code next to the pipelines
 * (pipelines/index.ts) and validated at import, so synth refuses a bad one.
 */
import { z } from 'zod';
import { ValidationError } from '../errors.ts';
import { identifierProblem } from '../identifiers.ts';
import type { Pipeline } from '../spec.ts';
import { MAX_BATCH_STATEMENTS } from '../sql/statement.ts';
import { clip, echo } from '../text.ts';
import { GROUP_SWAP_SHARED_STATEMENTS, MEMBER_SWAP_MIN_STATEMENTS } from './sql/group.ts';

export interface GroupSpec {
  /** The group's name, as the execution input names it: `{"group": "<name>"}`. Identifier rules. */
  readonly name: string;
  /** @default '' */
  readonly description?: string;
  /** The member pipelines, by name: at least two, each a known pipeline, no pipeline twice. */
  readonly members: readonly string[];
}

export interface PublishGroup {
  readonly name: string;
  readonly description: string;
  /** The members in name order: the order their leases are taken and their tables locked. */
  readonly members: readonly Pipeline[];
}

/**
 * The most members a group may have: the group swap is one BatchExecuteStatement
 * of at most MAX_BATCH_STATEMENTS, GROUP_SWAP_SHARED_STATEMENTS shared and at least
 * MEMBER_SWAP_MIN_STATEMENTS per member. What the catalog adds is measured again
 * before the swap runs (fitGroupSwap). Why: docs/decisions/publish-groups.md
 */
export const MAX_GROUP_MEMBERS = Math.floor((MAX_BATCH_STATEMENTS - GROUP_SWAP_SHARED_STATEMENTS) / MEMBER_SWAP_MIN_STATEMENTS);

const groupSchema = z.object(
  {
    name: z.unknown().superRefine((value, ctx) => {
      const problem = identifierProblem(value);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    }),
    description: z.preprocess((value) => value ?? undefined, z.string({ error: 'must be a string' }).optional()),
    members: z
      .array(z.string({ error: 'must be a pipeline name' }), { error: 'must list the member pipelines by name' })
      .min(2, { error: 'must list at least two pipelines (a single pipeline publishes on its own: run it with {"pipeline": ...})' })
      .max(MAX_GROUP_MEMBERS, {
        error:
          `must list at most ${MAX_GROUP_MEMBERS} pipelines: the group publishes in one Data API transaction of at most ${MAX_BATCH_STATEMENTS} statements, ` +
          `and each member needs at least ${MEMBER_SWAP_MIN_STATEMENTS}; split it into smaller groups`,
      }),
  },
  { error: 'must be an object' },
);

/**
 * Validates one group against the pipelines it names: every member known,
 * none twice, each published by rename swap ('view' members are refused
 * for now: their switch is a different transaction, publish-view.ts).
 */
function defineGroup(spec: GroupSpec, pipelines: readonly Pipeline[]): PublishGroup {
  const label = `publish group ${clip(String((spec as { name?: unknown })?.name), 128)}:`;
  const parsed = groupSchema.safeParse(spec);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`);
    throw new ValidationError(`${label} ${problems.join('; ')}`);
  }
  const { name, members } = parsed.data as { name: string; members: string[] };
  const seen = new Set<string>();
  const resolved: Pipeline[] = [];
  for (const member of members) {
    if (seen.has(member)) throw new ValidationError(`${label} pipeline ${echo(member)} is listed twice; list each member once`);
    seen.add(member);
    const pipeline = pipelines.find((p) => p.name === member);
    if (!pipeline) {
      throw new ValidationError(
        `${label} unknown pipeline ${echo(member)}; known pipelines: ${pipelines.map((p) => p.name).join(', ') || '(none)'}. Declare it in pipelines/index.ts or remove it from the group`,
      );
    }
    if (pipeline.publishVia !== 'rename') {
      throw new ValidationError(
        `${label} pipeline ${pipeline.name} publishes through a view (publishVia '${pipeline.publishVia}'); a group publishes its members by rename swap only: ` +
          `set publishVia 'rename' on it or leave it out of the group`,
      );
    }
    if (pipeline.publishMode !== 'swap') {
      throw new ValidationError(`${label} pipeline ${pipeline.name} publishes by '${pipeline.publishMode}'; a group publishes its members by swap only`);
    }
    resolved.push(pipeline);
  }
  resolved.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { name, description: parsed.data.description ?? '', members: resolved };
}

/**
 * Validates every group; rejects two groups of one name and a pipeline in
 * two groups (its batches would be published by either, and a failure page
 * could not say which group its live table belongs to).
 */
export function defineGroups(specs: readonly GroupSpec[], pipelines: readonly Pipeline[]): PublishGroup[] {
  const groups = specs.map((spec) => defineGroup(spec, pipelines));
  const names = new Set<string>();
  const memberOf = new Map<string, string>();
  for (const group of groups) {
    if (names.has(group.name)) throw new ValidationError(`publish group ${group.name}: name is used twice`);
    names.add(group.name);
    for (const member of group.members) {
      const other = memberOf.get(member.name);
      if (other) {
        throw new ValidationError(
          `publish group ${group.name}: pipeline ${member.name} is already a member of group ${other}; a pipeline belongs to at most one group`,
        );
      }
      memberOf.set(member.name, group.name);
    }
  }
  return groups;
}

/** The execution input of a group run: `{"group": "<name>", "from"?, "to"?}`. */
export interface GroupInput {
  readonly group: string;
  readonly from?: unknown;
  readonly to?: unknown;
}

/** True for an input that names a group (`group` present): Plan plans it as a group (functions/plan/group.ts). */
export function isGroupInput(input: unknown): boolean {
  return typeof input === 'object' && input !== null && !Array.isArray(input) && 'group' in input;
}

/**
 * Resolves a group input to its group, or refuses it (before anything is
 * written): `group` with `pipeline`, `rollback` or an unknown field, a
 * group name that is not a string, an unknown group.
 */
export function resolveGroup(input: unknown, groups: readonly PublishGroup[]): { group: PublishGroup; interval: { from?: unknown; to?: unknown } } {
  const fields = input as Record<string, unknown>;
  if ('pipeline' in fields) {
    throw new ValidationError(
      `input names both a group and a pipeline: start {"group": ${echo(fields.group)}} to publish the group's members together, or {"pipeline": ${echo(fields.pipeline)}} to run that pipeline alone`,
    );
  }
  const allowed = new Set(['group', 'from', 'to']);
  const extra = Object.keys(fields).filter((key) => !allowed.has(key));
  if (extra.length > 0) throw new ValidationError(`group input has unknown field(s): ${clip(extra.join(', '))} (allowed: group, from, to)`);
  const name = fields.group;
  if (typeof name !== 'string' || name === '') throw new ValidationError(`input.group must be a group's name, got ${echo(name)}`);
  const group = groups.find((g) => g.name === name);
  if (!group) {
    throw new ValidationError(
      `unknown publish group ${echo(name)}; known groups: ${groups.map((g) => g.name).join(', ') || '(none)'}. Groups are declared in pipelines/index.ts`,
    );
  }
  return { group, interval: { ...(fields.from !== undefined ? { from: fields.from } : {}), ...(fields.to !== undefined ? { to: fields.to } : {}) } };
}
