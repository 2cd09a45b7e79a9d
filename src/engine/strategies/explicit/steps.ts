/**
 * The seed's TuningStep and the explicit strategy's 15 default steps (ids as the seed has them). Each prompt is ours:
 * the instruction of the step, correct for its dimension; the request around it (the current kernel, its parameters,
 * the tuner's rules, the form of the answer) is added by the strategy, so every step sees the kernel.
 */
import type { TuneParamLists } from '../../candidate/code';
import type { PlanStepView } from '../../progress/events';
import type { GridDivisors } from '../../candidate/finalize';

/** Placeholders a prompt template may use. */
export interface StepPromptValues {
  kernel_name: string;
  description: string;
  problem_size: string;
}

const PLACEHOLDER = /\{(\w+)\}/g;

export interface TuningStepInit {
  id: string;
  /** The step's instruction; may use {kernel_name}, {description}, {problem_size}. */
  promptTemplate: string;
  /** Parameters the step makes tunable, with the values to try. */
  tuneParams?: TuneParamLists;
  /** Steps that must have completed (produced a correct kernel) before this one runs. */
  dependsOn?: string[];
  /** Apply without asking whether the step makes sense for the kernel. */
  skipEvaluation?: boolean;
  /** Grid divisors the step implies unless the answer states others. */
  gridDivisors?: GridDivisors;
  /** Shown in the plan; default the id. */
  title?: string;
}

export class TuningStep {
  readonly id: string;
  readonly promptTemplate: string;
  readonly tuneParams: TuneParamLists;
  readonly dependsOn: readonly string[];
  readonly skipEvaluation: boolean;
  readonly gridDivisors: GridDivisors;
  readonly title: string;

  constructor(init: TuningStepInit) {
    if (!/^[\w.-]+$/.test(init.id)) throw new TypeError(`a tuning step id must be a word (letters, digits, _ . -), got ${JSON.stringify(init.id)}`);
    const known: readonly string[] = ['kernel_name', 'description', 'problem_size'];
    const unknown = [...init.promptTemplate.matchAll(PLACEHOLDER)].map((m) => m[1]!).filter((name) => !known.includes(name));
    if (unknown.length > 0) throw new TypeError(`step ${init.id}: unknown placeholder(s) ${unknown.map((u) => `{${u}}`).join(', ')}; known: ${known.map((k) => `{${k}}`).join(', ')}`);
    this.id = init.id;
    this.promptTemplate = init.promptTemplate;
    this.tuneParams = structuredClone(init.tuneParams ?? {});
    this.dependsOn = [...(init.dependsOn ?? [])];
    this.skipEvaluation = init.skipEvaluation ?? false;
    this.gridDivisors = { ...init.gridDivisors };
    this.title = init.title ?? init.id;
  }

  render(values: StepPromptValues): string {
    return this.promptTemplate.replace(PLACEHOLDER, (_, name: keyof StepPromptValues) => values[name]);
  }
}

export function viewOfStep(step: TuningStep): PlanStepView {
  return { id: step.id, title: step.title, details: step.promptTemplate, depth: 0, status: 'pending' };
}

type Axis = 'x' | 'y';
const INDEX = { x: 'column (the fastest-varying index, from blockIdx.x and threadIdx.x)', y: 'row (from blockIdx.y and threadIdx.y)' };

function blockSize(axis: Axis): TuningStep {
  const values = axis === 'x' ? [32, 64, 128, 256, 512, 1024] : [1, 2, 4, 8, 16, 32];
  return new TuningStep({
    id: `block_size_${axis}`,
    title: `Tunable block size in ${axis}`,
    tuneParams: { [`block_size_${axis}`]: values },
    promptTemplate: [
      `Make the thread block size in the ${axis} dimension of {kernel_name} tunable: use block_size_${axis} wherever the kernel`,
      `needs the block's ${axis} extent at compile time (blockDim.${axis} may stay where a run-time value is fine).`,
      `Keep the ${INDEX[axis]} mapping and every bounds check, so that any value of block_size_${axis} gives the same results.`,
    ].join(' '),
  });
}

function twoElements(axis: Axis): TuningStep {
  return new TuningStep({
    id: `process_2elem_${axis}`,
    title: `Two elements per thread in ${axis}`,
    dependsOn: [`block_size_${axis}`],
    gridDivisors: { [axis]: [`block_size_${axis}`, 2] },
    promptTemplate: [
      `Let every thread of {kernel_name} compute two output elements along ${axis} instead of one, so that a block covers`,
      `2 * block_size_${axis} elements in ${axis}: the second element lies block_size_${axis} further along the ${INDEX[axis]}.`,
      `Guard each element with its own bounds check. The grid in ${axis} halves: its divisor is block_size_${axis} * 2.`,
    ].join(' '),
  });
}

