// The chart's data as tables for screen readers (webview/chart-data.ts), on the recorded H100 session.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TuningEvent } from '../../src/engine/progress/events';
import { reduceAll } from '../../src/engine/session/session-view';
import { chartTables, sessionChartData } from '../../webview/chart-data';

const events = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'sessions', 'h100-matmul-naive.events.json'), 'utf8')) as TuningEvent[];
const header = { sessionId: 'h100', kernelName: 'matmul_naive', fileName: 'matmul_naive.cu', startedAt: events[0]!.at, model: 'scripted answers (test double)', strategy: 'autonomous' as const };

describe('the chart as tables', () => {
  it('lists the baseline and every accepted step with its speed-up, then the configurations of the last step', () => {
    const [timeline, configs] = chartTables(sessionChartData(reduceAll(header, events)));
    expect(timeline).toEqual({
      caption: 'Time per accepted step (chart, left)',
      columns: ['Point', 'Median time', 'Speed-up over the baseline'],
      rows: [
        ['baseline', '329 µs', '1.00×'],
        ['Shared-memory tiling', '240 µs', '1.37×'],
      ],
    });
    expect(configs).toEqual({
      caption: 'Configurations of step "Shared-memory tiling" (chart, right)',
      columns: ['block_size_x', 'block_size_y', 'Median time', 'Result'],
      rows: [
        ['16', '16', '268 µs', 'ok'],
        ['32', '32', '240 µs', 'ok'],
      ],
    });
  });

  it('has nothing to say before the baseline is timed', () => {
    expect(chartTables(sessionChartData(reduceAll(header, events.slice(0, 3))))).toEqual([]);
  });
});
