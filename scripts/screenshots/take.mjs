#!/usr/bin/env node
// The README's screenshots of the HTML report, of the panel's graph view and of an evolutionary session's lineage tree,
// with playwright-core and Debian's chromium (no browser download). After `npm run build`:
//   node scripts/screenshots/take.mjs [REPORT.html]
//   node scripts/screenshots/take.mjs --lineage SESSION.json [--select VARIANT] [--out FILE.png]
// REPORT.html: a report to show (e.g. the one a GPU run wrote with `tune --report`); default, one written here from a
// replay of examples/matmul_tiled's real cache (no GPU). The graph view is the panel (dist/webview.js) drawing a scripted
// autonomous session (scripts/screenshots/record-session.ts: the unit tests' scripted model and fake GPU) while its
// third step runs, with the step's candidate node selected.
// --lineage: only the lineage tree, from a recorded evolutionary session: a stored session file (as `auto` keeps it,
// or the extension's **Export as JSON report**; e.g. test/fixtures/sessions/evolution-saxpy.fake-gpu.json, recorded on
// the fake GPU), or a session's events as a JSON array (bench/evolution.ts's evolution-session.events.json), drawn by
// the panel with the variant VARIANT selected (default: the fastest), into media/screenshots/lineage.png (or FILE.png).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tmp = join(root, '.tmp', 'screenshots');
const media = join(root, 'media', 'screenshots');
mkdirSync(tmp, { recursive: true });

const { values, positionals } = parseArgs({ allowPositionals: true, options: { lineage: { type: 'string' }, select: { type: 'string' }, out: { type: 'string' } } });

// The panel as VS Code hosts it: its CSS, its bundle, a theme's variables (VS Code's Dark Modern), its CSP.
const THEME = `:root { --vscode-foreground: #cccccc; --vscode-editor-background: #1f1f1f; --vscode-descriptionForeground: #9d9d9d;
    --vscode-font-family: system-ui, sans-serif; --vscode-font-size: 13px; --vscode-editor-font-family: monospace; --vscode-editor-font-size: 12px;
    --vscode-textCodeBlock-background: #2b2b2b; --vscode-panel-border: #3c3c3c; --vscode-charts-blue: #3794ff; --vscode-charts-red: #f14c4c;
    --vscode-charts-yellow: #cca700; --vscode-charts-orange: #d18616; --vscode-charts-green: #89d185; --vscode-charts-purple: #b180d7; --vscode-focusBorder: #0078d4;
    --vscode-errorForeground: #f85149; --vscode-testing-iconPassed: #73c991; --vscode-testing-iconFailed: #f14c4c; --vscode-badge-background: #616161; --vscode-badge-foreground: #f8f8f8;
    --vscode-button-background: #0078d4; --vscode-button-foreground: #ffffff; --vscode-button-secondaryBackground: #313131; --vscode-button-secondaryForeground: #cccccc;
    --vscode-diffEditor-insertedLineBackground: rgba(155, 185, 85, 0.2); --vscode-diffEditor-removedLineBackground: rgba(255, 0, 0, 0.2); }`;

