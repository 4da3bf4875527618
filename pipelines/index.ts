import { definePipelines } from '../domain/spec.ts';
import { salesOrderLines } from './sales-order-lines.ts';

/**
 * Every pipeline this deployment runs. The CDK app and the Lambda handlers
 * import this one list, so a spec is validated at synth time and the same
 * spec (by hash) runs in the warehouse.
 */
export const pipelines = definePipelines([salesOrderLines]);
