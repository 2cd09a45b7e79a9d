#!/usr/bin/env node
// One build for everything: the Node-API addon (cmake-js) and every JavaScript bundle (esbuild).
//   node scripts/build.mjs                 addon + bundles
//   node scripts/build.mjs --native-only   addon only
//   node scripts/build.mjs --js-only       bundles only (the addon from an earlier build is kept)
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { svgcanvasCspPatch } from './esbuild-plugins.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const args = new Set(process.argv.slice(2));
const wantNative = !args.has('--js-only');
const wantJs = !args.has('--native-only');

function buildNative() {
  const buildDir = join(root, 'build', 'native');
  const cmakeJs = join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
  execFileSync(process.execPath, [cmakeJs, 'compile', '--directory', join(root, 'native'), '--out', buildDir, '--config', 'Release'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    cwd: root,
  });
  const built = join(buildDir, 'Release', 'kernel_tuner_native.node');
  mkdirSync(join(dist, 'native'), { recursive: true });
  copyFileSync(built, join(dist, 'native', 'kernel_tuner_native.node'));
  console.log(`native: ${relative(root, join(dist, 'native', 'kernel_tuner_native.node'))}`);
}

/** Test and benchmark files that run with `node --test` on the GPU machine (no node_modules there). */
function listEntries(dir, suffix) {
  const full = join(root, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full)
    .filter((f) => f.endsWith(suffix))
    .map((f) => join(full, f));
}

async function buildJs() {
  const common = {
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: 'linked',
    logLevel: 'warning',
    // tree-sitter's WASM grammar and the addon are files beside the bundle, never inlined.
    external: ['vscode'],
    define: { 'process.env.LKT_BUNDLED': '"1"' },
  };
  const commands = new Set();
  const entries = [
    { in: 'src/gpu/worker-main.ts', out: 'gpu-worker' },
    // The command line: dist/cli.js parses the command and loads that command's own bundle (cli-<name>.js), so that
    // `--help` or `devices` never parses LangChain and the engine, which only `auto` needs.
    // Loaded with require(): Node's import() of a CommonJS file first scans the whole file for its exports (0.6 s for auto's).
    { in: 'src/cli.ts', out: 'cli', banner: '#!/usr/bin/env node', plugins: [commandBundles(commands)], supported: { 'dynamic-import': false } },
    // The VS Code extension: a small bundle for activation, the engine in its own bundle loaded on first use.
    { in: 'src/extension/extension.ts', out: 'extension' },
    { in: 'src/extension/session-runner.ts', out: 'engine-runtime' },
  ];
  for (const e of entries) {
    if (!existsSync(join(root, e.in))) continue;
    await esbuild.build({
      ...common,
      entryPoints: [join(root, e.in)],
      outfile: join(dist, `${e.out}.js`),
      banner: e.banner ? { js: e.banner } : undefined,
      plugins: e.plugins ?? [],
      supported: e.supported,
    });
  }
  for (const name of commands) {
    await esbuild.build({ ...common, entryPoints: [join(root, 'src', 'cli', `${name}.ts`)], outfile: join(dist, `cli-${name}.js`) });
  }
  // GPU tests and benchmarks: bundled so that the GPU machine needs only Node.
  for (const [dir, suffix, outDir] of [
    ['test/gpu', '.test.ts', 'gpu-tests'],
    ['bench', '.ts', 'bench'],
  ]) {
    const files = listEntries(dir, suffix);
    if (files.length === 0) continue;
    rmSync(join(dist, outDir), { recursive: true, force: true });
    await esbuild.build({ ...common, entryPoints: files, outdir: join(dist, outDir) });
  }
  // The webview code runs in a browser: minified bundles, svgcanvas patched for the panel's CSP.
  const browser = { bundle: true, platform: 'browser', target: 'chrome120', format: 'iife', minify: true, logLevel: 'warning', plugins: [svgcanvasCspPatch] };
  // The tuning panel (loaded on every panel open).
  await esbuild.build({ ...browser, sourcemap: 'linked', entryPoints: [join(root, 'webview', 'main.ts')], outfile: join(dist, 'webview.js') });
  // The HTML report's page script, inlined into every report (src/report/html.ts reads it from beside the bundles).
  await esbuild.build({ ...browser, legalComments: 'none', entryPoints: [join(root, 'webview', 'report', 'main.ts')], outfile: join(dist, 'report-page.js') });
  // Extension tests (they run inside the extension host) and the Playwright UI test (Node), for scripts/test-extension.mjs.
  const extensionTests = ['test/extension/suite.ts', 'test/extension/suite-reload.ts', 'test/extension/suite-restricted.ts', 'test/extension/suite-activation.ts', 'test/extension/test-backend.ts', 'test/e2e/ui.e2e.ts'].filter((f) => existsSync(join(root, f)));
  if (extensionTests.length > 0) {
    rmSync(join(dist, 'extension-tests'), { recursive: true, force: true });
    await esbuild.build({ ...common, external: ['vscode', 'playwright-core'], entryPoints: extensionTests.map((f) => ({ in: join(root, f), out: f.split('/').pop().replace(/\.ts$/, '') })), outdir: join(dist, 'extension-tests') });
  }
  copyRuntimeAssets();
  console.log('bundles: dist/');
}

/**
 * Makes every command module that src/cli/commands.ts loads with `import('./name')` a bundle of its own beside cli.js
 * (cli-name.js, required at run time) and collects the names: a new command needs no change here.
 */
function commandBundles(names) {
  const registry = join(root, 'src', 'cli', 'commands.ts');
  return {
    name: 'command-bundles',
    setup(build) {
      build.onResolve({ filter: /^\.\/[\w-]+$/ }, (args) => {
        if (args.importer !== registry || args.kind !== 'dynamic-import') return undefined;
        const name = args.path.slice(2);
        names.add(name);
        return { path: `./cli-${name}.js`, external: true };
      });
    },
  };
}

/** Files the bundles load at run time from beside themselves. */
function copyRuntimeAssets() {
  const assets = [
    ['node_modules/tree-sitter-cuda/tree-sitter-cuda.wasm', 'tree-sitter-cuda.wasm'],
    ['node_modules/web-tree-sitter/web-tree-sitter.wasm', 'web-tree-sitter.wasm'],
    // The panel's chart and highlighting rules, inlined into every HTML report (src/report/html.ts).
    ['media/chart-and-code.css', 'chart-and-code.css'],
  ];
  for (const [from, to] of assets) {
    const src = join(root, from);
    if (existsSync(src)) copyFileSync(src, join(dist, to));
  }
}

mkdirSync(dist, { recursive: true });
if (wantNative) buildNative();
if (wantJs) await buildJs();
