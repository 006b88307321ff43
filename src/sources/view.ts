import type { PlannedSide } from '../engine/plan.js';
import { formatRange } from '../engine/plan.js';
import type { SideView } from './types.js';

/** The view of a side whose resource is shown under `field` (`dataset`, `container`). */
export function refView(field: 'dataset' | 'container', type: string) {
  return (side: PlannedSide): SideView => ({ type, [field]: side.ref ?? '', range: formatRange(side.range) });
}
