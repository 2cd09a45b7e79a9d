// The line diff behind inline proposals (src/engine/candidate/diff.ts, jsdiff with the one-side-only lines set aside)
// against jsdiff's diffLines on its own, on three 5 000-line pairs. No GPU.
//   node dist/bench/diff.js
import { diffLines } from 'diff';
import { computeHunks } from '../src/engine/candidate/diff';
import { rng } from '../test/support/seeded';

const r = rng(5);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const file = Array.from({ length: 5000 }, (_, i) => `    value_${i} = compute(${i % 97}, ${Math.floor(r() * 1e6)});`);
const vocab = ['{', '}', '', '  __syncthreads();', '  sum += a[i];', '  i += stride;', '  if (i < n) {', '  }'];
const few = Array.from({ length: 5000 }, () => pick(vocab));
const text = (lines: string[]) => `${lines.join('\n')}\n`;
const cases: [string, string, string][] = [
  ['scattered edits', text(file), text(file.flatMap((l, i) => (i % 50 === 7 ? [`${l} // tuned`] : i % 211 === 3 ? [] : i % 173 === 11 ? [l, '    __syncthreads();'] : [l])))],
  ['eight distinct lines, heavy edits', text(few), text(few.flatMap((l) => (r() < 0.15 ? [] : r() < 0.15 ? [pick(vocab), l] : r() < 0.1 ? [pick(vocab)] : [l])))],
  ['unrelated files', text(file), text(file.map((l) => `${l} /* other */`))],
];

function ms(fn: () => unknown): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

console.log(`${'5 000-line pair'.padEnd(34)} ${'computeHunks'.padStart(11)} ${'diffLines alone'.padStart(15)}`);
for (const [name, a, b] of cases) {
  computeHunks(a, b); // warm-up (JIT)
  console.log(`${name.padEnd(34)} ${ms(() => computeHunks(a, b)).toFixed(1).padStart(8)} ms ${ms(() => diffLines(a, b)).toFixed(1).padStart(12)} ms`);
}
