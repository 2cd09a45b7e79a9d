/**
 * The record of accepted optimization steps (the seed's PerformanceTracker / PerformanceStep): what each step changed,
 * how fast the kernel was before and after, with which parameters; and the totals the report and the UI show.
 */
import { z } from 'zod';
import type { ObjectiveChange } from '../progress/events';
import type { TuningStateValue } from '../state';
import type { Objective } from '../../tuner/types';

export type ParamValue = number | string | boolean;

export interface PerformanceStep {
  description: string;
  /** The kernel code after this step. */
  code: string;
  /** The best time before this step; null only when neither a baseline nor an earlier step was known. */
  oldTimeMs: number | null;
  newTimeMs: number;
  /** (old - new) / old * 100; 0 without an old time. */
  improvementPct: number;
  tunableParams: Record<string, ParamValue[]>;
  restrictions: string[];
  bestParams: Record<string, ParamValue>;
  /** ISO 8601. */
  timestamp: string;
}

export interface NewPerformanceStep {
  description: string;
  code: string;
  newTimeMs: number;
  /** Default: the previous step's new time, else the baseline. */
  oldTimeMs?: number | null;
  tunableParams?: Record<string, ParamValue[]>;
  restrictions?: string[];
  bestParams?: Record<string, ParamValue>;
  timestamp?: Date | string;
}

export interface TotalImprovement {
  /** Time saved from the baseline to the last step, in percent of the baseline. */
  percent: number;
  /** baseline / final: 2 means twice as fast. */
  speedup: number;
  baselineTimeMs: number | null;
  finalTimeMs: number | null;
}

const paramValue = z.union([z.number(), z.string(), z.boolean()]);
const stepSchema = z.object({
  description: z.string(),
  code: z.string(),
  oldTimeMs: z.number().positive().nullable(),
  newTimeMs: z.number().positive(),
  improvementPct: z.number(),
  tunableParams: z.record(z.string(), z.array(paramValue)),
  restrictions: z.array(z.string()),
  bestParams: z.record(z.string(), paramValue),
  timestamp: z.iso.datetime({ offset: true }),
});
const trackerSchema = z.object({ baselineTimeMs: z.number().positive().nullable(), steps: z.array(stepSchema) });
export type PerformanceTrackerJSON = z.infer<typeof trackerSchema>;

function checkTime(what: string, ms: number): void {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`${what} must be a positive number of milliseconds, got ${ms}`);
}

/**
 * How much better `newValue` is than `oldValue`, in percent of it: less time (or energy) is better, unless the
 * objective is higher-is-better (a metric such as GFLOP/s). 0 without an old value.
 */
export function improvementPct(oldValue: number | null, newValue: number, higherIsBetter = false): number {
  if (oldValue === null) return 0;
  return ((higherIsBetter ? newValue - oldValue : oldValue - newValue) / Math.abs(oldValue)) * 100;
}

/**
 * The objective's value of the best so far and of a candidate. A session checkpointed before objectives existed has no
 * bestObjective: its objective is the time.
 */
export function objectiveChange(state: TuningStateValue, objective: Objective, newValue: number): ObjectiveChange {
  const oldValue = state.bestObjective ?? (objective.name === 'time' ? state.bestTimeMs : null);
  if (oldValue === null || oldValue === undefined) throw new Error(`a candidate is judged against the baseline's ${objective.name}, which was not measured`);
  return { name: objective.name, higherIsBetter: objective.higherIsBetter, oldValue, newValue };
}

export class PerformanceTracker {
  private baseline: number | null = null;
  private readonly recorded: PerformanceStep[] = [];

  constructor(baselineTimeMs?: number) {
    if (baselineTimeMs !== undefined) this.setBaselineTime(baselineTimeMs);
  }

  get baselineTimeMs(): number | null {
    return this.baseline;
  }

  setBaselineTime(ms: number): void {
    checkTime('the baseline time', ms);
    this.baseline = ms;
  }

  get steps(): readonly PerformanceStep[] {
    return this.recorded;
  }

