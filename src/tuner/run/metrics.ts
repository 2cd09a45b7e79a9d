// What each configuration's measurements come to, and what a search optimises: Kernel Tuner's `metrics` (named
// expressions, in order, each free to use the ones before it) over time, the work of a launch (flops, bytes), NVML's
// energy and power, the driver's metrics and the tunable parameters, in the tuner's own expression language (never
// eval); edp and GFLOPS/W wherever energy is known; and the objective (Kernel Tuner's objective and
// objective_higher_is_better), checked against all of these before anything runs.
import { compileExpression, unknownNameMessage, type CompiledExpression, type Env } from '../space/expressions';
import { measuredValues, TIME_OBJECTIVE, type ConfigResult, type DriverMetrics, type EnergyReadings, type Objective } from '../types';

export interface MetricOptions {
  /** Named expressions in order: Kernel Tuner's metrics ({"GFLOP/s": "flops / time / 1e6"}); a later one may use an earlier one's name. */
  metrics?: Readonly<Record<string, string>>;
  /** time (default), energy, edp, or the name of a metric or measured quantity. */
  objective?: string;
  /** Whether a larger objective is better (Kernel Tuner's objective_higher_is_better); default false. */
  objectiveHigherIsBetter?: boolean;
  /** The work of one launch, when known: the names flops and bytes in metrics. */
  work?: { flops?: number; bytes?: number };
}

/** A metric or an objective that cannot be computed: the message says which and what is known. */
export class MetricsError extends RangeError {
  override readonly name = 'MetricsError';
}

/** NVML's readings under Kernel Tuner's names, their short names, and what is derived from them. */
const ENERGY_NAMES: readonly string[] = ['nvml_energy', 'nvml_power', 'core_freq', 'mem_freq', 'temperature', 'energy', 'power'] satisfies readonly (keyof EnergyReadings | 'energy' | 'power')[];
const EDP = 'edp';
const GFLOPS_PER_WATT = 'GFLOPS/W';
const DRIVER_NAMES: readonly string[] = [
  'num_regs',
  'local_mem_bytes',
  'static_shared_mem_bytes',
  'dynamic_shared_mem_bytes',
  'max_threads_per_block',
  'active_blocks_per_sm',
  'active_warps_per_sm',
  'occupancy',
] satisfies readonly (keyof DriverMetrics)[];
/** The fields of a Kernel Tuner cache entry besides the parameters: a metric of one of these names would overwrite it there. */
const CACHE_FIELDS = ['time', 'times', 'compile_time', 'verification_time', 'benchmark_time', 'strategy_time', 'framework_time', 'timestamp'];

interface Metric {
  name: string;
  expression: CompiledExpression;
  /** It reads NVML's readings, directly or through an earlier metric. */
  usesEnergy: boolean;
}

export class ResultMetrics {
  private constructor(
    private readonly definitions: readonly Metric[],
    private readonly work: { flops?: number; bytes?: number },
    readonly objective: Objective,
    /** The objective is NVML's energy or power or derived from them: a run without them cannot choose a best. */
    readonly objectiveNeedsEnergy: boolean,
    /** The objective or a metric reads NVML's energy or power: the run measures energy then. */
    readonly usesEnergy: boolean,
  ) {}

  /**
   * Compiles the metrics and checks the objective against everything a run can measure (MetricsError otherwise), so
   * that a typo is reported before any GPU work.
   */
  static create(options: MetricOptions, paramNames: readonly string[]): ResultMetrics {
    const work = options.work ?? {};
    const workNames = (['flops', 'bytes'] as const).filter((n) => work[n] !== undefined);
    const base = ['time', ...workNames, ...ENERGY_NAMES, EDP, ...DRIVER_NAMES];
    const reserved = new Set([...base, 'flops', 'bytes', GFLOPS_PER_WATT, ...CACHE_FIELDS, ...paramNames]);
    const known = [...base, ...paramNames];
    const definitions: Metric[] = [];
    for (const [name, source] of Object.entries(options.metrics ?? {})) {
      if (name.trim() === '') throw new MetricsError('a metric needs a name');
      if (reserved.has(name)) {
        throw new MetricsError(`metric '${name}' has the name of ${paramNames.includes(name) ? 'a tunable parameter' : 'a measured quantity'}: give it another name`);
      }
      if (typeof source !== 'string' || source.trim() === '') throw new MetricsError(`metric '${name}' needs an expression, e.g. "flops / time / 1e6" for GFLOP/s`);
      let expression: CompiledExpression;
      try {
        expression = compileExpression(source, {
          knownNames: known,
          unknownName: (n, k, s) => new MetricsError(`metric '${name}': ${missingWork(n) ?? unknownNameMessage(n, k, s)}`),
        });
      } catch (e) {
        if (e instanceof MetricsError) throw e;
        throw new MetricsError(`metric '${name}': ${(e as Error).message}`);
      }
      const usesEnergy = expression.names.some((n) => ENERGY_NAMES.includes(n) || n === EDP || definitions.some((d) => d.name === n && d.usesEnergy));
      definitions.push({ name, expression, usesEnergy });
      // Only a name the expression language can spell can be used by a later metric ("GFLOP/s" cannot).
      if (/^[A-Za-z_]\w*$/.test(name)) known.push(name);
    }
    const objective = checkedObjective(options, { base, work, definitions });
    const objectiveNeedsEnergy = [...ENERGY_NAMES, EDP, GFLOPS_PER_WATT].includes(objective.name) || definitions.some((d) => d.usesEnergy && d.name === objective.name);
    return new ResultMetrics(definitions, work, objective, objectiveNeedsEnergy, objectiveNeedsEnergy || definitions.some((d) => d.usesEnergy));
  }

