// "Evolve further" on a finished evolutionary session: the limits it reached are asked for anew, as totals larger than
// what was spent, and the answers go into the settings it goes on with.
import { describe, expect, it } from 'vitest';
import { makeEvent, type EventOf } from '../../src/engine/progress/events';
import type { PopulationView } from '../../src/engine/session/session-view';
import { evolveFurtherQuestions, type EvolveSettings } from '../../src/extension/evolve-further';

const stoppedBy = (reason: EventOf<'population.stopped'>['reason'], usage: Partial<EventOf<'population.stopped'>['usage']> = {}, wallS = 100) =>
  makeEvent({ type: 'population.stopped', reason, variants: 5, rejected: 1, usage: { calls: 24, inputTokens: 20_000, outputTokens: 4_000, costUsd: 0.12, ...usage }, wallS, gpuS: 60 }) as EventOf<'population.stopped'>;

const population = (stopped: EventOf<'population.stopped'>, children = 6): PopulationView => ({
  variants: [],
  retired: [],
  children: Array.from({ length: children }, (_, child) => ({ child, stepId: `c${child}`, operator: 'mutate' as const, parents: ['v0'] })),
  stopped,
});

const evolutionary = (budget: EvolveSettings['budget'], maxChildren?: number): EvolveSettings => ({ budget, strategy: { kind: 'evolutionary', seed: 0, window: 4, ...(maxChildren !== undefined && { maxChildren }) } });

describe('evolve further', () => {
  it('asks for the model-call budget that stopped the session, in all, more than was spent, and offers twice the old one', () => {
    const settings = evolutionary({ modelCalls: 24, tokens: 1_000_000 });
    const questions = evolveFurtherQuestions(settings, population(stoppedBy({ kind: 'budget', budget: 'model_calls', message: 'spent' })));
    expect(questions.map((q) => q.title)).toEqual(['Evolve further: model calls in all']);
    const [q] = questions;
    expect(q!.prompt).toBe('The session stopped at 24 model calls (24 spent). How many in all may it use now?');
    expect(q!.value).toBe('48');
    expect(q!.validate('24')).toBe('Give more than the 24 already spent: the session goes on until the new total is reached.');
    expect(q!.validate('30.5')).toBe('Give a whole number of model calls.');
    expect(q!.validate('')).toBe('Give a whole number of model calls.');
    expect(q!.validate('40')).toBeUndefined();
    expect(q!.apply(settings, '40')).toEqual(evolutionary({ modelCalls: 40, tokens: 1_000_000 }));
  });

  it('asks for every limit reached: a wall time in minutes (stored in seconds) and a cost in USD', () => {
    const settings = evolutionary({ wallTimeS: 600, costUsd: 0.1 });
    const questions = evolveFurtherQuestions(settings, population(stoppedBy({ kind: 'budget', budget: 'cost', message: 'spent' }, { costUsd: 0.12 }, 650)));
    expect(questions.map((q) => q.title)).toEqual(['Evolve further: USD in all', 'Evolve further: minutes of work in all']);
    const [cost, time] = questions;
    expect(cost!.validate('0.12')).toMatch(/^Give more than the 0.12 already spent/);
    expect(time!.prompt).toBe('The session stopped at 10 minutes of work (10.8333 spent). How many in all may it use now?');
    expect(time!.value).toBe('20');
    const answered = time!.apply(cost!.apply(settings, '0.5'), '30');
    expect(answered.budget).toEqual({ costUsd: 0.5, wallTimeS: 1800 });
  });

  it('asks for more children when they stopped it, with or without a limit of the session\'s own', () => {
    const made = evolveFurtherQuestions(evolutionary(undefined), population(stoppedBy({ kind: 'children', message: 'the 16 children asked for are made' }), 16));
    expect(made.map((q) => q.title)).toEqual(['Evolve further: children (rewrites asked of the model) in all']);
    expect(made[0]!.value).toBe('32');
    expect(made[0]!.validate('16')).toMatch(/^Give more than the 16 already spent/);
    expect(made[0]!.apply(evolutionary(undefined), '24').strategy).toEqual({ kind: 'evolutionary', seed: 0, window: 4, maxChildren: 24 });
    // A budget stopped it, and its own children's limit is reached too: both are asked.
    const both = evolveFurtherQuestions(evolutionary({ tokens: 20_000 }, 6), population(stoppedBy({ kind: 'budget', budget: 'tokens', message: 'spent' })));
    expect(both.map((q) => q.title)).toEqual(['Evolve further: tokens (input and output) in all', 'Evolve further: children (rewrites asked of the model) in all']);
  });
});
