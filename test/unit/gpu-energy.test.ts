// Kernel Tuner's NVML metrics from an energy run's readings (src/gpu/energy.ts): the counter's slope between update
// moments, the fallback, and the native run's options for a window.
import { describe, expect, it } from 'vitest';
import { ENERGY_WINDOW_MS, summarizeEnergyRun } from '../../src/gpu';
import { energyRunOptions } from '../../src/gpu/energy';
import type { NativeEnergyRun } from '../../src/gpu/native-types';

/** A run at a constant `watts` whose counter moves every `periodMs`, first `phaseMs` after the launches start. */
function steadyRun(watts: number, elapsedMs: number, periodMs: number, phaseMs: number): NativeEnergyRun {
  const start = 1_000_000;
  const counterAt = (t: number) => start + watts * (Math.floor((t - phaseMs) / periodMs) * periodMs + phaseMs);
  const updates = [];
  for (let t = phaseMs; t <= elapsedMs; t += periodMs) updates.push({ tMs: t + 0.3, energyMj: counterAt(t) });
  return {
    launches: 500,
    elapsedMs,
    updates,
    samples: [
      { tMs: 0, powerMw: 150_000, smClockMhz: 1980, memClockMhz: 2619, temperatureC: 40 },
      { tMs: 10, powerMw: 170_000, smClockMhz: 1960, memClockMhz: 2619, temperatureC: 42 },
    ],
  };
}

describe('summarizeEnergyRun', () => {
  it('takes the power from the counter\'s slope between update moments, not the quantized end points', () => {
    // 100 ms updates in a 250 ms window: a before/after difference sees 210 ms of energy over 250 ms (252 W of 300 W).
    const result = summarizeEnergyRun(steadyRun(300, 250, 100, 10), 0.5);
    expect(result.available).toBe(true);
    if (!result.available) return;
    expect(result.nvml_power).toBeCloseTo(300, 6);
    expect(result.powerSource).toBe('energy counter');
  });

  it('energy per launch is the power times the configuration\'s time (Kernel Tuner\'s nvml_energy)', () => {
    const result = summarizeEnergyRun(steadyRun(250, 1000, 20, 5), 2);
    if (!result.available) throw new Error(result.reason);
    expect(result.nvml_energy).toBeCloseTo(0.5, 9); // 250 W × 2 ms
    expect(result.windowMs).toBe(1000);
    expect(result.launches).toBe(500);
  });

  it('averages clocks and temperature over the samples (core_freq, mem_freq, temperature) and keeps the power limit', () => {
    const result = summarizeEnergyRun(steadyRun(250, 1000, 20, 5), 2, 700);
    expect(result).toMatchObject({ available: true, core_freq: 1970, mem_freq: 2619, temperature: 41, powerLimitW: 700 });
  });

  it('with fewer than two updates in the window, uses the power readings, not the counter before and after', () => {
    const result = summarizeEnergyRun(steadyRun(200, 150, 100, 60), 1); // one update, at 60 ms
    expect(result).toMatchObject({ available: true, powerSource: 'power readings', nvml_power: 160 });
  });

  it('ignores counter updates seen before the launches started or after they ended', () => {
    const run = steadyRun(300, 500, 50, 10);
    run.updates.unshift({ tMs: -5, energyMj: 0 });
    run.updates.push({ tMs: 900, energyMj: 1e12 });
    const result = summarizeEnergyRun(run, 1);
    if (!result.available) throw new Error(result.reason);
    expect(result.nvml_power).toBeCloseTo(300, 6);
  });

  it('without an energy counter, uses the mean of the power readings', () => {
    const run: NativeEnergyRun = { ...steadyRun(300, 500, 50, 10), updates: [], energyError: 'NVML_ERROR_NOT_SUPPORTED' };
    const result = summarizeEnergyRun(run, 1);
    expect(result).toMatchObject({ available: true, powerSource: 'power readings', nvml_power: 160 });
  });

  it('says why when the device reports neither', () => {
    const result = summarizeEnergyRun({ launches: 10, elapsedMs: 200, energyError: 'NVML_ERROR_NOT_SUPPORTED (counter)', updates: [], samples: [{ tMs: 0 }] }, 1);
    expect(result).toEqual({ available: false, reason: expect.stringMatching(/neither its energy counter \(NVML_ERROR_NOT_SUPPORTED \(counter\)\) nor its power/) });
  });
});

describe('energyRunOptions', () => {
  it('launches a short kernel in batches of about 20 ms, a long one alone', () => {
    expect(energyRunOptions(0.01, ENERGY_WINDOW_MS).batch).toBe(2000);
    expect(energyRunOptions(3, 1000).batch).toBe(7);
    expect(energyRunOptions(2500, 1000).batch).toBe(1);
    expect(energyRunOptions(1e-6, 1000).batch).toBe(1_000_000);
    expect(energyRunOptions(0, 1000).batch).toBe(1);
  });

  it('asks for the window, prolonged until the counter has changed three times, by a second at most', () => {
    expect(energyRunOptions(1, 300)).toMatchObject({ windowMs: 300, minUpdates: 3, maxWindowMs: 1300 });
  });
});
