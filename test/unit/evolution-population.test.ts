// The population's rules on their own (src/engine/strategies/evolutionary/population.ts): niches from profiles, the
// archive's admission and retirement, tournament selection, Thompson sampling of operators, crossover partners.
import { describe, expect, it } from 'vitest';
import { admit, bestVariant, chooseOperator, classify, crossoverPartner, lineage, NO_OPERATOR_STATS, nicheOf, tournament, windowFor, type Variant } from '../../src/engine/strategies/evolutionary/population';
import type { ConfigProfile } from '../../src/tuner/run/profile';
import { Random } from '../../src/tuner/space/random';

function variant(id: string, timeMs: number, bound: Variant['bound'] = 'dram', parents: string[] = []): Variant {
  return {
    id,
    child: id === 'v0' ? null : Number(id.slice(1)) - 1,
    parents,
    operator: id === 'v0' ? 'original' : 'mutate',
    instruction: '',
    code: `// ${id}`,
    tuneParams: {},
    restrictions: [],
    gridDivisors: {},
    sharedMemBytes: null,
    bestParams: {},
    timeMs,
    objectiveValue: timeMs,
    profile: null,
    bound,
    occupancy: 'high',
    diff: '',
    elite: true,
  };
}

const driver = { num_regs: 32, local_mem_bytes: 0, static_shared_mem_bytes: 0, dynamic_shared_mem_bytes: 0, active_blocks_per_sm: 2, active_warps_per_sm: 19, occupancy: 0.3, occupancy_source: 'driver' as const };
function profile(numbers: Partial<NonNullable<ConfigProfile['ncu']>['numbers']> | undefined): ConfigProfile {
  return { config: {}, source: numbers ? 'ncu' : 'driver', summary: [], driver, ...(numbers && { ncu: { numbers: { topStalls: [], ...numbers } } }) };
}

describe('the archive', () => {
  it('puts a variant in a niche by what bounds it and how full it keeps the SMs', () => {
    expect(classify(profile({ bound: 'memory', busiestMemory: 'DRAM', achievedOccupancyPct: 80 }))).toEqual({ bound: 'dram', occupancy: 'high' });
    expect(classify(profile({ bound: 'memory', busiestMemory: 'L1/TEX cache', achievedOccupancyPct: 30 }))).toEqual({ bound: 'cache', occupancy: 'mid' });
    expect(classify(profile({ bound: 'compute', achievedOccupancyPct: 12 }))).toEqual({ bound: 'compute', occupancy: 'low' });
    expect(classify(profile({ bound: 'latency' }))).toEqual({ bound: 'latency', occupancy: 'mid' }); // the driver's theoretical 30 %
    expect(classify(profile(undefined))).toEqual({ bound: 'unprofiled', occupancy: 'mid' });
    expect(classify(null)).toEqual({ bound: 'unprofiled', occupancy: 'unknown' });
  });

  it('keeps the best few of each niche and retires the rest, never the fastest overall', () => {
    let pop = [variant('v0', 10)];
    pop = admit(pop, variant('v1', 8), { perNiche: 2, capacity: 10, higherIsBetter: false });
    pop = admit(pop, variant('v2', 9), { perNiche: 2, capacity: 10, higherIsBetter: false });
    expect(pop.filter((v) => v.elite).map((v) => v.id)).toEqual(['v1', 'v2']);
    // A slow variant of another niche keeps its place: it is the best there.
    pop = admit(pop, variant('v3', 20, 'compute'), { perNiche: 2, capacity: 10, higherIsBetter: false });
    expect(pop.find((v) => v.id === 'v3')!.elite).toBe(true);
    // Past the capacity, the worst elite of the most crowded niche retires.
    pop = admit(pop, variant('v4', 30, 'latency'), { perNiche: 2, capacity: 3, higherIsBetter: false });
    expect(pop.filter((v) => v.elite).map((v) => v.id)).toEqual(['v1', 'v3', 'v4']);
    expect(pop.map((v) => v.id)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
    expect(bestVariant(pop.filter((v) => v.elite), false).id).toBe('v1');
    // Higher is better (GFLOP/s): the largest value wins.
    expect(bestVariant([variant('v0', 1), variant('v1', 5)], true).id).toBe('v1');
    expect(nicheOf(pop[3]!)).toBe('compute/high');
  });
});

describe('selection', () => {
  it('draws tournament winners by the objective, the better more often', () => {
    const elites = [variant('v0', 10), variant('v1', 5), variant('v2', 20)];
    const rng = new Random(1);
    const wins = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const w = tournament(rng, elites, 2, false).id;
      wins.set(w, (wins.get(w) ?? 0) + 1);
    }
    // With two draws: P(v1) = 5/9, P(v0) = 3/9, P(v2) = 1/9.
    expect(wins.get('v1')! / 3000).toBeCloseTo(5 / 9, 1);
    expect(wins.get('v2')! / 3000).toBeCloseTo(1 / 9, 1);
  });

  it('chooses the operator that wins more often, keeps trying the others, and never a crossover with one elite', () => {
    const rng = new Random(2);
    const stats = { ...NO_OPERATOR_STATS, crossover: { tries: 10, wins: 8 }, mutate: { tries: 10, wins: 1 }, judge: { tries: 10, wins: 2 } };
    const counts = { mutate: 0, crossover: 0, judge: 0 };
    for (let i = 0; i < 2000; i++) counts[chooseOperator(rng, stats, 3)]++;
    expect(counts.crossover).toBeGreaterThan(1600);
    expect(counts.mutate + counts.judge).toBeGreaterThan(0);
    for (let i = 0; i < 200; i++) expect(chooseOperator(rng, stats, 1)).not.toBe('crossover');
  });

  it('pairs a crossover with a variant of another niche where there is one', () => {
    const rng = new Random(3);
    const a = variant('v1', 5);
    const elites = [a, variant('v2', 4), variant('v3', 9, 'compute')];
    for (let i = 0; i < 50; i++) expect(crossoverPartner(rng, elites, a, 2, false).id).toBe('v3');
    expect(crossoverPartner(rng, [a, variant('v2', 4)], a, 2, false).id).toBe('v2');
  });

  it('follows a variant back to the original through its first parents', () => {
    const pop = [variant('v0', 10), variant('v1', 8, 'dram', ['v0']), variant('v2', 7, 'dram', ['v0']), variant('v3', 5, 'dram', ['v2', 'v1'])];
    expect(lineage(pop, 'v3').map((v) => v.id)).toEqual(['v0', 'v2', 'v3']);
  });
});

describe('the window', () => {
  it('is the one asked for, but no more than a tenth of a model-call budget, and at least one child', () => {
    expect(windowFor(4, undefined)).toBe(4);
    expect(windowFor(4, 100)).toBe(4);
    expect(windowFor(2, 100)).toBe(2);
    expect(windowFor(4, 39)).toBe(3);
    expect(windowFor(4, 25)).toBe(2);
    expect(windowFor(4, 16)).toBe(1);
    expect(windowFor(4, 5)).toBe(1);
  });
});
