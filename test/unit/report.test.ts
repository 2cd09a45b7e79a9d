// The HTML report of `tune`: written by the bundled CLI from a replay of the tiled matmul example's real cache, one
// file whose data (the snapshot) and page script are inline under a CSP that allows nothing else.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { reportDataOf, renderReportHtml } from '../../src/report/html';
import { reportFromTune, type ReportData } from '../../src/report/model';
import { computeStats } from '../../src/gpu/stats';
import type { ConfigResult, ParamValue } from '../../src/tuner/types';
import { hasChromium, launchChromium } from '../support/chromium-page';

const root = join(__dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'lkt-report-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function tuneReport(...extra: string[]): { html: string; data: ReportData; stdout: string } {
  const file = join(scratch, `${extra.length}.html`);
  const r = spawnSync(process.execPath, [join(root, 'dist', 'cli.js'), 'tune', 'examples/matmul_tiled/tune.yaml', '--simulate', 'examples/matmul_tiled/cache.json', '--report', file, ...extra], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  const html = readFileSync(file, 'utf8');
  return { html, data: reportDataOf(html), stdout: r.stdout };
}

/** The data without what changes from run to run (the time, brute force's unused random seed, as 0) or machine to machine. */
function stable(data: ReportData): unknown {
  const seed = String(data.reproduce.seed);
  return JSON.parse(JSON.stringify({ ...data, generatedAt: '(time)' }).replaceAll(root, '<repo>').replaceAll(scratch, '<scratch>').replaceAll(seed, '0'));
}

/** The report of a search with these results (the first is the best) and nothing else known. */
function reportOf(kernel: string, results: ConfigResult[], tuneParams: Record<string, ParamValue[]> = {}): ReportData {
  return reportFromTune({
    kernel,
    result: { best: results[0], results, strategy: 'brute_force', evaluations: results.length, elapsedMs: 1, stopReason: 'completed', seed: 1 },
    paramNames: Object.keys(tuneParams),
    tuneParams,
    restrictions: [],
    mode: 'test',
    device: null,
    limits: null,
    compilerOptions: [],
    work: null,
    reproduce: { command: 'x', notes: [] },
  });
}

describe('tune --report', () => {
  const { html, data, stdout } = tuneReport();

  it('holds the search, every configuration with its achieved bandwidth and FLOP/s, and what reproduces it', () => {
    expect(stdout).toMatch(/^HTML report: .*0\.html$/m);
    expect(data.kind).toBe('tune');
    expect(data.device).toEqual({ name: 'NVIDIA H200' });
    expect(data.limits).toBeNull();
    expect(data.limitsNote).toMatch(/replayed from examples\/matmul_tiled\/cache\.json without a GPU/);
    const n = 4096;
    expect(data.work).toMatchObject({ flops: 2 * n ** 3, bytes: 3 * n * n * 4 });
    const step = data.steps[0]!;
    expect(step.configs).toHaveLength(44);
    const best = step.configs.find((c) => c.key === step.best!.key)!;
    expect(best.config).toEqual({ block_size_x: 32, block_size_y: 4, tile_size_x: 4, tile_size_y: 8 });
    expect(best.GBps).toBeCloseTo((3 * n * n * 4) / (best.timeMs! * 1e-3) / 1e9, 9);
    expect(best.GFlops).toBeCloseTo((2 * n ** 3) / (best.timeMs! * 1e-3) / 1e9, 9);
    expect(best.bandwidthPct).toBeUndefined();
    expect(step.configs.filter((c) => c.status !== 'ok' && c.status !== 'stopped_early').every((c) => c.GBps === undefined)).toBe(true);
    expect(data.reproduce.command).toBe(`llm-kernel-tuner tune examples/matmul_tiled/tune.yaml --simulate examples/matmul_tiled/cache.json --report ${join(scratch, '0.html')}`);
    expect(data.reproduce.spec!.text).toBe(readFileSync(join(root, 'examples/matmul_tiled/tune.yaml'), 'utf8'));
    expect(stable(data)).toMatchSnapshot();
  });

  it('is one file whose CSP allows only its own script and style: no network, nothing else', () => {
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)![1]!;
    const script = /<script>([\s\S]*)<\/script>\n<\/body>/.exec(html)![1]!;
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    expect(csp).toBe(`default-src 'none'; script-src ${hash(script)}; style-src ${hash(style)}; img-src data:`);
    expect(script).toBe(readFileSync(join(root, 'dist', 'report-page.js'), 'utf8'));
    // The markup and the style name no other resource; the CSP above is what keeps the page script off the network
    // (its libraries name XML namespaces and highlight.js its documentation, in strings that are never fetched).
    const markup = html.replace(script, '');
    expect(markup).not.toMatch(/\b(src|href)=|url\(|@import/);
    expect([...markup.matchAll(/https?:\/\/[^\s"'`)]+/g)].map((m) => m[0])).toEqual([]);
  });

  it('keeps text of the data inert', () => {
    const hostile = reportOf('</script><script>alert(1)</script>', []);
    const page = renderReportHtml(hostile, 'void 0');
    expect(page.match(/<script/g)).toHaveLength(2);
    expect(reportDataOf(page).kernel).toBe('</script><script>alert(1)</script>');
  });

  it.skipIf(!hasChromium)('says in its table which launches of each configuration were verified (Chromium)', async () => {
    const result = (blockSize: number, status: ConfigResult['status'], samples: number[], verified?: ConfigResult['verified']): ConfigResult => ({
      config: { block_size_x: blockSize },
      key: String(blockSize),
      status,
      stats: computeStats(samples),
      ...(status === 'ok' && { timeMs: computeStats(samples).medianMs }),
      ...(status !== 'ok' && { error: { message: 'its timed launches disagree: launch 2 took 0.002 ms, under half the median 0.0245 ms' } }),
      ...(verified && { verified }),
    });
    const best = result(256, 'ok', [0.047, 0.048, 0.047], { inputSets: 2, timedLaunches: [1, 3], of: 3, seed: 9 });
    const flagged = result(128, 'inconsistent_timing', [0.047, 0.002, 0.047, 0.002], { inputSets: 2, timedLaunches: [1, 3, 4], of: 4, seed: 10 });
    const data = reportOf('vector_add', [best, flagged], { block_size_x: [128, 256] });
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.setContent(renderReportHtml(data, readFileSync(join(root, 'dist', 'report-page.js'), 'utf8')));
      const table = page.locator('table.configs');
      const header = await table.locator('thead th').allInnerTexts();
      expect(header.at(-1)).toMatch(/^verified/);
      const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)));
      expect(rows.map((r) => [r[0], r.at(-2)?.split(':')[0], r.at(-1)])).toEqual([
        ['256', 'best', 'input sets 1–2, timed launch 1 and the last of 3'],
        ['128', 'inconsistent timing', 'input sets 1–2, timed launches 1, 3 and the last of 4'],
      ]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
