// Where a benchmark leaves its figures: $OUT/bench-<name>.json when OUT is set (the GPU machine sends $OUT back).
// Kept out of bench/ itself, whose every .ts file is bundled as a benchmark of its own.
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/** Writes `report` as $OUT/bench-`name`.json and returns the file's path; undefined (nothing written) without OUT. */
export function writeBenchJson(name: string, report: unknown): string | undefined {
  const outDir = process.env.OUT;
  if (!outDir) return undefined;
  mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `bench-${name}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
