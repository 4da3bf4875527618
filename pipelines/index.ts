import { definePipelines } from '../domain/define-pipeline.ts';
import { defineGroups } from '../domain/publish/groups.ts';
import { dailySales } from './daily-sales.ts';
import { salesOrderLines } from './sales-order-lines.ts';

/**
 * Every pipeline this deployment runs. The CDK app and the Lambda handlers
 * import this one list, so a spec is validated at synth time and the same
 * spec (by hash) runs in the warehouse.
 */
export const pipelines = definePipelines([salesOrderLines, dailySales]);

/**
 * Publish groups: pipelines published together in one transaction, all or
 * none (input `{"group": "<name>"}`), validated with the pipelines above.
 * None: the two sample pipelines publish on schedules of their own.
 */
export const groups = defineGroups([], pipelines);
