// The panel's pure parts: CUDA highlighting, the chart's series and Chart.js configuration, the diff rows and the
// configurations' sort order. (The chart on the page, its tooltip and its images are tested in the real VS Code:
// test/e2e/ui.e2e.ts.)
import { describe, expect, it } from 'vitest';
import { chartConfig, chartSeries, chooseScale, DATASET, formatTime, niceMax, type ChartData, type ChartTheme } from '../../webview/chart-series';
import { parseUnifiedDiff, sideBySide } from '../../webview/diff-rows';
import { highlightTokens } from '../../webview/highlight';
import { sortConfigs } from '../../webview/sort';
import { energyNote, formatEnergy, metricColumns, metricRows, metricValue } from '../../webview/config-metrics';
import type { ConfigSummary } from '../../src/engine/progress/events';

/** [text, innermost class] of the non-blank tokens of each line. */
const classesOf = (lines: string[]) => highlightTokens(lines).map((line) => line.filter((t) => t.text.trim()).map((t) => [t.text, t.classes.at(-1) ?? '']));

describe('CUDA highlighting (highlight.js C++ grammar + CUDA words)', () => {
  it('tells CUDA qualifiers, built-ins, types, numbers, strings and comments apart', () => {
    const [signature, body] = classesOf(['__global__ void saxpy(int n, const float *__restrict__ x) { // note', '  float4 v = x[threadIdx.x] * 1.5e-3f + 0x1F; s = "a\\"b"; __syncthreads();']);
    expect(signature).toEqual(
      expect.arrayContaining([
        ['__global__', 'hljs-keyword'],
        ['void', 'hljs-type'],
        ['saxpy', 'hljs-title'],
        ['int', 'hljs-type'],
        ['__restrict__', 'hljs-keyword'],
        ['// note', 'hljs-comment'],
      ]),
    );
    expect(body).toEqual(
      expect.arrayContaining([
        ['float4', 'hljs-type'],
        ['threadIdx', 'hljs-built_in'],
        ['1.5e-3f', 'hljs-number'],
        ['0x1F', 'hljs-number'],
        ['"a\\"b"', 'hljs-string'],
        ['__syncthreads', 'hljs-built_in'],
      ]),
    );
  });

  it('reads a directive as preprocessor and carries a block comment across lines', () => {
    const lines = classesOf(['#define block_size_x 128', 'int a; /* start', 'still comment', 'end */ blockIdx.x;']);
    expect(lines[0]).toEqual([
      ['#', 'hljs-meta'],
      ['define', 'hljs-keyword'],
      [' block_size_x 128', 'hljs-meta'],
    ]);
    expect(lines[2]).toEqual([['still comment', 'hljs-comment']]);
    expect(lines[3]).toEqual([
      ['end */', 'hljs-comment'],
      ['blockIdx', 'hljs-built_in'],
      ['.x;', ''],
    ]);
  });

  it('loses no character and keeps one token list per line, empty lines included', () => {
    const lines = ['  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = __ldg(&x[i]) * 2.0f; /* x */ "q', '', '<script>&amp;</script>'];
    const tokens = highlightTokens(lines);
    expect(tokens.map((line) => line.map((t) => t.text).join(''))).toEqual(lines);
    expect(highlightTokens([])).toEqual([]);
  });
});

const theme: ChartTheme = { foreground: '#111', muted: '#666', grid: '#ddd', background: '#fff', line: 'blue', baseline: 'red', config: 'green', best: 'gold', failed: 'orange', others: ['purple'], fontFamily: 'sans-serif', fontSize: 13 };
const config = (block: number, status: ConfigSummary['status'], timeMs?: number, error?: string): ConfigSummary => ({ key: String(block), config: { block_size_x: block }, status, ...(timeMs !== undefined && { timeMs }), ...(error && { error }) });

