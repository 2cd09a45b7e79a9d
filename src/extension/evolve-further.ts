/**
 * "Evolve further" on a finished evolutionary session: what to ask the user before it goes on. A session stops when a
 * budget is spent or its children are made; going on needs more of whatever stopped it, so each limit it has reached
 * is asked for anew, as a total (what was spent still counts). Pure (no vscode import): the extension asks the
 * questions in input boxes, the unit tests answer them.
 */
import type { EventOf } from '../engine/progress/events';
import type { SessionBudget } from '../engine/resources/model-calls';
import type { SessionSettings } from '../engine/session/session-settings';
import type { PopulationView } from '../engine/session/session-view';

/** One limit the session has reached, asked for anew. */
export interface FurtherQuestion {
  /** The input box's title and prompt. */
  title: string;
  prompt: string;
  /** Offered: twice the old limit. */
  value: string;
  /** Why the answer cannot be taken (undefined: it can). */
  validate(answer: string): string | undefined;
  /** The settings with the answer in place. */
  apply(settings: EvolveSettings, answer: string): EvolveSettings;
}

export type EvolveSettings = Pick<SessionSettings, 'budget' | 'strategy'>;

interface Limit {
  key: keyof SessionBudget | 'children';
  /** "model calls in all" */
  what: string;
  limit: number;
  spent: number;
  integer: boolean;
  /** A budget in the settings' unit from the answer's (minutes of wall time are stored as seconds). */
  scale: number;
}

function limitsReached(settings: EvolveSettings, population: PopulationView | undefined, stopped: EventOf<'population.stopped'> | undefined): Limit[] {
  const budget = settings.budget ?? {};
  const usage = stopped?.usage;
  const limits: Limit[] = [];
  const add = (key: Limit['key'], what: string, limit: number | undefined, spent: number, integer: boolean, scale = 1) => {
    if (limit !== undefined && spent >= limit) limits.push({ key, what, limit: limit / scale, spent: spent / scale, integer, scale });
  };
  if (usage && stopped) {
    add('modelCalls', 'model calls', budget.modelCalls, usage.calls, true);
    add('tokens', 'tokens (input and output)', budget.tokens, usage.inputTokens + usage.outputTokens, true);
    add('costUsd', 'USD', budget.costUsd, usage.costUsd ?? 0, false);
    add('wallTimeS', 'minutes of work', budget.wallTimeS, stopped.wallS, false, 60);
  }
  const children = population?.children.length ?? 0;
  const maxChildren = settings.strategy.kind === 'evolutionary' ? settings.strategy.maxChildren : undefined;
  // Without a limit of its own the children's limit is the strategy's default, which the stop message states.
  if (stopped?.reason.kind === 'children' || (maxChildren !== undefined && children >= maxChildren)) {
    limits.push({ key: 'children', what: 'children (rewrites asked of the model)', limit: maxChildren ?? children, spent: children, integer: true, scale: 1 });
  }
  return limits;
}

const shown = (n: number, integer: boolean) => (integer ? String(n) : String(Number(n.toPrecision(6))));

/** The questions to ask, in order: one per limit the session reached. Empty: it stopped for no limit it still has. */
export function evolveFurtherQuestions(settings: EvolveSettings, population: PopulationView | undefined): FurtherQuestion[] {
  return limitsReached(settings, population, population?.stopped).map((l) => ({
    title: `Evolve further: ${l.what} in all`,
    prompt: `The session stopped at ${shown(l.limit, l.integer)} ${l.what} (${shown(l.spent, l.integer)} spent). How many in all may it use now?`,
    value: shown(Math.max(2 * l.limit, l.spent + (l.integer ? 1 : 0)), l.integer),
    validate(answer) {
      const n = Number(answer.trim());
      if (answer.trim() === '' || !Number.isFinite(n) || (l.integer && !Number.isInteger(n))) return `Give ${l.integer ? 'a whole number' : 'a number'} of ${l.what}.`;
      if (n <= l.spent) return `Give more than the ${shown(l.spent, l.integer)} already spent: the session goes on until the new total is reached.`;
      return undefined;
    },
    apply(current, answer) {
      const n = Number(answer.trim());
      if (l.key === 'children') {
        if (current.strategy.kind !== 'evolutionary') throw new Error('internal: only an evolutionary session evolves further');
        return { ...current, strategy: { ...current.strategy, maxChildren: n } };
      }
      return { ...current, budget: { ...current.budget, [l.key]: n * l.scale } };
    },
  }));
}
