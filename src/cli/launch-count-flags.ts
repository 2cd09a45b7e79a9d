// The flags of the number of timed launches, shared by `tune` and `auto`: --iterations fixes it; --min-iterations,
// --max-iterations and --precision make it adapt (launch-count.ts). A flag's text that is no number is checked, and
// reported, as it was written.
import { launchCountProblems, type LaunchCountField, type LaunchCountSettings } from '../tuner/run/launch-count';

export const LAUNCH_COUNT_FLAGS: Record<LaunchCountField, string> = { iterations: 'iterations', minIterations: 'min-iterations', maxIterations: 'max-iterations', precision: 'precision' };

/** parseArgs' options of the four flags. */
export const LAUNCH_COUNT_OPTIONS = Object.fromEntries(Object.values(LAUNCH_COUNT_FLAGS).map((flag) => [flag, { type: 'string' as const }])) as Record<string, { type: 'string' }>;

export const LAUNCH_COUNT_HELP = `  --iterations N           a fixed number of timed launches per configuration (Kernel Tuner's iterations); without
                           it the number adapts to the kernel, between these two, with this precision:
  --min-iterations N       at least N timed launches (default 7, at least 6)
  --max-iterations N       at most N timed launches (default 32)
  --precision P            stop once the 95 % interval of the median lies within ±P of it (default 0.01: ±1 %;
                           0.001 to 0.1)
`;

/**
 * The settings the flags give over `base` (what the spec says; a flag of the other kind replaces it), or undefined when
 * none is given; `problems` name each flag (or the spec's setting) that is wrong.
 */
export function launchCountFromFlags(values: Record<string, unknown>, base: LaunchCountSettings = {}): { settings: LaunchCountSettings; problems: string[] } | undefined {
  const fields = Object.keys(LAUNCH_COUNT_FLAGS) as LaunchCountField[];
  const given = fields.filter((field) => typeof values[LAUNCH_COUNT_FLAGS[field]] === 'string');
  if (given.length === 0) return undefined;
  const fromFlags = Object.fromEntries(given.map((field) => [field, numberOrText(values[LAUNCH_COUNT_FLAGS[field]] as string)]));
  const settings = given.includes('iterations') ? fromFlags : { minIterations: base.minIterations, maxIterations: base.maxIterations, precision: base.precision, ...fromFlags };
  const name = (field: LaunchCountField) => (given.includes(field) ? `--${LAUNCH_COUNT_FLAGS[field]}` : `${field} (the spec's)`);
  const problems = launchCountProblems(settings).map((p) => `${name(p.field)} ${p.message}`);
  return { settings: Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined)) as LaunchCountSettings, problems };
}

function numberOrText(text: string): number | string {
  const n = Number(text);
  return text.trim() !== '' && Number.isFinite(n) ? n : text;
}
