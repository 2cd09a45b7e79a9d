#!/usr/bin/env node
// TEST DOUBLE of NVIDIA's compute-sanitizer, for the sanitizer's tests in CI (no GPU, no compute-sanitizer). It takes the
// options sanitize.ts passes and runs the application as compute-sanitizer does (so the worker's --profile entry really
// launches, on the fake addon), then reports in compute-sanitizer's format the hazards that the launched kernel's source
// marks: a source line holding `fake-sanitizer: LABEL` is where LABEL happens, and each report of
// test/fixtures/compute-sanitizer/TOOL-*.txt whose {line:LABEL}s are all marked is printed for TOOL, naming the file
// and line as the compiler numbered them (after the source's `#line 1 "FILE"`), or neither where the kernel was built
// without -lineinfo, as the real tool does; `fake-sanitizer: LABEL when blocks < N` happens only in a launch of fewer
// than N blocks (a hazard that only a small problem has). The summary line counts what was printed.
// Like the real tool: `--version` says its version; --strip-paths (default yes) prints file names without their
// directories; without --check-exit-code no, an application that exits with an error is an error of its own.
// Env: FAKE_SANITIZER_SLEEP_MS=N hangs N ms first (FAKE_SANITIZER_SLEEP_TOOL=T: only as tool T); FAKE_SANITIZER_NO_TARGET=1 answers as a tool that could not
// instrument the application (it never runs it); FAKE_SANITIZER_IN_DIR=DIR names a file given without a directory under
// DIR, as a tool that adds the directory it ran in.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'compute-sanitizer');
const args = process.argv.slice(2);
const say = (line) => process.stdout.write(`========= ${line}\n`);

if (args[0] === '--version') {
  process.stdout.write('NVIDIA (R) Compute Sanitizer\nCopyright (c) 2020-2025 NVIDIA Corporation\nVersion 2025.3.1.0 (build 36390329) (public-release)\n');
  process.exit(0);
}
// Every option takes one value; the application starts at the first word that is no option.
const options = {};
let at = 0;
while (at < args.length && args[at].startsWith('--')) {
  options[args[at].slice(2)] = args[at + 1];
  at += 2;
}
const app = args.slice(at);
const tool = options.tool ?? 'memcheck';
const sleeps = process.env.FAKE_SANITIZER_SLEEP_MS && [undefined, tool].includes(process.env.FAKE_SANITIZER_SLEEP_TOOL);
if (sleeps) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(process.env.FAKE_SANITIZER_SLEEP_MS));
say('COMPUTE-SANITIZER');
if (process.env.FAKE_SANITIZER_NO_TARGET) {
  say('Error: Target application terminated before first instrumented API call');
  process.exit(1);
}
const run = spawnSync(app[0], app.slice(1), { stdio: 'inherit' });

const request = JSON.parse(readFileSync(app.find((a) => a.startsWith('--profile=')).slice('--profile='.length), 'utf8'));
const cubin = JSON.parse(readFileSync(request.cubinFile, 'utf8'));
const lineInfo = cubin.options.includes('-lineinfo');
const sourceLines = cubin.source.split('\n');
const blocks = request.grid[0] * request.grid[1] * request.grid[2];
const shown = (file) => (process.env.FAKE_SANITIZER_IN_DIR && !file.startsWith('/') ? `${process.env.FAKE_SANITIZER_IN_DIR}/${file}` : file);
/** Where each label is marked: the file of the `#line 1 "FILE"` above it and the line counted from there. */
const marks = new Map();
let file;
let lineOfDirective = 0;
sourceLines.forEach((text, index) => {
  const directive = /^#line 1 (".*")$/.exec(text);
  if (directive) [file, lineOfDirective] = [JSON.parse(directive[1]), index];
  const mark = /fake-sanitizer: ([\w-]+)(?: when blocks < (\d+))?/.exec(text);
  if (mark && file && !(mark[2] !== undefined && blocks >= Number(mark[2]))) marks.set(mark[1], { file: options['strip-paths'] === 'no' ? shown(file) : basename(file), line: index - lineOfDirective });
});

const printed = [];
for (const name of readdirSync(fixtures).filter((f) => f.startsWith(`${tool}-`)).sort()) {
  const template = readFileSync(join(fixtures, name), 'utf8');
  const labels = [...template.matchAll(/\{line:([\w-]+)\}/g)].map((m) => m[1]);
  if (!labels.every((l) => marks.has(l))) continue;
  const filled = template
    .replace(/ in \{file\}:\{line:([\w-]+)\}/g, (_, label) => (lineInfo ? ` in ${marks.get(label).file}:${marks.get(label).line}` : ''))
    .replaceAll('{function}', `${cubin.kernels[0]}(float *, const float *, int)`);
  process.stdout.write(filled);
  printed.push(...filled.split('\n'));
}
let errors = printed.filter((l) => /^========= \S/.test(l)).length;
if (run.status !== 0 && options['check-exit-code'] !== 'no') {
  say('Target application returned an error');
  errors++;
}
if (tool === 'racecheck') {
  const races = printed.filter((l) => /Race reported/.test(l));
  const warnings = races.filter((l) => /^========= Warning/.test(l)).length;
  say(`RACECHECK SUMMARY: ${races.length} hazard${races.length === 1 ? '' : 's'} displayed (${races.length - warnings} error${races.length - warnings === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'})`);
} else {
  say(`ERROR SUMMARY: ${errors} error${errors === 1 ? '' : 's'}`);
}
process.exit(errors > 0 && options['error-exitcode'] !== undefined ? Number(options['error-exitcode']) : (run.status ?? 1));
