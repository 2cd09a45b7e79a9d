/**
 * The lineage tree of an evolutionary session's population, as the panel draws it: a node per variant (its time, its
 * speed-up over the original, its niche in the archive, the fastest or retired) and per child that made none (rejected,
 * and why; still being made), an edge from each parent labelled with the operator that made the child. Derived from the
 * view's PopulationView alone, so a stored session draws as it did live. Pure, unit-tested.
 */
import type { VariantView } from '../src/engine/progress/events';
import type { ChildView, PopulationView } from '../src/engine/session/session-view';
import { madeBy, nicheText, twinOf } from '../src/engine/progress/describe-variant';
import { formatTime } from './chart-series';

/** What made a node from its parents: an operator of the strategy, or a branch of the session ('edit'). */
export type LineageOperator = 'mutate' | 'crossover' | 'judge' | 'edit';

export interface LineageNode {
  /** The variant's id ("v3"), or the step of a child that made none ("c4"). */
  id: string;
  kind: 'variant' | 'rejected' | 'unfinished';
  /** The lines drawn in the node: what it is, then its time and speed-up and its niche, or why it was rejected. */
  lines: string[];
  /** In one sentence, for its tooltip and screen readers. */
  description: string;
  best: boolean;
  retired: boolean;
  variant?: VariantView;
  child?: ChildView;
}

export interface LineageEdge {
  source: string;
  target: string;
  operator: LineageOperator;
  /** The edge's label: the operator in a word. */
  label: string;
}

export interface LineageGraph {
  nodes: LineageNode[];
  edges: LineageEdge[];
}

const EDGE_LABEL: Record<LineageOperator, string> = { mutate: 'mutate', crossover: 'crossover', judge: 'judge', edit: 'branch' };

const BOUND_SHORT: Record<string, string> = { dram: 'DRAM', cache: 'cache', compute: 'compute', latency: 'latency', unprofiled: 'no profile' };

function nicheShort(v: Pick<VariantView, 'bound' | 'occupancy'>): string {
  return `${BOUND_SHORT[v.bound] ?? v.bound} · ${v.occupancy === 'unknown' ? 'occ. ?' : `${v.occupancy} occ.`}`;
}

/** "1.37×": the original's time over the variant's. */
export function speedupText(original: VariantView | undefined, v: VariantView): string {
  return original && v.timeMs > 0 ? `${(original.timeMs / v.timeMs).toFixed(2)}×` : '';
}

const REJECTION_SHORT: Record<NonNullable<ChildView['rejection']>['kind'], string> = {
  wrong_result: 'wrong result',
  compile_error: 'did not compile',
  failed: 'failed',
  insufficient_gain: 'too little gain',
  hazard: 'sanitizer hazard',
};

/** The tree; `live`: the session runs in this window (a child not finished is being made, not left unfinished). */
export function lineageGraph(population: PopulationView, live: boolean): LineageGraph {
  const original = population.variants.find((v) => v.operator === 'original');
  const retired = new Set(population.retired);
  const nodes: LineageNode[] = [];
  const edges: LineageEdge[] = [];
  const from = (parents: readonly string[], target: string, operator: LineageOperator) => {
    for (const source of parents) edges.push({ source, target, operator, label: EDGE_LABEL[operator] });
  };
  for (const v of population.variants) {
    const best = v.id === population.bestId;
    const state = best ? 'the fastest' : retired.has(v.id) ? 'retired from the archive' : 'in the archive';
    const speedup = speedupText(original, v);
    nodes.push({
      id: v.id,
      kind: 'variant',
      lines: [`${v.id}${best ? ' · best' : retired.has(v.id) ? ' · retired' : ''}`, `${formatTime(v.timeMs)}${speedup && v !== original ? ` · ${speedup}` : ''}`, nicheShort(v)],
      description: `${v.id}, ${madeBy(v.operator, v.parents)}: ${formatTime(v.timeMs)}${speedup && v !== original ? `, ${speedup} the original's speed` : ''}; ${nicheText(v)}; ${state}`,
      best,
      retired: retired.has(v.id),
      variant: v,
      ...(v.child !== null && { child: population.children.find((c) => c.child === v.child) }),
    });
    if (v.operator !== 'original') from(v.parents, v.id, v.operator);
  }
  for (const c of population.children) {
    if (c.variant !== undefined) continue;
    const how = madeBy(c.operator, c.parents);
    const twin = c.rejection && twinOf(c.rejection);
    const rejected = c.rejection && (twin ? `twin of ${twin}` : REJECTION_SHORT[c.rejection.kind]);
    nodes.push({
      id: c.stepId,
      kind: rejected ? 'rejected' : 'unfinished',
      lines: rejected ? [`${c.stepId} · rejected`, rejected] : [`${c.stepId} · ${live ? 'being made' : 'not finished'}`, c.operator],
      description: rejected ? `child ${c.child} (${c.stepId}), ${how}: rejected, ${rejected}` : `child ${c.child} (${c.stepId}), ${how}: ${live ? 'being written or measured' : 'not finished when the session ended'}`,
      best: false,
      retired: false,
      child: c,
    });
    from(c.parents, c.stepId, c.operator);
  }
  return { nodes, edges };
}
