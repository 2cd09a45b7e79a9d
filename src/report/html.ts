/**
 * The report as one self-contained HTML file: the data as JSON, the page's script (webview/report/, bundled by
 * scripts/build.mjs into report-page.js beside the bundles) and its style inline. A Content-Security-Policy with the
 * hashes of exactly that script and style forbids everything else: no network, no other script, in a browser or in a
 * VS Code webview alike.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPORT_DATA_FORMAT, type ReportData } from './model';

const STYLE = `
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --bg: #ffffff; --panel: #f6f8fa; --border: #d1d9e0; --accent: #0969da;
  --good: #1a7f37; --bad: #cf222e; --add: #dafbe1; --del: #ffebe9; --warn: #9a6700; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --panel: #151b23; --border: #3d444d; --accent: #4493f8;
  --good: #3fb950; --bad: #f85149; --add: #12261e; --del: #25171c; --warn: #d29922; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 20px 28px 60px; font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 1.6em; margin: 0 0 4px; } h2 { font-size: 1.2em; margin: 1.6em 0 0.6em; padding-bottom: 4px; border-bottom: 1px solid var(--border); }
h3 { font-size: 1em; margin: 1.2em 0 0.4em; } .muted { color: var(--muted); }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: var(--panel); border: 1px solid var(--border); border-radius: 6px; padding: 8px 10px; overflow: auto; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { background: var(--panel); border: 1px solid var(--border); border-radius: 8px; padding: 8px 14px; min-width: 150px; }
.card .v { font-size: 1.35em; font-weight: 600; } .card .k { color: var(--muted); font-size: 12px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 16px; margin: 0; } dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
table { border-collapse: collapse; font-size: 13px; }
table.grid th, table.grid td { border-bottom: 1px solid var(--border); padding: 3px 10px; text-align: left; white-space: nowrap; }
table.grid td.num, table.grid th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.grid th.sortable { cursor: pointer; user-select: none; } table.grid th.sortable:hover { color: var(--accent); }
table.grid tr.best td { font-weight: 600; color: var(--good); } table.grid tr.failed td { color: var(--muted); }
.bar { display: inline-block; height: 8px; background: var(--accent); border-radius: 2px; vertical-align: middle; margin-right: 6px; opacity: 0.7; }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; border: 1px solid var(--border); }
.status-accepted { color: var(--good); border-color: var(--good); } .status-rejected { color: var(--bad); border-color: var(--bad); } .status-skipped { color: var(--muted); }
ul.warnings { color: var(--warn); padding-left: 20px; }
.sanitizer-hazards .sanitizer-verdict { color: var(--bad); } .sanitizer-unavailable .sanitizer-verdict, .sanitizer-timed_out .sanitizer-verdict { color: var(--warn); } .sanitizer ul { overflow-wrap: anywhere; }
details.step { border: 1px solid var(--border); border-radius: 8px; padding: 6px 12px; margin: 8px 0; } details.step > summary { cursor: pointer; font-weight: 600; }
.table-holder { max-height: 480px; overflow: auto; border: 1px solid var(--border); border-radius: 6px; }
.table-holder thead th { position: sticky; top: 0; background: var(--panel); }
table.diff { width: 100%; border-collapse: collapse; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
table.diff td { padding: 0 6px; white-space: pre; vertical-align: top; } table.diff td.no { color: var(--muted); text-align: right; width: 1%; user-select: none; }
table.diff tr.add td { background: var(--add); } table.diff tr.del td { background: var(--del); } table.diff tr.hunk td { color: var(--accent); background: var(--panel); }
.diff-holder { border: 1px solid var(--border); border-radius: 6px; overflow: auto; max-height: 520px; }
/* The theme variables the panel's chart and highlighting read (media/chart-and-code.css, webview/chart.ts). */
:root { --vscode-foreground: var(--fg); --vscode-descriptionForeground: var(--muted); --vscode-editor-background: var(--bg);
  --vscode-editorWidget-border: var(--border); --vscode-editorHoverWidget-background: var(--panel); --vscode-focusBorder: var(--accent);
  --vscode-font-family: system-ui, -apple-system, "Segoe UI", sans-serif; --vscode-font-size: 12px;
  --vscode-charts-blue: var(--accent); --vscode-charts-red: var(--bad); --vscode-charts-green: var(--good); --vscode-charts-yellow: #bf8803;
  --vscode-charts-orange: #bc4c00; --vscode-charts-purple: #8250df; }
@media (prefers-color-scheme: dark) { :root { --vscode-charts-yellow: #d29922; --vscode-charts-orange: #ffa657; --vscode-charts-purple: #d2a8ff; } }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
`;

/** A file the build puts beside the bundles: beside the running bundle, or in dist/ when run from the sources. */
function bundledAsset(name: string): string {
  const candidates = [join(__dirname, name), join(__dirname, '..', '..', 'dist', name)];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`${name}, a part of the HTML report, is missing (looked for ${candidates.join(', ')}): run npm run build`);
  return readFileSync(found, 'utf8');
}

/** The page script (webview/report/, bundled into dist/report-page.js). */
export function reportPageScript(): string {
  return bundledAsset('report-page.js');
}

/**
 * The page's style: the report's own, then the panel's chart and highlighting rules (media/chart-and-code.css, copied
 * into dist/ by the build), which read VS Code's theme variables: the report defines them from its palette.
 */
export function reportStyle(): string {
  return `${STYLE}\n${bundledAsset('chart-and-code.css')}`;
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** JSON inside <script>: `<` escaped, so no text of the data can close the element. */
function scriptSafeJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function renderReportHtml(data: ReportData, script: string = reportPageScript(), style: string = reportStyle()): string {
  const csp = `default-src 'none'; script-src ${sha256(script)}; style-src ${sha256(style)}; img-src data:`;
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta name="generator" content="llm-kernel-tuner">`,
    `<title>${escapeHtml(data.title)}</title>`,
    `<style>${style}</style>`,
    '</head>',
    '<body>',
    `<main id="report"><h1>${escapeHtml(data.title)}</h1><p class="muted">This report draws itself with its script; its data is in the page.</p></main>`,
    `<script type="application/json" id="report-data">${scriptSafeJson(data)}</script>`,
    `<script>${script}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** The data of a report file (what the snapshot tests read, and what `history` re-renders). */
export function reportDataOf(html: string): ReportData {
  const match = /<script type="application\/json" id="report-data">([\s\S]*?)<\/script>/.exec(html);
  if (!match) throw new Error('not a llm-kernel-tuner HTML report: it has no report data');
  const data = JSON.parse(match[1]!) as ReportData;
  if (data.format !== REPORT_DATA_FORMAT) throw new Error(`report data of format ${String(data.format)}, expected ${REPORT_DATA_FORMAT}`);
  return data;
}
