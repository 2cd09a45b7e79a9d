// Energy and power of a configuration from NVML's readings while its kernel ran back to back (the addon's
// energyBenchmark), in Kernel Tuner's NVMLObserver terms: nvml_power (W), nvml_energy (J per launch), core_freq and
// mem_freq (MHz), temperature (°C).
//
// Why a window of repeated launches: the energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ, Volta and newer) is
// updated by the driver only every 20-100 ms (PETSc's and Zeus's measurements; every 100 ms on the H100s we measured;
// NVML does not document it), and nvmlDeviceGetPowerUsage is a one-second average on Ampere and newer (nvml.h). A
// single launch of a few microseconds is invisible to both, so the kernel runs back to back for at least the window
// (Kernel Tuner's continuous observer: one second), and on until the counter has changed COUNTER_UPDATES times in it.
// The mean power is the slope of the energy counter between the first and the last moment it was seen to change inside
// the window: both ends are update moments, so the counter's coarse steps cost no accuracy, and with at least two
// update periods between them the jitter of when a change is seen (a few ms) costs little. A plain before/after
// difference is off by up to one update period: on an H100, 100 ms of a window of 100 to 300 ms, which read a
// 400 W kernel as 795 W. Energy per launch is that power times the configuration's time, as Kernel Tuner computes
// nvml_energy.

import type { NativeEnergyRun, NativeNvmlSample } from './native-types';
import { mean } from './stats';

/** Default measurement window: the kernel is repeated until it has run this long (Kernel Tuner: 1 s). */
export const ENERGY_WINDOW_MS = 1000;
/** Below this a window holds too few counter updates (every 20-100 ms) for a slope. */
export const MIN_ENERGY_WINDOW_MS = 100;
/** The window goes on until the energy counter has changed this often in it: the slope then spans two update periods. */
export const COUNTER_UPDATES = 3;
/** The kernel is launched in batches of about this much GPU time, each waited for before the window may end. */
export const ENERGY_BATCH_MS = 20;
/** The sampler polls the energy counter this often, and reads power, clocks and temperature every 10th poll. */
export const ENERGY_POLL_MS = 1;
export const SAMPLE_EVERY_POLLS = 10;

export interface NvmlMetrics {
  /** Mean power while the kernel ran back to back (W). */
  nvml_power: number;
  /** Energy of one launch: nvml_power × the configuration's time (J). */
  nvml_energy: number;
  /** Mean SM clock (MHz) and memory clock (MHz), mean GPU temperature (°C), where the device reports them. */
  core_freq?: number;
  mem_freq?: number;
  temperature?: number;
  /** How nvml_power was measured: the energy counter's slope, or the mean of nvmlDeviceGetPowerUsage readings. */
  powerSource: 'energy counter' | 'power readings';
  /** The measurement window: wall time of the back-to-back launches (ms), and how many there were. */
  windowMs: number;
  launches: number;
  /** The power limit the driver enforces (W), read only: a plausible nvml_power stays under it. */
  powerLimitW?: number;
}

/** Energy metrics, or why there are none (no NVML, a device without power readings). */
export type EnergyResult = ({ available: true } & NvmlMetrics) | { available: false; reason: string };

/** The native energy run's options for a kernel taking `timeMs`: batches of about ENERGY_BATCH_MS, a window of
 * `windowMs` prolonged until COUNTER_UPDATES counter changes, and never past `windowMs` plus a second (a device whose
 * counter moves more slowly than that is measured by its power readings). */
export function energyRunOptions(timeMs: number, windowMs: number): { batch: number; windowMs: number; maxWindowMs: number; minUpdates: number } {
  const batch = timeMs > 0 ? Math.min(1_000_000, Math.max(1, Math.ceil(ENERGY_BATCH_MS / timeMs))) : 1;
  return { batch, windowMs, maxWindowMs: windowMs + 1000, minUpdates: COUNTER_UPDATES };
}

function meanOf(samples: readonly NativeNvmlSample[], key: 'powerMw' | 'smClockMhz' | 'memClockMhz' | 'temperatureC'): number | undefined {
  return mean(samples.flatMap((s) => (s[key] === undefined ? [] : [s[key]])));
}

/** Mean power (W) between the first and the last counter change in the window, or undefined with fewer than two. */
function counterPowerW(run: NativeEnergyRun): number | undefined {
  const inWindow = run.updates.filter((u) => u.tMs > 0 && u.tMs <= run.elapsedMs);
  if (inWindow.length < 2) return undefined;
  const first = inWindow[0]!;
  const last = inWindow[inWindow.length - 1]!;
  return last.tMs > first.tMs ? (last.energyMj - first.energyMj) / (last.tMs - first.tMs) : undefined; // mJ/ms = W
}

/** Kernel Tuner's NVML metrics of a run, for a configuration whose time (its median launch) is `timeMs`. */
export function summarizeEnergyRun(run: NativeEnergyRun, timeMs: number, powerLimitW?: number): EnergyResult {
  const fromCounter = counterPowerW(run);
  const readingsMw = meanOf(run.samples, 'powerMw');
  const power = fromCounter ?? (readingsMw === undefined ? undefined : readingsMw / 1000);
  if (power === undefined)
    return {
      available: false,
      reason: `the device reports neither its energy counter (${run.energyError ?? 'it changed fewer than twice in the window'}) nor its power`,
    };
  const metrics: NvmlMetrics = {
    nvml_power: power,
    nvml_energy: (power * timeMs) / 1000,
    powerSource: fromCounter === undefined ? 'power readings' : 'energy counter',
    windowMs: run.elapsedMs,
    launches: run.launches,
  };
  const core = meanOf(run.samples, 'smClockMhz');
  const memory = meanOf(run.samples, 'memClockMhz');
  const temperature = meanOf(run.samples, 'temperatureC');
  if (core !== undefined) metrics.core_freq = core;
  if (memory !== undefined) metrics.mem_freq = memory;
  if (temperature !== undefined) metrics.temperature = temperature;
  if (powerLimitW !== undefined) metrics.powerLimitW = powerLimitW;
  return { available: true, ...metrics };
}
