/**
 * What a session spends on its model, and the limits it may spend: calls, tokens, money (from the user's prices per
 * million input and output tokens) and wall time. Every request of the session goes through one ModelCalls (llm-call.ts):
 * it waits for one of the `inFlight` slots (several requests at once where the provider allows), refuses to start when
 * a budget is spent (BudgetExhaustedError, never a silent stop), and counts the tokens the answer reports.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { z } from 'zod';

/** USD per million tokens, as providers list their prices. */
export const PricesSchema = z.object({
  inputPerMTok: z.number().nonnegative(),
  outputPerMTok: z.number().nonnegative(),
});
export type Prices = z.infer<typeof PricesSchema>;

/** Limits of a session; each is optional, and the first one reached stops it. */
export const SessionBudgetSchema = z.object({
  modelCalls: z.number().int().positive().optional(),
  /** Input and output tokens together. */
  tokens: z.number().int().positive().optional(),
  /** USD, from the prices (a cost budget needs them). */
  costUsd: z.number().positive().optional(),
  /** Seconds of the session's work, summed over its runs when it is resumed. */
  wallTimeS: z.number().positive().optional(),
});
export type SessionBudget = z.infer<typeof SessionBudgetSchema>;

export type BudgetName = 'model_calls' | 'tokens' | 'cost' | 'wall_time';

export interface ModelUsage {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** USD, when prices were given. */
  costUsd: number | null;
}

export const NO_USAGE: ModelUsage = { calls: 0, inputTokens: 0, outputTokens: 0, costUsd: null };

/** The cost of one answer's tokens, USD. */
export function costOf(inputTokens: number, outputTokens: number, prices: Prices): number {
  return (inputTokens * prices.inputPerMTok + outputTokens * prices.outputPerMTok) / 1e6;
}

const BUDGET_WORDS: Record<BudgetName, string> = { model_calls: 'model-call', tokens: 'token', cost: 'cost', wall_time: 'wall-time' };

/** "the model-call budget (24 calls) is spent: 24 calls made". */
export function describeBudget(name: BudgetName, budget: SessionBudget, usage: ModelUsage, wallS: number): string {
  const limit = { model_calls: `${budget.modelCalls} calls`, tokens: `${budget.tokens} tokens`, cost: `$${budget.costUsd}`, wall_time: `${budget.wallTimeS} s` }[name];
  const spent = {
    model_calls: `${usage.calls} calls made`,
    tokens: `${usage.inputTokens + usage.outputTokens} tokens used`,
    cost: `$${(usage.costUsd ?? 0).toFixed(4)} spent`,
    wall_time: `${Math.round(wallS)} s worked`,
  }[name];
  return `the ${BUDGET_WORDS[name]} budget (${limit}) is spent: ${spent}`;
}

/** The first budget that usage (with `reserved` more calls on their way) has reached, or null. */
export function spentBudget(budget: SessionBudget, usage: ModelUsage, wallS: number, reserved = 0): BudgetName | null {
  if (budget.modelCalls !== undefined && usage.calls + reserved >= budget.modelCalls) return 'model_calls';
  if (budget.tokens !== undefined && usage.inputTokens + usage.outputTokens >= budget.tokens) return 'tokens';
  if (budget.costUsd !== undefined && (usage.costUsd ?? 0) >= budget.costUsd) return 'cost';
  if (budget.wallTimeS !== undefined && wallS >= budget.wallTimeS) return 'wall_time';
  return null;
}

/** A budget refused a request to the model. Not the model's fault, and not retried. */
export class BudgetExhaustedError extends Error {
  override name = 'BudgetExhaustedError';
  constructor(
    message: string,
    readonly budget: BudgetName,
  ) {
    super(message);
  }
}