describe('performance chart series', () => {
  const data: ChartData = {
    timeline: [
      { label: 'baseline', timeMs: 2 },
      { label: 'Tile the loop', timeMs: 1.25 },
    ],
    configs: [config(128, 'ok', 1.5), config(256, 'ok', 1.25), config(1024, 'exceeds_device_limits', undefined, 'too many threads'), config(64, 'stopped_early', 3)],
    stepTitle: 'Tile the loop',
  };

  it('maps the accepted steps and every configuration to points with what their tooltips say', () => {
    const s = chartSeries(data);
    expect(s.steps.map((p) => [p.x, p.y, p.info.title])).toEqual([
      [0, 2, 'Baseline (original kernel)'],
      [1, 1.25, 'Step 1: Tile the loop'],
    ]);
    expect(s.steps[1]!.info.rows).toEqual([
      ['Time', '1.25 ms'],
      ['Speed-up', '1.60× vs baseline'],
    ]);
    // Timed configurations keep their evaluation order on x; the one without a time sits on the axis floor.
    expect(s.configs.map((p) => [p.x, p.y])).toEqual([
      [1, 1.5],
      [2, 1.25],
      [4, 3],
    ]);
    expect(s.configs[0]!.info).toEqual({
      title: 'block_size_x=128',
      rows: [
        ['Time', '1.5 ms'],
        ['Speed-up', '1.33× vs baseline'],
        ['Step', 'Tile the loop'],
        ['Result', 'ok'],
      ],
    });
    expect(s.configs[2]!.info.rows.at(-1)).toEqual(['Result', 'stopped early (cannot beat the best)']);
    expect(s.best?.info.title).toBe('block_size_x=256');
    expect(s.failed).toEqual([
      {
        x: 3,
        y: s.yMin,
        info: {
          title: 'block_size_x=1024',
          rows: [
            ['Result', 'exceeds device limits'],
            ['Step', 'Tile the loop'],
            ['Error', 'too many threads'],
          ],
        },
      },
    ]);
    expect(s.baselineMs).toBe(2);
    expect(s.summary).toBe(
      'Baseline 2 ms; 1 accepted step(s), now 1.25 ms (1.60×); 4 configuration(s) of "Tile the loop": 3 timed, 1 without a time, fastest 1.25 ms with block_size_x=256.',
    );
  });

  it("numbers a step as the plan numbers it, in its tooltip and on the step axis", () => {
    const numbered = chartSeries({ ...data, timeline: [data.timeline[0]!, { ...data.timeline[1]!, step: 2 }] });
    expect(numbered.steps[1]!.info.title).toBe('Step 2: Tile the loop');
    expect(numbered.stepLabels).toEqual(['baseline', 'step 2']);
    const scales = chartConfig(numbered, theme).options!.scales as Record<string, { ticks: { callback: (v: number) => string } }>;
    expect([0, 1].map((v) => scales.steps!.ticks.callback(v))).toEqual(['baseline', 'step 2']);
    // A related session with more steps goes on with its own numbers.
    const parent = { label: 'parent', timeline: [{ label: 'baseline', timeMs: 2 }, { label: 'Tile', timeMs: 1.5, step: 1 }, { label: 'Unroll', timeMs: 1, step: 3 }] };
    expect(chartSeries({ ...data, timeline: [data.timeline[0]!, { ...data.timeline[1]!, step: 2 }], others: [parent] }).stepLabels).toEqual(['baseline', 'step 2', 'step 3']);
  });

  it('never calls a configuration that stopped early the fastest', () => {
    const s = chartSeries({ ...data, configs: [config(64, 'stopped_early', 0.5), config(128, 'ok', 1)] });
    expect(s.best?.info.title).toBe('block_size_x=128');
  });

  it("puts related sessions on the same step axis, their tooltips naming them: a branch's step 2 above the parent's step 2", () => {
    const parent = { label: 'the session it branched from', timeline: [{ label: 'baseline', timeMs: 2 }, { label: 'Tile', timeMs: 1 }, { label: 'Unroll', timeMs: 0.5 }] };
    const branch = { label: 'branch from step 1', timeline: [{ label: 'baseline', timeMs: 2 }, { label: 'Vectorise', timeMs: 30 }] };
    const s = chartSeries({ ...data, others: [parent, branch, { label: 'a session with no baseline yet', timeline: [] }] });
    expect(s.others.map((o) => [o.label, o.points.map((p) => [p.x, p.y])])).toEqual([
      ['the session it branched from', [[0, 2], [1, 1], [2, 0.5]]],
      ['branch from step 1', [[0, 2], [1, 30]]],
    ]);
    expect(s.others[0]!.points[2]!.info).toEqual({ title: 'Step 2: Unroll — the session it branched from', rows: [['Time', '500 µs'], ['Speed-up', '4.00× vs baseline']] });
    expect(s.others[1]!.points[0]!.info.title).toBe('Baseline (original kernel) — branch from step 1');
    // The slower branch spans a decade with the parent's fastest step: the time axis holds both.
    expect([s.scale, s.yMin, s.yMax]).toEqual(['logarithmic', 0.1, 100]);
    expect(s.summary).toContain('; beside it, the session it branched from: 2 accepted step(s), now 500 µs; beside it, branch from step 1: 1 accepted step(s), now 30 ms;');
    expect(chartSeries(data).others).toEqual([]);
  });

  it('says what it waits for when there is nothing to plot yet', () => {
    const s = chartSeries({ timeline: [], configs: [] });
    expect(s.steps).toEqual([]);
    expect(s.summary).toBe('Waiting for the baseline time.');
    expect([s.scale, s.yMin, s.yMax]).toEqual(['linear', 0, 1]);
    expect(chartSeries({ timeline: [], configs: [config(1, 'ok', 2)] }).configs[0]!.info.rows[1]).toEqual(['Speed-up', 'n/a (no baseline yet)']);
  });
});