function elementsPerThread(axis: Axis): TuningStep {
  return new TuningStep({
    id: `tunable_nr_elem_${axis}`,
    title: `Tunable elements per thread in ${axis}`,
    dependsOn: [`process_2elem_${axis}`],
    tuneParams: { [`work_per_thread_${axis}`]: [1, 2, 4, 8] },
    gridDivisors: { [axis]: [`block_size_${axis}`, `work_per_thread_${axis}`] },
    promptTemplate: [
      `Generalise the elements each thread of {kernel_name} computes along ${axis} to work_per_thread_${axis}: a loop with`,
      `that trip count (unrollable, since it is a compile-time constant), each element block_size_${axis} apart along the`,
      `${INDEX[axis]} and bounds-checked. A block then covers block_size_${axis} * work_per_thread_${axis} elements in ${axis}.`,
    ].join(' '),
  });
}

function stride(axis: Axis): TuningStep {
  return new TuningStep({
    id: `tile_stride_${axis}`,
    title: `Tunable element stride in ${axis}`,
    dependsOn: [`tunable_nr_elem_${axis}`],
    tuneParams: { [`work_stride_${axis}`]: [0, 1] },
    promptTemplate: [
      `Make the placement of a thread's work_per_thread_${axis} elements along ${axis} in {kernel_name} tunable with`,
      `work_stride_${axis}: 1 keeps them block_size_${axis} apart (neighbouring threads touch neighbouring addresses),`,
      `0 makes them consecutive (each thread covers a contiguous run of work_per_thread_${axis} elements). Both must cover`,
      `exactly the same elements per block, so the grid stays as it is.`,
    ].join(' '),
  });
}

function tiling(axis: Axis): TuningStep {
  return new TuningStep({
    id: `multi_dimensional_tiling_${axis}`,
    title: `Output tiling in ${axis}`,
    dependsOn: axis === 'x' ? ['block_size_x'] : ['multi_dimensional_tiling_x', 'block_size_y'],
    tuneParams: { [`tile_size_${axis}`]: [1, 2, 4, 8] },
    gridDivisors: { [axis]: [`block_size_${axis}`, `tile_size_${axis}`] },
    promptTemplate: [
      `Let every thread of {kernel_name} compute a tile of tile_size_${axis} outputs along ${axis} (the ${INDEX[axis]}),`,
      `keeping the partial results in registers so that each value loaded from memory is reused across the tile. The`,
      `tile's outputs are block_size_${axis} apart; a block covers block_size_${axis} * tile_size_${axis} outputs in ${axis}.`,
      `Bounds-check every output of the tile.`,
    ].join(' '),
  });
}

/** The seed's default sequence, with our prompts. */
export function defaultTuningSteps(): TuningStep[] {
  return [
    blockSize('x'),
    blockSize('y'),
    twoElements('x'),
    elementsPerThread('x'),
    stride('x'),
    twoElements('y'),
    elementsPerThread('y'),
    stride('y'),
    new TuningStep({
      id: 'shared_memory_input',
      title: 'Inputs through shared memory',
      tuneParams: { use_shared_mem: [0, 1] },
      promptTemplate: [
        'Where threads of a block of {kernel_name} read the same input elements (or neighbouring ones) from global memory,',
        'stage those inputs in shared memory: load each needed element once per block, __syncthreads(), then read them',
        'from shared memory. Put the staging under `#if use_shared_mem` with the original global reads in the `#else`,',
        'so both variants are tuned. Size shared arrays with block sizes and other tunable parameters only.',
      ].join(' '),
    }),
    new TuningStep({
      id: 'shared_memory_output',
      title: 'Outputs through shared memory',
      tuneParams: { output_shared_mem: [0, 1] },
      promptTemplate: [
        'Where {kernel_name} writes its outputs in a pattern that is poorly coalesced, or accumulates into the same outputs',
        'repeatedly, collect a block\'s outputs in shared memory and write them to global memory once at the end, in a',
        'coalesced order (after a __syncthreads()). Put this under `#if output_shared_mem` with the direct writes in the',
        '`#else`, so both variants are tuned.',
      ].join(' '),
    }),
    new TuningStep({
      id: 'memory_prefetching',
      title: 'Prefetching',
      dependsOn: ['shared_memory_input'],
      promptTemplate: [
        'Overlap {kernel_name}\'s global memory loads with computation: load the data of the next iteration (the next tile',
        'staged in shared memory, or the next elements into registers) before computing on the current one, double',
        'buffering where shared memory is used. Keep every bounds check and the synchronisation correct for the last',
        'iteration.',
      ].join(' '),
    }),
    tiling('x'),
    tiling('y'),
    new TuningStep({
      id: 'loop_unrolling',
      title: 'Loop unrolling',
      tuneParams: { loop_unroll_factor: [1, 2, 4, 8] },
      promptTemplate: [
        'Unroll the main loop of {kernel_name} (the loop with the most iterations per thread) by loop_unroll_factor with',
        '`#pragma unroll loop_unroll_factor`. If its trip count is not a compile-time constant the pragma still applies;',
        'the results must not change for trip counts that are not a multiple of the factor.',
      ].join(' '),
    }),
    new TuningStep({
      id: 'instruction_parallelism',
      title: 'Instruction-level parallelism',
      promptTemplate: [
        'Increase the instruction-level parallelism of {kernel_name}: where a loop accumulates into one variable, use',
        'several independent accumulators combined at the end; issue independent loads before their results are needed.',
        'The results must stay within floating-point rounding of the original (reassociation is acceptable).',
      ].join(' '),
    }),
  ];
}
