/**
 * What to tell the user when the checks before a session fail: every failed check in one message (the LLM and the GPU
 * are checked side by side, and a user missing both should learn it at once), with the buttons that fix them. Pure.
 */
import type { EngineFailure } from './engine-api';

export type PreflightAction = 'Open settings' | 'Set API key' | 'Show log' | 'GPU setup';

export interface PreflightReport {
  message: string;
  /** Buttons, most useful first. */
  actions: PreflightAction[];
  /** The settings "Open settings" goes to (the model's: no setting brings a missing driver or toolkit). */
  settings: string;
}

/** "GPU setup": what the GPU and the toolkit need, and the check of them (the Getting Started walkthrough's step). */
const ACTIONS: Record<EngineFailure['kind'], PreflightAction[]> = {
  'gpu-unavailable': ['GPU setup', 'Show log'],
  'llm-unreachable': ['Open settings', 'Show log'],
  'llm-auth': ['Set API key', 'Open settings'],
  'llm-model-missing': ['Open settings'],
  'llm-config': ['Open settings'],
  other: ['Show log'],
};

function title(failure: EngineFailure): string {
  if (failure.kind === 'gpu-unavailable') return 'No usable GPU';
  return failure.kind.startsWith('llm') ? 'The LLM cannot be used' : 'Cannot start tuning';
}

/**
 * A message as a notification shows it, which renders no markdown: a code span of the engine's message (a command
 * written for a terminal, `ollama serve`) becomes a command in quotes.
 */
function plain(message: string): string {
  return message.replace(/([:?])\s*`([^`]+)`/g, (_, mark: string, command: string) => `${mark} ${mark === '?' ? 'Run' : 'run'} "${command}"`).replace(/`([^`]+)`/g, '"$1"');
}

/** One message for the failed checks (at least one), in the order given. */
export function describeFailures(failures: readonly EngineFailure[], section: string): PreflightReport {
  const text = (f: EngineFailure) => `${title(f)}: ${plain(f.message).replace(/\.?\s*$/, '')}.`;
  const message = failures.length === 1 ? text(failures[0]!) : `${failures.length} problems. ${failures.map((f, i) => `(${i + 1}) ${text(f)}`).join(' ')}`;
  const actions = [...new Set(failures.flatMap((f) => ACTIONS[f.kind]))];
  return { message, actions, settings: `${section}.llm` };
}