describe('time scale', () => {
  it('is logarithmic as soon as the times span a decade, linear otherwise', () => {
    expect(chooseScale([1, 2, 9.9])).toBe('linear');
    expect(chooseScale([0.5, 5])).toBe('logarithmic');
    expect(chooseScale([0.002, 0.5, 30])).toBe('logarithmic');
    expect(chooseScale([3])).toBe('linear');
    expect(chooseScale([0, Number.NaN, 1])).toBe('linear');
  });

  it('bounds a linear axis from 0 to a round number and a log axis to whole decades', () => {
    const linear = chartSeries({ timeline: [{ label: 'baseline', timeMs: 2 }], configs: [config(1, 'ok', 1.9)] });
    expect([linear.scale, linear.yMin, linear.yMax]).toEqual(['linear', 0, 2.5]);
    const log = chartSeries({ timeline: [{ label: 'baseline', timeMs: 40 }], configs: [config(1, 'ok', 0.3), config(2, 'timeout')] });
    expect([log.scale, log.yMin, log.yMax]).toEqual(['logarithmic', 0.1, 100]);
    expect(log.failed[0]!.y).toBe(0.1);
    expect(log.summary).toMatch(/time on a log scale\.$/);
  });

  it('picks round axis maxima and formats times in the right unit', () => {
    expect(niceMax(0.73)).toBeCloseTo(0.8);
    expect(niceMax(2)).toBe(2);
    expect(niceMax(2.1)).toBe(2.5);
    expect(niceMax(0)).toBe(1);
    expect(formatTime(0.0021)).toBe('2.1 µs');
    expect(formatTime(1.5)).toBe('1.5 ms');
    expect(formatTime(1500)).toBe('1.5 s');
  });
});

