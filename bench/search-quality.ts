// Issue 15's search-quality benchmark: every strategy of ours replays every usable cache of the benchmark hub
// (bench/search-quality/hub, laid out by bench/search-quality/prepare.sh) at budgets of 50, 100, 200 and 400
// evaluations and of recorded time (the end of the methodology's time range), 10 seeds each, and is scored by the mean
// best found (% of the optimum) and the autotuning_methodology's score; Kernel Tuner 1.4.0's strategies beside them,
// from the same caches in its own simulation mode. No GPU.
//   node dist/bench/search-quality.js [--caches convolution_milo/A100,...] [--strategies a,b] [--budgets 50,time]
//       [--seeds 10] [--first-seed 0] [--markdown FILE] [--no-kt] [--strategy-option KEY=VALUE ...]
// --first-seed: our searches use seeds first-seed .. first-seed + seeds - 1, so that a table can be measured on other
// seeds than those a strategy's defaults were tuned on.
// Kernel Tuner's side: with /usr/bin/python3 (numpy, scipy, ...) and kernel_tuner in kernel_tuner/.vendor, its
// run_kt.py runs as a subprocess for the same caches, budgets and seeds (it resumes from its run files, so a grid done
// before costs nothing) and summarise.py scores it; without them the committed results/kt-1.4.0/summary.json is read,
// and the output says which. JSON of our cells to $OUT/bench-search-quality.json when OUT is set.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { strategies } from '../src/tuner/strategies';
import { parseStrategyOptionFlag } from '../src/tuner/strategies/options';
import { listCaches, loadProblem } from './search-quality/hub';
import { aggregateCells, BUDGETS, runOnce, summariseRuns, timeBudgetS, type Aggregate, type Budget, type CacheSummary } from './search-quality/quality';
import { writeBenchJson } from './support/output';

const root = path.resolve(__dirname, '..', '..'); // the bundle runs from dist/bench/
const here = path.join(root, 'bench', 'search-quality');

interface KtSummary {
  caches: Record<string, CacheSummary>;
  aggregate: Record<string, { caches: string[]; strategies: Record<string, Partial<Record<Budget, Aggregate>>> }>;
}

function option(list: string | undefined, all: readonly string[]): string[] {
  return list === undefined ? [...all] : list.split(',').map((s) => s.trim()).filter(Boolean);
}

