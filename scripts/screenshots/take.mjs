#!/usr/bin/env node
// The README's screenshots of the HTML report and of the panel's graph view, with playwright-core and Debian's
// chromium (no browser download). After `npm run build`:
//   node scripts/screenshots/take.mjs [REPORT.html]
// REPORT.html: a report to show (e.g. the one a GPU run wrote with `tune --report`); default, one written here from a
// replay of examples/matmul_tiled's real cache (no GPU). The graph view is the panel (dist/webview.js) drawing a scripted
// autonomous session (scripts/screenshots/record-session.ts: the unit tests' scripted model and fake GPU) while its
// third step runs, with the step's candidate node selected.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tmp = join(root, '.tmp', 'screenshots');
const media = join(root, 'media', 'screenshots');
mkdirSync(tmp, { recursive: true });

let report = process.argv[2] && resolve(process.argv[2]);
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

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const problems = [];
const watch = (page) => {
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
};
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1500 }, colorScheme: 'light', deviceScaleFactor: 1 });
  watch(page);
  await page.goto(`file://${report}`);
  await page.waitForSelector('#steps table.configs');
  await page.screenshot({ path: join(media, 'report.png') });

  // The panel as VS Code hosts it: its CSS, its bundle, a theme's variables (VS Code's Dark Modern), its CSP.
  const theme = `:root { --vscode-foreground: #cccccc; --vscode-editor-background: #1f1f1f; --vscode-descriptionForeground: #9d9d9d;
    --vscode-font-family: system-ui, sans-serif; --vscode-font-size: 13px; --vscode-editor-font-family: monospace; --vscode-editor-font-size: 12px;
    --vscode-textCodeBlock-background: #2b2b2b; --vscode-panel-border: #3c3c3c; --vscode-charts-blue: #3794ff; --vscode-charts-red: #f14c4c;
    --vscode-charts-yellow: #cca700; --vscode-charts-orange: #d18616; --vscode-charts-green: #89d185; --vscode-focusBorder: #0078d4;
    --vscode-errorForeground: #f85149; --vscode-testing-iconPassed: #73c991; --vscode-testing-iconFailed: #f14c4c; --vscode-badge-background: #616161; --vscode-badge-foreground: #f8f8f8;
    --vscode-button-background: #0078d4; --vscode-button-foreground: #ffffff; --vscode-button-secondaryBackground: #313131; --vscode-button-secondaryForeground: #cccccc; }`;
  const header = { sessionId: 'screenshot', kernelName: 'saxpy', fileName: 'saxpy.cu', startedAt: events[0].at, model: 'openai scripted-model', strategy: 'autonomous' };
  const stub = `const message = ${JSON.stringify({ type: 'session', header, events: running, live: true })};
    window.acquireVsCodeApi = () => ({ postMessage: (m) => m.type === 'ready' && setTimeout(() => window.postMessage(message, '*')), getState: () => undefined, setState: () => undefined });`;
  const csp = "default-src 'none'; style-src 'nonce-n'; script-src 'nonce-n'; img-src data:";
  const html = `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="${csp}"><style nonce="n">${theme}\n${readFileSync(join(root, 'media/panel.css'), 'utf8')}\n${readFileSync(join(root, 'media/chart-and-code.css'), 'utf8')}</style></head>
    <body data-session-id="screenshot"><main id="app"></main><script nonce="n">${stub}</script><script nonce="n">${readFileSync(join(root, 'dist/webview.js'), 'utf8').replace(/\/\/# sourceMappingURL=.*$/m, '')}</script></body></html>`;
  const panel = await browser.newPage({ viewport: { width: 1000, height: 900 }, colorScheme: 'dark' });
  watch(panel);
  panel.on('console', (m) => m.text().includes('Content Security Policy') && problems.push(m.text()));
  await panel.setContent(html);
  await panel.waitForSelector('#graph svg.graph');
  await panel.click('#graph g.node[data-graph="tune"][data-node="runCandidate"]');
  await panel.waitForSelector('#graph-node-details');
  await panel.locator('#graph').screenshot({ path: join(media, 'graph.png') });
} finally {
  await browser.close();
}
if (problems.length > 0) {
  console.error(`the pages reported problems:\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`wrote ${join('media', 'screenshots', 'report.png')} (from ${report}) and ${join('media', 'screenshots', 'graph.png')}`);
