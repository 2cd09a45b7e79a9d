// Where a process's time goes from its start: with LKT_PHASES_FILE=FILE in the environment, each phase that ends
// appends one JSON line to FILE, {"phase", "ms"} with ms since the process started (performance.now() counts from
// there). bench/cli-startup.ts reads them to break down a cold `tune`; without the variable nothing is written.
import { appendFileSync } from 'node:fs';

const phasesFile = process.env.LKT_PHASES_FILE;

/** Records that `phase` ended now (in LKT_PHASES_FILE, when set). */
export function markPhase(phase: string): void {
  if (phasesFile) appendFileSync(phasesFile, `${JSON.stringify({ phase, ms: Math.round(performance.now() * 10) / 10, pid: process.pid })}\n`);
}