  /**
   * The result with its metrics: those whose inputs it has (a configuration timed without energy has no energy
   * metrics). A metric that cannot be evaluated (a division by zero) is left out and said why in the result's note.
   * A configuration that ran without energy readings where the objective needs them is a MetricsError: no search can
   * choose by what was not measured.
   */
  apply(measured: ConfigResult): ConfigResult {
    if (measured.status !== 'ok' && measured.status !== 'stopped_early') return measured;
    // Computed afresh: a cached result's metrics are those of the run that wrote it.
    const { metrics: _recorded, ...result } = measured;
    if (this.objectiveNeedsEnergy && !result.energy && result.status === 'ok') {
      throw new MetricsError(
        `the objective '${this.objective.name}' needs NVML's energy readings, and configuration "${result.key}" has none: ` +
          (result.energyUnavailable ?? 'it was measured without them (a cache recorded without energy: use another cache file, or record one with energy)'),
      );
    }
    const metrics: Record<string, number> = {};
    const { energy } = result;
    if (energy && result.timeMs !== undefined) {
      metrics[EDP] = energy.nvml_energy * (result.timeMs / 1000);
      if (this.work.flops !== undefined && energy.nvml_energy > 0) metrics[GFLOPS_PER_WATT] = this.work.flops / 1e9 / energy.nvml_energy;
    }
    const env: Record<string, Env[string]> = { ...result.config, ...this.work, ...measuredValues({ ...result, metrics }) };
    const problems: string[] = [];
    for (const { name, expression } of this.definitions) {
      if (!expression.names.every((n) => Object.hasOwn(env, n))) continue; // an input it lacks is explained elsewhere (no energy, an earlier metric)
      try {
        const value = expression.evaluate(env);
        if (typeof value === 'string') throw new MetricsError(`gives the string "${value}", not a number`);
        metrics[name] = Number(value);
        env[name] = Number(value);
      } catch (e) {
        problems.push(`metric '${name}' not computed: ${(e as Error).message.split('\n', 1)[0]}`);
      }
    }
    const note = [result.note, ...problems.filter((p) => !result.note?.includes(p))].filter((n) => n !== undefined).join('; ');
    return { ...result, ...(Object.keys(metrics).length > 0 && { metrics }), ...(note !== '' && { note }) };
  }
}

/** Why flops or bytes are unknown names: the spec does not give them. */
function missingWork(name: string): string | undefined {
  return name === 'flops' || name === 'bytes' ? `it uses ${name}, which is not known: give the spec's \`${name}:\` (per launch, an expression over the scalar arguments)` : undefined;
}

function checkedObjective(options: MetricOptions, known: { base: readonly string[]; work: { flops?: number }; definitions: readonly Metric[] }): Objective {
  const name = options.objective ?? TIME_OBJECTIVE.name;
  const higherIsBetter = options.objectiveHigherIsBetter ?? false;
  const names = [...known.base, ...(known.work.flops !== undefined ? [GFLOPS_PER_WATT] : []), ...known.definitions.map((d) => d.name)];
  if (!names.includes(name)) {
    const hint = name === GFLOPS_PER_WATT ? `${GFLOPS_PER_WATT} needs the flops of a launch: give the spec's \`flops:\`` : `it is one of time, energy, edp or a metric's name; known: ${names.join(', ')}`;
    throw new MetricsError(`objective '${name}' is not something a run measures: ${hint}`);
  }
  return { name, higherIsBetter };
}