  addStep(input: NewPerformanceStep): PerformanceStep {
    checkTime('newTimeMs', input.newTimeMs);
    const oldTimeMs = input.oldTimeMs === undefined ? (this.recorded.at(-1)?.newTimeMs ?? this.baseline) : input.oldTimeMs;
    if (oldTimeMs !== null) checkTime('oldTimeMs', oldTimeMs);
    const timestamp = new Date(input.timestamp ?? Date.now());
    if (Number.isNaN(timestamp.getTime())) throw new RangeError(`timestamp ${String(input.timestamp)} is not a date`);
    const step: PerformanceStep = {
      description: input.description,
      code: input.code,
      oldTimeMs,
      newTimeMs: input.newTimeMs,
      improvementPct: improvementPct(oldTimeMs, input.newTimeMs),
      tunableParams: structuredClone(input.tunableParams ?? {}),
      restrictions: [...(input.restrictions ?? [])],
      bestParams: { ...input.bestParams },
      timestamp: timestamp.toISOString(),
    };
    this.recorded.push(step);
    return step;
  }

  hasImprovements(): boolean {
    return this.recorded.length > 0;
  }

  /** From the baseline to the last step; no change (0 %, 1x) without a baseline or without steps, as in the seed. */
  getTotalImprovement(): TotalImprovement {
    const final = this.recorded.at(-1)?.newTimeMs ?? null;
    if (this.baseline === null || final === null) return { percent: 0, speedup: 1, baselineTimeMs: this.baseline, finalTimeMs: final };
    return { percent: improvementPct(this.baseline, final), speedup: this.baseline / final, baselineTimeMs: this.baseline, finalTimeMs: final };
  }

  /** A Markdown report: baseline, one table row per step, and the total. */
  generateOverview(): string {
    const ms = (value: number | null) => (value === null ? 'n/a' : `${formatNumber(value)} ms`);
    const lines = ['## Performance overview', '', `Baseline: ${ms(this.baseline)}`, ''];
    if (this.recorded.length === 0) {
      lines.push('No performance improvements were recorded.');
      return lines.join('\n');
    }
    lines.push('| # | Step | Before | After | Improvement | Best parameters |', '|---|------|--------|-------|-------------|-----------------|');
    this.recorded.forEach((step, i) => {
      const params = Object.entries(step.bestParams).map(([name, value]) => `${name}=${value}`).join(', ') || 'none';
      lines.push(`| ${i + 1} | ${cell(step.description)} | ${ms(step.oldTimeMs)} | ${ms(step.newTimeMs)} | ${step.improvementPct.toFixed(1)} % | ${cell(params)} |`);
    });
    const total = this.getTotalImprovement();
    lines.push('');
    lines.push(
      total.baselineTimeMs === null
        ? `Final: ${ms(total.finalTimeMs)} after ${this.recorded.length} step(s) (no baseline to compare with).`
        : `Total: ${ms(total.baselineTimeMs)} → ${ms(total.finalTimeMs)}, ${total.percent.toFixed(1)} % less time, ${total.speedup.toFixed(2)}x speed-up over ${this.recorded.length} step(s).`,
    );
    return lines.join('\n');
  }

  toJSON(): PerformanceTrackerJSON {
    return { baselineTimeMs: this.baseline, steps: structuredClone(this.recorded) };
  }

  static fromJSON(json: unknown): PerformanceTracker {
    const parsed = trackerSchema.safeParse(json);
    if (!parsed.success) {
      const where = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
      throw new TypeError(`not a saved PerformanceTracker: ${where}`);
    }
    const tracker = new PerformanceTracker();
    tracker.baseline = parsed.data.baselineTimeMs;
    tracker.recorded.push(...parsed.data.steps);
    return tracker;
  }
}

/** 4 significant digits, without an exponent for the usual range of kernel times. */
function formatNumber(value: number): string {
  return value >= 1000 ? value.toFixed(0) : Number(value.toPrecision(4)).toString();
}

/** A table cell: one line, pipes escaped. */
function cell(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(/\|/g, '\\|');
}