/** Runs Kernel Tuner's side when its Python and sources are here; else reads the committed summary. */
function kernelTuner(caches: string[], budgets: string[], seeds: number, skip: boolean): { summary: KtSummary | undefined; source: string } {
  const summaryPath = path.join(here, 'results', 'kt-1.4.0', 'summary.json');
  const python = '/usr/bin/python3';
  const vendor = path.join(here, 'kernel_tuner', '.vendor', 'kernel_tuner');
  const deps = !skip && existsSync(vendor) && spawnSync(python, ['-c', 'import numpy, scipy, sklearn, pandas, jsonschema, xmltodict'], { stdio: 'ignore' }).status === 0;
  let source: string;
  if (deps) {
    const args = [path.join(here, 'kernel_tuner', 'run_kt.py'), '--caches', caches.join(','), '--budgets', budgets.join(','), '--seeds', String(seeds)];
    process.stderr.write(`Kernel Tuner 1.4.0: ${python} ${args.map((a) => path.relative(root, a) || a).join(' ')}\n`);
    const run = spawnSync('nice', ['-n', '10', python, ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (run.status !== 0) throw new Error(`run_kt.py failed (exit ${run.status})`);
    const summarise = spawnSync(python, [path.join(here, 'kernel_tuner', 'summarise.py'), '--markdown', path.join(here, 'results', 'kt-1.4.0.md')], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (summarise.status !== 0) throw new Error(`summarise.py failed (exit ${summarise.status})`);
    source = 'run in this call by kernel_tuner/run_kt.py (Kernel Tuner 1.4.0 in simulation mode)';
  } else {
    source = skip
      ? `read from ${path.relative(root, summaryPath)} (--no-kt)`
      : `read from ${path.relative(root, summaryPath)}: /usr/bin/python3 with numpy, scipy, sklearn, pandas, jsonschema, xmltodict and kernel_tuner/.vendor (prepare.sh) are not all here, so Kernel Tuner was not run`;
  }
  const summary = existsSync(summaryPath) ? (JSON.parse(readFileSync(summaryPath, 'utf8')) as KtSummary) : undefined;
  if (!summary) source = `not available: ${path.relative(root, summaryPath)} is missing and Kernel Tuner could not run here`;
  return { summary, source };
}

const label = (b: Budget, seconds?: number) => (b === 'time' ? `time${seconds ? ` (${seconds.toFixed(0)} s)` : ''}` : `${b} evals`);
const fmt = (c: { mean_best_percent: number; score: number } | undefined) => (c ? `${c.mean_best_percent.toFixed(1)} (${c.score.toFixed(3)})` : '–');

type Rows = Record<string, Partial<Record<Budget, { mean_best_percent: number; score: number }>>>;

/** A table of strategies × budgets, ours and Kernel Tuner's rows, the best of each column in bold. */
function table(ours: Rows, kt: Rows | undefined, budgets: Budget[], seconds?: number): string {
  const rows = [...Object.entries(ours).map(([s, r]) => [`${s}`, r] as const), ...Object.entries(kt ?? {}).map(([s, r]) => [`KT ${s}`, r] as const)];
  const best = Object.fromEntries(budgets.map((b) => [b, Math.max(...rows.map(([, r]) => r[b]?.mean_best_percent ?? -1))]));
  const lines = [`| strategy | ${budgets.map((b) => label(b, seconds)).join(' | ')} |`, `|---|${budgets.map(() => '---:|').join('')}`];
  for (const [name, row] of rows) {
    lines.push(`| ${name} | ${budgets.map((b) => (row[b] && row[b]!.mean_best_percent === best[b] ? `**${fmt(row[b])}**` : fmt(row[b]))).join(' | ')} |`);
  }
  return lines.join('\n');
}

/** The best of ours against the best of Kernel Tuner's per budget: the issue's bar. */
function bestOfEach(ours: Rows, kt: Rows | undefined, budgets: Budget[]): string {
  const lines = ['| budget | ours: best strategy | mean best % | score | Kernel Tuner: best strategy | mean best % | score |', '|---|---|---:|---:|---|---:|---:|'];
  const top = (rows: Rows, b: Budget) => Object.entries(rows).filter(([, r]) => r[b]).sort(([, x], [, y]) => y[b]!.score - x[b]!.score)[0];
  for (const b of budgets) {
    const o = top(ours, b);
    const k = kt && top(kt, b);
    lines.push(`| ${label(b)} | ${o?.[0] ?? '–'} | ${o?.[1][b]!.mean_best_percent.toFixed(1) ?? '–'} | ${o?.[1][b]!.score.toFixed(3) ?? '–'} | ${k?.[0] ?? '–'} | ${k?.[1][b]!.mean_best_percent.toFixed(1) ?? '–'} | ${k?.[1][b]!.score.toFixed(3) ?? '–'} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      hub: { type: 'string', default: path.join(here, 'hub') },
      caches: { type: 'string' },
      strategies: { type: 'string' },
      budgets: { type: 'string' },
      seeds: { type: 'string', default: '10' },
      'first-seed': { type: 'string', default: '0' },
      markdown: { type: 'string' },
      'no-kt': { type: 'boolean' },
      /** An option of our strategies under Kernel Tuner's name (as `tune --strategy-option`), repeatable. */
      'strategy-option': { type: 'string', multiple: true },
    },
  });
  const hub = values.hub!;
  if (!existsSync(path.join(hub, 'cachefiles'))) throw new Error(`${hub} has no cachefiles/: lay out the benchmark hub with bench/search-quality/prepare.sh first`);
  const { usable, skipped } = listCaches(hub);
  const caches = option(values.caches, usable);
  const names = option(values.strategies, Object.keys(strategies).filter((s) => s !== 'brute_force'));
  const budgets = option(values.budgets, BUDGETS) as Budget[];
  const seeds = Number(values.seeds);
  const firstSeed = Number(values['first-seed']);
  const strategyOptions = Object.fromEntries((values['strategy-option'] ?? []).map(parseStrategyOptionFlag));
  const kt = kernelTuner(caches, budgets, seeds, values['no-kt'] ?? false);

  const summaries: Record<string, CacheSummary> = {};
  const curves: Record<string, Map<string, Float64Array>> = {};
  for (const name of caches) {
    const problem = loadProblem(hub, name);
    const summary: CacheSummary = { space_size: problem.space.size, optimum: problem.stats.optimum, time_budget_s: timeBudgetS(problem), strategies: {} };
    curves[name] = new Map();
    for (const strategy of names) {
      const started = performance.now();
      for (const budget of budgets) {
        const runs = [];
        for (let seed = firstSeed; seed < firstSeed + seeds; seed++) runs.push(await runOnce(problem, strategy, budget, seed, strategyOptions));
        const { cell, curve } = summariseRuns(problem, budget, runs);
        (summary.strategies[strategy] ??= {})[budget] = cell;
        curves[name]!.set(`${strategy}/${budget}`, curve);
      }
      process.stderr.write(`${name} ${strategy}: ${budgets.map((b) => `${b} ${summary.strategies[strategy]![b]!.mean_best_percent.toFixed(1)}%`).join(', ')} (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
    }
    summaries[name] = summary;
  }

  const groups: Record<string, string[]> = { 'All caches': caches };
  for (const kernel of [...new Set(caches.map((c) => c.split('/')[0]!))]) groups[kernel] = caches.filter((c) => c.startsWith(`${kernel}/`));
  // While Kernel Tuner's grid is incomplete, the caches it has run on are compared as a group of their own.
  const withKt = caches.filter((c) => kt.summary?.caches[c]);
  if (withKt.length > 1 && withKt.length < caches.length) groups[`The ${withKt.length} caches Kernel Tuner has run on`] = withKt;
  const aggregates: Record<string, Record<string, Partial<Record<Budget, Aggregate>>>> = {};
  for (const [group, members] of Object.entries(groups)) {
    if (members.length < 2 && group !== 'All caches') continue;
    const rows: Record<string, Partial<Record<Budget, Aggregate>>> = {};
    for (const strategy of names) {
      for (const b of budgets) {
        rows[strategy] = { ...rows[strategy], [b]: aggregateCells(members.map((m) => summaries[m]!.strategies[strategy]![b]!), members.map((m) => curves[m]!.get(`${strategy}/${b}`)!)) };
      }
    }
    aggregates[group] = rows;
  }

  const out: string[] = [
    '# Search quality on the benchmark hub: our strategies and Kernel Tuner 1.4.0\'s',
    '',
    `Command: \`node dist/bench/search-quality.js${firstSeed ? ` --first-seed ${firstSeed}` : ''}\` (${seeds} seeds${firstSeed ? ` from ${firstSeed}` : ''}; no GPU: every search replays the hub's caches). Cells: mean best found as % of the optimum over the seeds, then the autotuning_methodology score in brackets (0 = random search, 1 = the optimum from the first evaluation; over evaluations 1..B for the evaluation budgets, over the methodology's time range for the recorded-time budget); bold: the best of the column. Rows "KT ..." are Kernel Tuner 1.4.0's strategies in its simulation mode, ${kt.source}.`,
    ...(skipped.length > 0 ? ['', `Skipped: ${skipped.map(([n, why]) => `${n} (${why})`).join('; ')}.`] : []),
  ];
  for (const [group, rows] of Object.entries(aggregates)) {
    const members = groups[group]!;
    const ktRows = ktRowsFor(kt.summary, members);
    out.push('', `## ${group}: ${members.length} cache${members.length > 1 ? 's' : ''} (${members.join(', ')})`, '');
    if (kt.summary && !ktRows) out.push(`Kernel Tuner has not run on all of these caches yet (its results cover ${Object.keys(kt.summary.caches).join(', ')}): its rows are left out here.`, '');
    out.push(bestOfEach(rows, ktRows, budgets), '');
    out.push(table(rows, ktRows, budgets));
  }
  for (const name of caches) {
    out.push('', `## ${name}: ${summaries[name]!.space_size} configurations, time budget ${summaries[name]!.time_budget_s.toFixed(0)} s`, '');
    out.push(table(summaries[name]!.strategies, kt.summary?.caches[name]?.strategies, budgets, summaries[name]!.time_budget_s));
  }
  const text = `${out.join('\n')}\n`;
  if (values.markdown) writeFileSync(values.markdown, text);
  else process.stdout.write(text);
  writeBenchJson('search-quality', { seeds, kernelTuner: kt.source, caches: summaries, aggregate: aggregates });
}

/**
 * Kernel Tuner's rows for a group of caches: from its per-cache cells where it ran on every member. The methodology's
 * aggregate score is the mean over the range of the mean over the caches, and every cache's curve has the same length
 * (R points, or B evaluations), so it equals the mean of the per-cache scores: no curve is needed to recompute it.
 */
function ktRowsFor(summary: KtSummary | undefined, members: string[]): Rows | undefined {
  if (!summary || !members.every((m) => summary.caches[m])) return undefined;
  const rows: Rows = {};
  for (const strategy of Object.keys(summary.caches[members[0]!]!.strategies)) {
    for (const b of BUDGETS) {
      const cells = members.map((m) => summary.caches[m]!.strategies[strategy]?.[b]);
      if (cells.some((c) => c === undefined)) continue;
      const mean = (f: (c: NonNullable<(typeof cells)[number]>) => number) => cells.reduce((t, c) => t + f(c!), 0) / cells.length;
      rows[strategy] = { ...rows[strategy], [b]: { mean_best_percent: mean((c) => c.mean_best_percent), score: mean((c) => c.score) } };
    }
  }
  return rows;
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