describe('Chart.js configuration', () => {
  const series = chartSeries({
    timeline: [
      { label: 'baseline', timeMs: 40 },
      { label: 'Unroll', timeMs: 2 },
    ],
    configs: [config(128, 'ok', 2), config(1024, 'timeout')],
    stepTitle: 'Unroll',
  });
  const c = chartConfig(series, theme);
  const byLabel = (label: string) => c.data.datasets.filter((d) => d.label === label);

  it('plots steps and configurations on two x axes side by side over one time axis, in the theme', () => {
    const scales = c.options!.scales as Record<string, Record<string, unknown>>;
    expect(scales.y).toMatchObject({ type: 'logarithmic', min: 1, max: 100 });
    expect(scales.steps).toMatchObject({ position: 'bottom', stack: 'x' });
    expect(scales.configs).toMatchObject({ position: 'bottom', stack: 'x', title: { text: 'Configurations: Unroll', color: '#666' } });
    expect(byLabel(DATASET.steps)[0]).toMatchObject({ xAxisID: 'steps', showLine: true, borderColor: 'blue', data: series.steps });
    expect(byLabel(DATASET.configs)[0]).toMatchObject({ xAxisID: 'configs', pointBackgroundColor: 'green', data: series.configs });
    expect(byLabel(DATASET.failed)[0]).toMatchObject({ pointStyle: 'crossRot', pointBorderColor: 'orange', data: series.failed });
    expect(byLabel(DATASET.best)[0]!.data).toEqual([series.best]);
    // The baseline runs across both halves, dashed, in the theme's red.
    expect(byLabel(DATASET.baseline).map((d) => [d.xAxisID, d.data.map((p) => p.y), d.borderColor])).toEqual([
      ['steps', [40, 40], 'red'],
      ['configs', [40, 40], 'red'],
    ]);
    expect(c.options!.animation).toBe(false);
  });

  it('labels the step axis and the time ticks for people', () => {
    const scales = c.options!.scales as Record<string, { ticks: { callback: (v: number) => string } }>;
    expect([0, 1].map((v) => scales.steps!.ticks.callback(v))).toEqual(['baseline', 'step 1']);
    // Log axis: the powers of ten are labelled, the lines between them are not.
    expect([0.01, 1, 3, 100].map((v) => scales.y!.ticks.callback(v))).toEqual(['10 µs', '1 ms', '', '100 ms']);
    const linear = chartConfig(chartSeries({ timeline: [{ label: 'baseline', timeMs: 2 }], configs: [] }), theme).options!.scales as typeof scales;
    expect(linear.y!.ticks.callback(1.5)).toBe('1.5 ms');
  });

  it('numbers the configurations axis in whole steps, at most about a dozen labels', () => {
    const ticksOf = (n: number) => {
      const many = chartSeries({ timeline: [], configs: Array.from({ length: n }, (_, i) => config(i, 'ok', 1)) });
      const axis = { ticks: [] as { value: number }[] };
      ((chartConfig(many, theme).options!.scales as Record<string, { afterBuildTicks: (a: typeof axis) => void }>).configs!.afterBuildTicks)(axis);
      return axis.ticks.map((t) => t.value);
    };
    expect(ticksOf(3)).toEqual([1, 2, 3]);
    expect(ticksOf(40)).toEqual([4, 8, 12, 16, 20, 24, 28, 32, 36, 40]);
  });

  it("draws each related session's steps as a dashed line in the theme's colours in turn, under the session's own", () => {
    const related = (label: string, ms: number[]) => ({ label, timeline: ms.map((timeMs, i) => ({ label: i === 0 ? 'baseline' : `step ${i}`, timeMs })) });
    const others = [related('the session it branched from', [40, 2, 1.5, 1]), related('branch from step 1', [40, 3]), related('branch from step 1', [40, 5]), related('branch from step 2', [40, 2, 4])];
    const withOthers = chartConfig(chartSeries({ timeline: [{ label: 'baseline', timeMs: 40 }, { label: 'Unroll', timeMs: 2 }], others, configs: [] }), { ...theme, others: ['purple', 'teal', 'olive'] });
    const lines = withOthers.data.datasets.filter((d) => d.xAxisID === 'steps' && d.label !== DATASET.steps && d.label !== DATASET.baseline);
    expect(lines.map((d) => [d.label, d.borderColor, d.pointBorderColor, d.data.length])).toEqual([
      ['the session it branched from', 'purple', 'purple', 4],
      ['branch from step 1', 'teal', 'teal', 2],
      ['branch from step 1', 'olive', 'olive', 2],
      ['branch from step 2', 'purple', 'purple', 3],
    ]);
    expect(lines[0]).toMatchObject({ showLine: true, borderDash: [5, 3], pointBackgroundColor: '#fff', order: 1 });
    // The step axis reaches the longest series (the parent's step 3), a tick on every step.
    const scales = withOthers.options!.scales as Record<string, { max: number; afterBuildTicks: (a: { ticks: { value: number }[] }) => void }>;
    const axis = { ticks: [] as { value: number }[] };
    scales.steps!.afterBuildTicks(axis);
    expect(axis.ticks.map((t) => t.value)).toEqual([0, 1, 2, 3]);
    expect(scales.steps!.max).toBeCloseTo(3.3);
    // The legend names every related session, even two with the same label, and the baseline once.
    const legend = withOthers.options!.plugins!.legend!.labels!.filter as (item: { text: string; datasetIndex: number }, data: typeof withOthers.data) => boolean;
    const shown = withOthers.data.datasets.filter((d, datasetIndex) => legend({ text: d.label!, datasetIndex }, withOthers.data)).map((d) => d.label);
    expect(shown.filter((l) => l === 'branch from step 1')).toHaveLength(2);
    expect(shown.filter((l) => l === DATASET.baseline)).toHaveLength(1);
  });

  it('draws tooltips through the given renderer only, never for the baseline line', () => {
    const external = () => undefined;
    const tooltip = chartConfig(series, theme, external).options!.plugins!.tooltip!;
    expect(tooltip).toMatchObject({ enabled: false, external });
    const filter = tooltip.filter as (item: { dataset: { label: string } }) => boolean;
    expect(filter({ dataset: { label: DATASET.baseline } })).toBe(false);
    expect(filter({ dataset: { label: DATASET.configs } })).toBe(true);
    expect(chartConfig(series, theme).options!.plugins!.tooltip!.external).toBeUndefined();
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

  it('drops the CR of a CRLF file from the shown lines and refuses a malformed diff', () => {
    const [hunk] = parseUnifiedDiff('--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n');
    expect(hunk!.header).toBe('@@ -1,2 +1,2 @@');
    expect(hunk!.lines.map((l) => l.text)).toEqual(['a', 'b', 'B']);
    expect(() => parseUnifiedDiff('--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n')).toThrow();
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

describe('configuration metrics in the table, the tooltips and the best', () => {
  const driver = (num_regs: number, occupancy: number, local = 0): ConfigSummary['driver'] => ({ num_regs, local_mem_bytes: local, static_shared_mem_bytes: 4096, dynamic_shared_mem_bytes: 1024, occupancy, occupancy_source: 'driver' });
  const fast: ConfigSummary = { key: 'fast', config: { block_size_x: 256 }, status: 'ok', timeMs: 1, driver: driver(40, 0.5), energy: { nvml_energy: 0.0005, nvml_power: 500, core_freq: 1980, mem_freq: 2619, temperature: 51 }, metrics: { edp: 5e-7 } };
  const lean: ConfigSummary = { key: 'lean', config: { block_size_x: 128 }, status: 'ok', timeMs: 1.2, driver: driver(32, 1, 16), energy: { nvml_energy: 0.00036, nvml_power: 300 }, metrics: { edp: 4.32e-7 } };
  const broken: ConfigSummary = { key: 'broken', config: { block_size_x: 1024 }, status: 'compile_error', error: 'no' };

  it('has a column for each measured quantity some configuration has, and none for what none has', () => {
    const columns = metricColumns([fast, lean, broken]);
    expect(columns.map((c) => c.label)).toEqual(['Registers', 'Local memory', 'Shared memory', 'Occupancy', 'Energy', 'Power', 'edp']);
    expect(columns.map((c) => c.text(lean))).toEqual(['32', '16 B', '5 KiB', '100%', '360 µJ', '300 W', '4.32e-7']);
    expect(columns.map((c) => c.text(broken))).toEqual(['', '', '', '', '', '', '']);
    // No spills, no energy: no such columns.
    expect(metricColumns([{ ...fast, driver: driver(40, 0.5), energy: undefined, metrics: undefined }]).map((c) => c.label)).toEqual(['Registers', 'Shared memory', 'Occupancy']);
    expect(formatEnergy(1.5)).toBe('1.5 J');
    expect(formatEnergy(0.0123)).toBe('12.3 mJ');
  });

  it('sorts by a metric column, configurations without the value last', () => {
    expect(sortConfigs([fast, broken, lean], { column: 'metric:energy', descending: false }).map((c) => c.key)).toEqual(['lean', 'fast', 'broken']);
    expect(sortConfigs([fast, broken, lean], { column: 'metric:occupancy', descending: true }).map((c) => c.key)).toEqual(['lean', 'fast', 'broken']);
    expect(sortConfigs([fast, broken, lean], { column: 'metric:edp', descending: true }).map((c) => c.key)).toEqual(['fast', 'lean', 'broken']);
    expect(metricValue(lean, 'metric:shared')).toBe(5120);
  });

  it("adds a point's metrics, clocks and temperature to its tooltip, and says why energy is missing", () => {
    const s = chartSeries({ timeline: [{ label: 'baseline', timeMs: 2 }], configs: [fast, lean, broken] });
    expect(s.configs[0]!.info.rows.slice(4)).toEqual([
      ['Registers', '40'],
      ['Shared memory', '5 KiB'],
      ['Occupancy', '50%'],
      ['Energy', '500 µJ'],
      ['Power', '500 W'],
      ['edp', '5e-7'],
      ['Clocks', 'SM 1980 MHz, memory 2619 MHz'],
      ['Temperature', '51 °C'],
    ]);
    const reason = 'NVML is not loaded: libnvidia-ml.so.1: cannot open shared object file';
    const unmeasured = { ...lean, energy: undefined, metrics: undefined, energyUnavailable: reason };
    expect(metricRows(unmeasured).at(-1)).toEqual(['Energy', `not measured: ${reason}`]);
    expect(energyNote([unmeasured, broken])).toBe(`Energy and power not measured: ${reason}`);
    expect(energyNote([fast, unmeasured])).toBeUndefined();
    expect(energyNote([broken])).toBeUndefined();
  });

  it('marks the best by the objective: the fastest for time, the leanest for energy', () => {
    const data: ChartData = { timeline: [{ label: 'baseline', timeMs: 2 }], configs: [fast, lean, broken], stepTitle: 'Tile' };
    expect(chartSeries(data).best?.info.title).toBe('block_size_x=256');
    const byEnergy = chartSeries({ ...data, objective: { name: 'energy', higherIsBetter: false } });
    expect(byEnergy.best?.info.title).toBe('block_size_x=128');
    expect(byEnergy.summary).toMatch(/least energy 0\.00036 J \(1\.2 ms\) with block_size_x=128\.$/);
    expect(chartSeries({ ...data, objective: { name: 'occupancy', higherIsBetter: true } }).summary).toMatch(/highest occupancy 1 \(1\.2 ms\) with block_size_x=128\.$/);
  });
});
