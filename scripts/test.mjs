#!/usr/bin/env node
// The whole test suite, as CI runs it: build everything, then
//   1. vitest (unit and integration tests, no GPU needed),
//   2. node --test over the bundled GPU tests (they skip cleanly where there is no driver),
//   3. the VS Code extension's tests in code-server + Chromium (scripts/test-extension.mjs).
// Prints one closing line "N passed, N failed, N skipped" and exits non-zero on any failure.
// vitest's own summary line is not the plain line CI reads, so the counts come from its JSON report.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const results = join(root, 'test-results');
mkdirSync(results, { recursive: true });
const totals = { passed: 0, failed: 0, skipped: 0 };
const problems = [];

function run(label, command, args, options = {}) {
  console.log(`\n== ${label}: ${command} ${args.join(' ')}`);
  const r = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });
  if (r.error) problems.push(`${label}: ${r.error.message}`);
  return r.status ?? 1;
}

if (!process.argv.includes('--no-build')) {
  const status = run('build', process.execPath, [join(root, 'scripts', 'build.mjs')]);
  if (status !== 0) {
    console.log('\nthe build failed: no test ran');
    console.log(`0 passed, 1 failed`);
    process.exit(1);
  }
}

// 1. vitest
const vitestJson = join(results, 'vitest.json');
const vitestStatus = run('vitest', process.execPath, [
  join(root, 'node_modules', 'vitest', 'vitest.mjs'),
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${vitestJson}`,
]);
if (existsSync(vitestJson)) {
  const report = JSON.parse(readFileSync(vitestJson, 'utf8'));
  totals.passed += report.numPassedTests;
  totals.failed += report.numFailedTests;
  totals.skipped += report.numPendingTests + report.numTodoTests;
  // A suite that fails to load counts no test but is a failure.
  const brokenSuites = report.testResults.filter((s) => s.status === 'failed' && s.assertionResults.length === 0);
  for (const s of brokenSuites) problems.push(`vitest: ${s.name} failed to load: ${s.message}`);
  totals.failed += brokenSuites.length;
} else {
  problems.push('vitest wrote no report');
}
if (vitestStatus !== 0 && totals.failed === 0) problems.push(`vitest exited with ${vitestStatus}`);

// 2. GPU tests (bundled by the build); without a GPU every one of them reports itself skipped.
const gpuDir = join(root, 'dist', 'gpu-tests');
const gpuFiles = existsSync(gpuDir) ? readdirSync(gpuDir).filter((f) => f.endsWith('.test.js')).map((f) => join(gpuDir, f)) : [];
if (gpuFiles.length > 0) {
  const tap = join(results, 'gpu-tests.tap');
  const status = run('gpu tests', process.execPath, [
    '--test',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tap}`,
    ...gpuFiles,
  ]);
  const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
  const count = (name) => Number(text.match(new RegExp(`^# ${name} (\\d+)$`, 'm'))?.[1] ?? 0);
  const skipped = count('skipped');
  totals.passed += count('pass');
  totals.failed += count('fail') + count('cancelled');
  totals.skipped += skipped;
  if (status !== 0 && count('fail') + count('cancelled') === 0) problems.push(`gpu tests exited with ${status}`);
}

// 3. The extension in a real VS Code (code-server), its extension tests and the UI test.
const extensionJson = join(results, 'extension-tests.json');
rmSync(extensionJson, { force: true });
const extensionStatus = run('extension tests', process.execPath, [join(root, 'scripts', 'test-extension.mjs'), '--no-build']);
if (existsSync(extensionJson)) {
  const report = JSON.parse(readFileSync(extensionJson, 'utf8'));
  totals.passed += report.passed;
  totals.failed += report.failed;
  totals.skipped += report.skipped;
} else {
  problems.push(`extension tests wrote no report (exit ${extensionStatus})`);
}

for (const p of problems) console.log(`problem: ${p}`);
const failed = totals.failed + problems.length;
console.log(`\n${totals.passed} passed, ${failed} failed, ${totals.skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
