/**
 * What to tell the user when the checks before a session fail: every failed check in one message (the LLM and the GPU
 * are checked side by side, and a user missing both should learn it at once), with the buttons that fix them. Pure.
 */
import type { EngineFailure } from './engine-api';

export type PreflightAction = 'Open settings' | 'Set API key' | 'Show log';

export interface PreflightReport {
  message: string;
  /** Buttons, most useful first. */
  actions: PreflightAction[];
  /** The settings "Open settings" goes to. */
  settings: string;
}

const ACTIONS: Record<EngineFailure['kind'], PreflightAction[]> = {
  'gpu-unavailable': ['Show log', 'Open settings'],
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
  const llm = failures.some((f) => f.kind.startsWith('llm'));
  const gpu = failures.some((f) => f.kind === 'gpu-unavailable');
  const settings = llm && gpu ? section : gpu ? `${section}.device` : `${section}.llm`;
  return { message, actions, settings };
}
