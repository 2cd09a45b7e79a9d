// The panel's pure parts: the CUDA tokenizer, the SVG chart, the diff rows and the configurations' sort order.
import { describe, expect, it } from 'vitest';
import { buildChart, escapeXml, formatTime, niceMax } from '../../webview/chart';
import { tokenizeLine, tokenizeLines } from '../../webview/cuda-tokens';
import { parseUnifiedDiff, sideBySide } from '../../webview/diff-rows';
import { sortConfigs } from '../../webview/sort';
import type { ConfigSummary } from '../../src/engine/events';

const kinds = (line: string) => tokenizeLine(line).tokens.filter((t) => t.kind !== 'space').map((t) => [t.kind, t.text]);

describe('CUDA tokenizer', () => {
  it('tells CUDA qualifiers, keywords, types, numbers, strings and comments apart', () => {
    expect(kinds('__global__ void k(const float *x, int n) { // note')).toEqual([
      ['cuda', '__global__'],
      ['type', 'void'],
      ['identifier', 'k'],
      ['operator', '('],
      ['keyword', 'const'],
      ['type', 'float'],
      ['operator', '*'],
      ['identifier', 'x'],
      ['operator', ','],
      ['type', 'int'],
      ['identifier', 'n'],
      ['operator', ')'],
      ['operator', '{'],
      ['comment', '// note'],
    ]);
    expect(kinds('x = 1.5e-3f + 0x1F + 1\'000; s = "a\\"b";')).toEqual([
      ['identifier', 'x'],
      ['operator', '='],
      ['number', '1.5e-3f'],
      ['operator', '+'],
      ['number', '0x1F'],
      ['operator', '+'],
      ['number', "1'000"],
      ['operator', ';'],
      ['identifier', 's'],
      ['operator', '='],
      ['string', '"a\\"b"'],
      ['operator', ';'],
    ]);
  });

  it('reads a directive as one token and carries block comments across lines', () => {
    expect(kinds('#define block_size_x 128 // default')).toEqual([
      ['preprocessor', '#define block_size_x 128 '],
      ['comment', '// default'],
    ]);
    const lines = tokenizeLines(['int a; /* start', 'still comment', 'end */ __syncthreads();']);
    expect(lines[1]).toEqual([{ kind: 'comment', text: 'still comment' }]);
    expect(lines[2]![0]).toEqual({ kind: 'comment', text: 'end */' });
    expect(lines[2]!.find((t) => t.text === '__syncthreads')?.kind).toBe('cuda');
  });

  it('loses no character', () => {
    const line = '  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = __ldg(&x[i]) * 2.0f; /* x */ "q';
    expect(tokenizeLine(line).tokens.map((t) => t.text).join('')).toBe(line);
  });
});

