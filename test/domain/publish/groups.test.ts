import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { defineGroups, type GroupSpec, isGroupInput, MAX_GROUP_MEMBERS, resolveGroup } from '../../../domain/publish/groups.ts';
import { GROUP_SWAP_SHARED_STATEMENTS, MEMBER_SWAP_MIN_STATEMENTS } from '../../../domain/publish/sql/group.ts';
import { MAX_BATCH_STATEMENTS } from '../../../domain/sql/statement.ts';
import { groups } from '../../../pipelines/index.ts';
import { errorOf, pipelineWith } from '../fixtures.ts';

const orders = pipelineWith({ name: 'orders', target: { schema: 'analytics', table: 'orders' } });
const customers = pipelineWith({ name: 'customers', target: { schema: 'analytics', table: 'customers' } });
const products = pipelineWith({ name: 'products', target: { schema: 'analytics', table: 'products' } });
const viewed = pipelineWith({ name: 'viewed', target: { schema: 'analytics', table: 'viewed' }, publishVia: 'view' });
const known = [orders, customers, products, viewed];
const many = Array.from({ length: MAX_GROUP_MEMBERS + 1 }, (_, i) => pipelineWith({ name: `p${i}`, target: { schema: 'analytics', table: `p${i}` } }));

function refusal(specs: readonly GroupSpec[], pipelines = known): string {
  const error = errorOf(() => defineGroups(specs, pipelines));
  expect(error).toBeInstanceOf(ValidationError);
  return error.message;
}

describe('defineGroups', () => {
  it('resolves the members to their pipelines in name order (the order leases and locks are taken)', () => {
    const [group] = defineGroups([{ name: 'sales', members: ['orders', 'products', 'customers'] }], known);

    expect(group!.name).toBe('sales');
    expect(group!.description).toBe('');
    expect(group!.members.map((p) => p.name)).toEqual(['customers', 'orders', 'products']);
    expect(group!.members[0]).toBe(customers);
  });

  it('declares no group in this deployment yet (a group needs two pipelines)', () => {
    expect(groups).toEqual([]);
  });

  it('refuses a group name that is not an identifier', () => {
    expect(refusal([{ name: 'Sales Group', members: ['orders', 'customers'] }])).toMatch(/^publish group Sales Group: name /);
    expect(refusal([{ name: '', members: ['orders', 'customers'] }])).toMatch(/^publish group : name /);
  });

  it('refuses fewer than two members, saying a single pipeline runs on its own', () => {
    expect(refusal([{ name: 'sales', members: ['orders'] }])).toMatch(/members must list at least two pipelines.*\{"pipeline": \.\.\.\}/);
    expect(refusal([{ name: 'sales', members: 'orders' as unknown as string[] }])).toContain('members must list the member pipelines by name');
  });

  it('refuses an unknown member, naming the known pipelines and what to do', () => {
    const message = refusal([{ name: 'sales', members: ['orders', 'invoices'] }]);

    expect(message).toContain('publish group sales: unknown pipeline "invoices"; known pipelines: orders, customers, products, viewed');
    expect(message).toContain('Declare it in pipelines/index.ts or remove it from the group');
  });

  it('refuses a pipeline listed twice in one group', () => {
    expect(refusal([{ name: 'sales', members: ['orders', 'customers', 'orders'] }])).toBe(
      'publish group sales: pipeline "orders" is listed twice; list each member once',
    );
  });

  it('refuses a pipeline in two groups', () => {
    const message = refusal([
      { name: 'sales', members: ['orders', 'customers'] },
      { name: 'catalog', members: ['products', 'customers'] },
    ]);

    expect(message).toBe('publish group catalog: pipeline customers is already a member of group sales; a pipeline belongs to at most one group');
  });

  it('refuses two groups of one name', () => {
    expect(
      refusal([
        { name: 'sales', members: ['orders', 'customers'] },
        { name: 'sales', members: ['products', 'viewed'] },
      ]),
    ).toContain('publish group sales: ');
  });

  it("refuses a member published through a view (publishVia 'view'), saying what to do", () => {
    expect(refusal([{ name: 'sales', members: ['orders', 'viewed'] }])).toBe(
      "publish group sales: pipeline viewed publishes through a view (publishVia 'view'); a group publishes its members by rename swap only: " +
        "set publishVia 'rename' on it or leave it out of the group",
    );
  });

  it('refuses a group larger than one Data API transaction can swap', () => {
    expect(GROUP_SWAP_SHARED_STATEMENTS + MAX_GROUP_MEMBERS * MEMBER_SWAP_MIN_STATEMENTS).toBeLessThanOrEqual(MAX_BATCH_STATEMENTS);
    expect(GROUP_SWAP_SHARED_STATEMENTS + (MAX_GROUP_MEMBERS + 1) * MEMBER_SWAP_MIN_STATEMENTS).toBeGreaterThan(MAX_BATCH_STATEMENTS);
    expect(defineGroups([{ name: 'big', members: many.slice(0, MAX_GROUP_MEMBERS).map((p) => p.name) }], many)[0]!.members).toHaveLength(MAX_GROUP_MEMBERS);

    expect(refusal([{ name: 'big', members: many.map((p) => p.name) }], many)).toContain(`members must list at most ${MAX_GROUP_MEMBERS} pipelines`);
  });
});

describe('resolveGroup (execution input)', () => {
  const declared = defineGroups([{ name: 'sales', members: ['orders', 'customers'] }], known);

  it('tells a group input by its `group` field', () => {
    expect(isGroupInput({ group: 'sales' })).toBe(true);
    expect(isGroupInput({ group: 1 })).toBe(true);
    expect(isGroupInput({ pipeline: 'orders' })).toBe(false);
    expect(isGroupInput(['group'])).toBe(false);
  });

  it('resolves the group and the interval fields every member gets', () => {
    const resolved = resolveGroup({ group: 'sales', to: '2026-01-05T00:00:00Z' }, declared);

    expect(resolved.group).toBe(declared[0]);
    expect(resolved.interval).toEqual({ to: '2026-01-05T00:00:00Z' });
  });

  it('refuses a group and a pipeline together, saying which input does what', () => {
    expect(() => resolveGroup({ group: 'sales', pipeline: 'orders' }, declared)).toThrow(
      'input names both a group and a pipeline: start {"group": "sales"} to publish the group\'s members together, or {"pipeline": "orders"} to run that pipeline alone',
    );
  });

  it('refuses an unknown group, naming the known ones', () => {
    expect(() => resolveGroup({ group: 'finance' }, declared)).toThrow(
      'unknown publish group "finance"; known groups: sales. Groups are declared in pipelines/index.ts',
    );
  });

  it('refuses a malformed group input', () => {
    expect(() => resolveGroup({ group: 7 }, declared)).toThrow("input.group must be a group's name, got 7");
    expect(() => resolveGroup({ group: 'sales', rollback: {} }, declared)).toThrow('group input has unknown field(s): rollback (allowed: group, from, to)');
  });
});