/** Checks a budget against the prices: a cost budget without prices could never be enforced. */
export function checkBudget(budget: SessionBudget, prices: Prices | undefined): SessionBudget {
  const parsed = SessionBudgetSchema.safeParse(budget);
  if (!parsed.success) throw new RangeError(`invalid budget: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  if (budget.costUsd !== undefined && prices === undefined) {
    throw new RangeError('a cost budget needs the model\'s prices per million input and output tokens');
  }
  return parsed.data;
}

export interface ModelCallsOptions {
  /** Requests to the model at once. Default 1. */
  inFlight?: number;
  budget?: SessionBudget;
  prices?: Prices;
  /** What the session spent before this run (a resumed session); wall time in seconds. */
  spent?: { usage: ModelUsage; wallS: number };
}

export class ModelCalls {
  readonly inFlight: number;
  readonly budget: SessionBudget;
  readonly prices: Prices | undefined;
  private current: ModelUsage;
  private wallBeforeS: number;
  private readonly startedAt = performance.now();
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly exemption = new AsyncLocalStorage<true>();

  constructor(options: ModelCallsOptions = {}) {
    const inFlight = options.inFlight ?? 1;
    if (!Number.isInteger(inFlight) || inFlight < 1) throw new RangeError(`model calls in flight must be an integer >= 1, got ${inFlight}`);
    this.inFlight = inFlight;
    this.prices = options.prices;
    this.budget = checkBudget(options.budget ?? {}, options.prices);
    this.current = { ...(options.spent?.usage ?? NO_USAGE), costUsd: options.spent?.usage.costUsd ?? (this.prices ? 0 : null) };
    this.wallBeforeS = options.spent?.wallS ?? 0;
  }

  get usage(): ModelUsage {
    return { ...this.current };
  }

  /** Seconds the session has worked, its earlier runs included. */
  get wallS(): number {
    return this.wallBeforeS + (performance.now() - this.startedAt) / 1000;
  }

  /** The budget spent now (with `reserved` calls on their way), or null. */
  spent(reserved = 0): BudgetName | null {
    return spentBudget(this.budget, this.current, this.wallS, reserved);
  }

  /** Carries what an earlier run of the session spent into this one, where this run knows less (a resumed session). */
  restore(spent: { usage: ModelUsage; wallS: number }): void {
    if (spent.usage.calls <= this.current.calls) return;
    this.current = { ...spent.usage, costUsd: spent.usage.costUsd ?? (this.prices ? 0 : null) };
    this.wallBeforeS = Math.max(this.wallBeforeS, spent.wallS);
  }

  /**
   * Runs `work` with its requests exempt from the budgets (still counted): work that was allowed to start finishes,
   * as a child of an evolutionary session that was decided before its budget ran out.
   */
  exempt<T>(work: () => Promise<T>): Promise<T> {
    return this.exemption.run(true, work);
  }

  /**
   * Runs one request in a slot: refused with BudgetExhaustedError when a budget is spent, counted as a call once it
   * starts. The request reports the tokens of each answer it gets through `count`, which returns that answer's cost
   * (USD, null without prices).
   */
  async run<T>(request: (count: (inputTokens: number, outputTokens: number) => number | null) => Promise<T>): Promise<T> {
    await this.slot();
    try {
      const spent = this.exemption.getStore() ? null : this.spent();
      if (spent) throw new BudgetExhaustedError(describeBudget(spent, this.budget, this.current, this.wallS), spent);
      this.current = { ...this.current, calls: this.current.calls + 1 };
      return await request((input, output) => {
        const costUsd = this.prices ? costOf(input, output, this.prices) : null;
        this.current = {
          calls: this.current.calls,
          inputTokens: this.current.inputTokens + input,
          outputTokens: this.current.outputTokens + output,
          costUsd: costUsd === null ? this.current.costUsd : (this.current.costUsd ?? 0) + costUsd,
        };
        return costUsd;
      });
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private slot(): Promise<void> {
    if (this.running < this.inFlight) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resume) =>
      this.waiting.push(() => {
        this.running++;
        resume();
      }),
    );
  }
}
