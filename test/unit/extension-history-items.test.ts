import { describe, expect, it } from 'vitest';
import type { HistorySummary } from '../../src/engine/store/history-store';
import { formatDate, formatMs, formatSpeedup, sessionItem, stepItem } from '../../src/extension/history-items';

const summary = (patch: Partial<HistorySummary> = {}): HistorySummary => ({
  id: 's1',
  kernelName: 'matmul',
  filePath: 'kernels/matmul.cu',
  createdAt: '2026-11-22T14:05:09.000Z',
  updatedAt: '2026-11-22T14:09:00.000Z',
  device: { name: 'NVIDIA H100' },
  status: 'completed',
  baselineTimeMs: 4,
  bestTimeMs: 1,
  speedup: 4,
  threadId: 's1',
  stepCount: 3,
  ...patch,
});

describe('history tree items', () => {
  it('shows kernel, speed-up, file, device and date for a completed session, with the actions it allows', () => {
    const item = sessionItem(summary(), 'UTC');
    expect(item.label).toBe('matmul');
    expect(item.description).toBe('4.00× · matmul.cu · NVIDIA H100 · 2026-11-22 14:05');
    expect(item.icon).toEqual({ id: 'pass', color: 'testing.iconPassed' });
    expect(item.contextValue.split(' ')).toEqual(['session', 'completed', 'hasCode', 'hasConfigurations']);
    expect(item.collapsible).toBe(true);
    expect(item.tooltip).toContain('- Baseline: 4.00 ms');
    expect(item.tooltip).toContain('- Speed-up: 4.00×');
  });

  it('offers resume only for an interrupted session and shows the status where there is no speed-up', () => {
    const item = sessionItem(summary({ status: 'interrupted', speedup: undefined, bestTimeMs: undefined, stepCount: 0, error: 'interrupted: the window closed\nmore' }), 'UTC');
    expect(item.description.startsWith('interrupted · ')).toBe(true);
    expect(item.contextValue.split(' ')).toEqual(['session', 'interrupted']);
    expect(item.collapsible).toBe(false);
    expect(item.tooltip).toContain('Status: interrupted (interrupted: the window closed)');
    expect(item.icon.id).toBe('debug-pause');
  });

  it('shows where a branch or a replay comes from, and offers to replay a recorded session', () => {
    const branch = sessionItem(summary({ id: 'b1', parent: { id: 's1', threadId: 's1', stepId: '3', stepTitle: 'Tile' }, replayable: true }), 'UTC', 1);
    expect(branch.description).toBe('branch from step 3 (Tile) · 4.00× · matmul.cu · NVIDIA H100 · 2026-11-22 14:05');
    expect(branch.tooltip).toContain('- Branch of session s1, from step 3');
    expect(branch.contextValue.split(' ')).toEqual(['session', 'completed', 'hasCode', 'hasConfigurations', 'replayable']);
    expect(sessionItem(summary({ replayOf: 's0' }), 'UTC').description.startsWith('replay · 4.00× · ')).toBe(true);
    // Collapsible for its branches even without steps of its own.
    expect(sessionItem(summary({ stepCount: 0 }), 'UTC', 1).collapsible).toBe(true);
    expect(sessionItem(summary({ stepCount: 0 }), 'UTC', 0).collapsible).toBe(false);
  });

  it('offers a branch from the steps that started, never from the user\'s edit or a step that did not run', () => {
    expect(stepItem({ stepId: '3', title: 'Tile', status: 'accepted' }).contextValue).toBe('step accepted branchable');
    expect(stepItem({ stepId: '2', title: 'Unroll', status: 'rejected' }).contextValue).toBe('step rejected branchable');
    expect(stepItem({ stepId: '4', title: 'Later', status: 'pending' }).contextValue).toBe('step pending');
    expect(stepItem({ stepId: '5', title: 'Removed', status: 'skipped' }).contextValue).toBe('step skipped');
    expect(stepItem({ stepId: 'edit:3', title: 'Kernel edited by the user before step 3', status: 'accepted' }).contextValue).toBe('step accepted');
    expect(stepItem({ title: 'From an older version', status: 'accepted' }).contextValue).toBe('step accepted');
  });

  it('describes steps with their outcome and time change', () => {
    expect(stepItem({ title: 'Tile', status: 'accepted', timeMs: 1.5, improvementPct: 25 })).toMatchObject({ label: 'Tile', description: 'accepted · 1.50 ms · −25.0% time', icon: { id: 'check' } });
    const rejected = stepItem({ title: 'Unroll', status: 'rejected', reason: 'wrong result: y differs' });
    expect(rejected.description).toBe('rejected');
    expect(rejected.tooltip).toContain('wrong result: y differs');
  });

  it('formats times, speed-ups and dates', () => {
    expect(formatMs(0.01234)).toBe('12.3 µs');
    expect(formatMs(12.345)).toBe('12.3 ms');
    expect(formatMs(2500)).toBe('2.50 s');
    expect(formatSpeedup(1.234)).toBe('1.23×');
    expect(formatSpeedup(12.34)).toBe('12.3×');
    expect(formatDate('2026-01-02T00:30:00.000Z', 'UTC')).toBe('2026-01-02 00:30');
  });
});