describe('performance chart', () => {
  const input = {
    timeline: [
      { label: 'baseline', timeMs: 2 },
      { label: 'Tile', timeMs: 1 },
    ],
    configs: [
      { key: '128', timeMs: 1, failed: false },
      { key: '256', timeMs: 1.5, failed: false },
      { key: '1024', failed: true },
    ],
    stepTitle: 'Tile <shared> & more',
    width: 800,
    height: 220,
  };

  it('plots the accepted steps against the baseline and every configuration, failures on the axis', () => {
    const chart = buildChart(input);
    expect(chart.timelinePoints.map((p) => p.label)).toEqual(['baseline', 'Tile']);
    // Faster is lower on the chart: the accepted step is below the baseline.
    expect(chart.timelinePoints[1]!.y).toBeGreaterThan(chart.timelinePoints[0]!.y);
    expect(chart.configPoints.map((p) => p.key)).toEqual(['128', '256']);
    expect(chart.configPoints[0]!.y).toBeCloseTo(chart.timelinePoints[1]!.y);
    expect(chart.failedCount).toBe(1);
    expect(chart.svg).toContain('<polyline class="line"');
    expect(chart.svg).toContain('3 tried, 1 failed (×)');
    expect(chart.svg).toContain('Configurations: Tile &lt;shared&gt; &amp; more');
    // CSP: colours come from classes, never from style attributes.
    expect(chart.svg).not.toContain('style=');
  });

  it('draws related sessions beside it on the same step axis: a branch\'s step 2 above the parent\'s step 2', () => {
    const parent = { label: 'the session it branched from', timeline: [{ label: 'baseline', timeMs: 2 }, { label: 'Tile', timeMs: 1 }, { label: 'Unroll', timeMs: 0.5 }] };
    const chart = buildChart({ ...input, others: [parent, { label: 'branch <b>', timeline: [{ label: 'baseline', timeMs: 2 }, { label: 'Vectorise', timeMs: 4 }] }] });
    expect(chart.otherPoints.map((o) => o.label)).toEqual(['the session it branched from', 'branch <b>']);
    // Three steps on the axis now: the session's own step 1 sits where the parent's step 1 does.
    expect(chart.otherPoints[0]!.points.map((p) => p.x)).toEqual([chart.timelinePoints[0]!.x, chart.timelinePoints[1]!.x, expect.any(Number)]);
    expect(chart.otherPoints[0]!.points[2]!.x).toBeGreaterThan(chart.timelinePoints[1]!.x);
    // The slower branch raises the axis: its 4 ms point is the highest.
    expect(Math.min(...chart.otherPoints[1]!.points.map((p) => p.y), ...chart.timelinePoints.map((p) => p.y))).toBe(chart.otherPoints[1]!.points[1]!.y);
    expect(chart.svg).toContain('<polyline class="line other other-0"');
    expect(chart.svg).toContain('<polyline class="line other other-1"');
    expect(chart.svg).toContain('○ the session it branched from, branch &lt;b&gt;');
    expect(chart.svg).not.toContain('style=');
    expect(buildChart(input).otherPoints).toEqual([]);
  });

  it('shortens a step title that does not fit its half', () => {
    const chart = buildChart({ ...input, stepTitle: 'A very long step title that goes on and on and on and on', width: 500 });
    expect(chart.svg).toContain('>Configurations: A very long…</text>');
  });

  it('says what it waits for when there is nothing to plot', () => {
    const chart = buildChart({ timeline: [], configs: [], width: 400, height: 200 });
    expect(chart.svg).toContain('waiting for the baseline');
    expect(chart.svg).toContain('no configurations yet');
    expect(chart.timelinePoints).toEqual([]);
  });

  it('picks round axis maxima and formats times in the right unit', () => {
    expect(niceMax(0.73)).toBeCloseTo(0.8);
    expect(niceMax(2)).toBe(2);
    expect(niceMax(2.1)).toBe(2.5);
    expect(niceMax(0)).toBe(1);
    expect(formatTime(0.0021)).toBe('2.1 µs');
    expect(formatTime(1.5)).toBe('1.5 ms');
    expect(formatTime(1500)).toBe('1.5 s');
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('diff rows', () => {
  const diff = ['--- a/k.cu', '+++ b/k.cu', '@@ -1,4 +1,5 @@', ' a', '-b', '-c', '+B', '+C', '+D', ' e', '\\ No newline at end of file', ''].join('\n');

  it('numbers the lines of both versions', () => {
    const [hunk] = parseUnifiedDiff(diff);
    expect(hunk!.lines.map((l) => [l.kind, l.text, l.oldNo, l.newNo])).toEqual([
      ['context', 'a', 1, 1],
      ['del', 'b', 2, undefined],
      ['del', 'c', 3, undefined],
      ['add', 'B', undefined, 2],
      ['add', 'C', undefined, 3],
      ['add', 'D', undefined, 4],
      ['context', 'e', 4, 5],
    ]);
  });

  it('pairs removed and added runs side by side', () => {
    const rows = sideBySide(parseUnifiedDiff(diff)[0]!);
    expect(rows.map((r) => [r.left?.text, r.right?.text])).toEqual([
      ['a', 'a'],
      ['b', 'B'],
      ['c', 'C'],
      [undefined, 'D'],
      ['e', 'e'],
    ]);
  });
});

describe('configurations sort', () => {
  const configs: ConfigSummary[] = [
    { key: '64', config: { block_size_x: 64 }, status: 'ok', timeMs: 3 },
    { key: '1024', config: { block_size_x: 1024 }, status: 'timeout' },
    { key: '128', config: { block_size_x: 128 }, status: 'ok', timeMs: 1 },
    { key: '256', config: { block_size_x: 256 }, status: 'ok', timeMs: 2 },
  ];

  it('sorts by time either way with untimed configurations last', () => {
    expect(sortConfigs(configs, { column: 'time', descending: false }).map((c) => c.key)).toEqual(['128', '256', '64', '1024']);
    expect(sortConfigs(configs, { column: 'time', descending: true }).map((c) => c.key)).toEqual(['64', '256', '128', '1024']);
  });

  it('sorts by a parameter numerically and by result', () => {
    expect(sortConfigs(configs, { column: 'param:block_size_x', descending: false }).map((c) => c.key)).toEqual(['64', '128', '256', '1024']);
    expect(sortConfigs(configs, { column: 'status', descending: false }).map((c) => c.key)).toEqual(['64', '128', '256', '1024']);
  });
});