const problems = [];
const watch = (page) => {
  page.on('console', (m) => (m.type() === 'error' || m.text().includes('Content Security Policy')) && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
};

/** A page with the panel showing a session (`header`, `events`), as its host would send them. */
async function panelPage(browser, header, events, live, viewport) {
  const stub = `const message = ${JSON.stringify({ type: 'session', header, events, live }).replace(/</g, '\\u003c')};
    window.acquireVsCodeApi = () => ({ postMessage: (m) => m.type === 'ready' && setTimeout(() => window.postMessage(message, '*')), getState: () => undefined, setState: () => undefined });`;
  const csp = "default-src 'none'; style-src 'nonce-n'; script-src 'nonce-n'; img-src data:";
  const html = `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="${csp}"><style nonce="n">${THEME}\n${readFileSync(join(root, 'media/panel.css'), 'utf8')}\n${readFileSync(join(root, 'media/chart-and-code.css'), 'utf8')}</style></head>
    <body data-session-id="${header.sessionId}"><main id="app"></main><script nonce="n">${stub}</script><script nonce="n">${readFileSync(join(root, 'dist/webview.js'), 'utf8').replace(/\/\/# sourceMappingURL=.*$/m, '')}</script></body></html>`;
  const page = await browser.newPage({ viewport, colorScheme: 'dark' });
  watch(page);
  await page.setContent(html);
  return page;
}

/** The report and graph screenshots (the default). */
async function reportAndGraph(browser) {
  let report = positionals[0] && resolve(positionals[0]);
  if (!report) {
    report = join(tmp, 'matmul_tiled.report.html');
    execFileSync(process.execPath, ['dist/cli.js', 'tune', 'examples/matmul_tiled/tune.yaml', '--simulate', 'examples/matmul_tiled/cache.json', '--report', report], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  await esbuild.build({ bundle: true, platform: 'node', target: 'node20', format: 'cjs', logLevel: 'warning', entryPoints: [join(root, 'scripts/screenshots/record-session.ts')], outfile: join(tmp, 'record-session.js') });
  const eventsFile = join(tmp, 'session-events.json');
  execFileSync(process.execPath, [join(tmp, 'record-session.js'), eventsFile], { cwd: root, stdio: 'inherit' });
  const events = JSON.parse(readFileSync(eventsFile, 'utf8'));
  // While the third step's candidate runs: the last start of the strategy's candidate node.
  const cut = events.findLastIndex((e) => e.type === 'graph.node' && e.graph === 'tune' && e.phase === 'started' && e.node === 'runCandidate');
  const running = events.slice(0, cut + 3);

  const page = await browser.newPage({ viewport: { width: 1200, height: 1500 }, colorScheme: 'light', deviceScaleFactor: 1 });
  watch(page);
  await page.goto(`file://${report}`);
  await page.waitForSelector('#steps table.configs');
  await page.screenshot({ path: join(media, 'report.png') });

  const header = { sessionId: 'screenshot', kernelName: 'saxpy', fileName: 'saxpy.cu', startedAt: events[0].at, model: 'openai scripted-model', strategy: 'autonomous' };
  const panel = await panelPage(browser, header, running, true, { width: 1000, height: 900 });
  await panel.waitForSelector('#graph svg.graph');
  await panel.click('#graph g.node[data-graph="tune"][data-node="runCandidate"]');
  await panel.waitForSelector('#graph-node-details');
  await panel.locator('#graph').screenshot({ path: join(media, 'graph.png') });
  return [`${join('media', 'screenshots', 'report.png')} (from ${report})`, join('media', 'screenshots', 'graph.png')];
}

/** What the panel's header says of a session known by its events alone (the tree does not show it). */
function headerOf(events) {
  const started = events.find((e) => e.type === 'session.started');
  const kernelName = started?.kernel.name ?? 'kernel';
  return { sessionId: 'recording', kernelName, fileName: `${kernelName}.cu`, startedAt: events[0]?.at ?? new Date().toISOString(), model: 'recorded session', strategy: 'evolutionary' };
}

/** Pixels of the lineage screenshot: the tree and the first lines of a variant's details. */
const LINEAGE_SHOT_HEIGHT = 760;

/** The lineage tree of a recorded evolutionary session, a variant selected. */
async function lineage(browser, file) {
  const stored = JSON.parse(readFileSync(resolve(file), 'utf8'));
  const report = Array.isArray(stored) ? { header: headerOf(stored), events: stored } : (stored.report ?? stored);
  if (!Array.isArray(report.events) || !report.header) throw new Error(`${file} holds no session (a stored session file, or a session's events): give one of those`);
  const variants = report.events.filter((e) => e.type === 'population.variant');
  if (variants.length === 0) throw new Error(`${file} is no evolutionary session: its events have no population`);
  const select = values.select ?? variants.findLast((e) => e.best).variant.id;
  const page = await panelPage(browser, report.header, report.events, false, { width: 1100, height: 1200 });
  await page.waitForSelector('#lineage svg.lineage');
  await page.click(`#lineage g.lineage-node[data-node="${select}"]`);
  await page.waitForSelector('#lineage-details');
  const out = values.out ? resolve(values.out) : join(media, 'lineage.png');
  // The tree and the head of the selected variant's details (its diff, configurations and profile run on below).
  await page.locator('#lineage').evaluate((e, height) => Object.assign(e.style, { maxHeight: `${height}px`, overflow: 'hidden' }), LINEAGE_SHOT_HEIGHT);
  await page.locator('#lineage').screenshot({ path: out });
  return [`${out} (from ${file}, ${select} selected)`];
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
let written = [];
try {
  written = values.lineage ? await lineage(browser, values.lineage) : await reportAndGraph(browser);
} finally {
  await browser.close();
}
if (problems.length > 0) {
  console.error(`the pages reported problems:\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`wrote ${written.join(' and ')}`);
