// Strategy options under Kernel Tuner's names (strategy_options: max_fevals, time_limit, x0, popsize, neighbor, T, ...),
// from a spec's `strategyOptions:` or the command line's `--strategy-option KEY=VALUE`. Each strategy declares its
// options as a zod shape with Kernel Tuner's defaults; an unknown name is an error that names the strategy's options
// (and the one it was likely meant to be), as Kernel Tuner's common.get_options refuses unknown names.
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { unknownKeysMessage } from '../spec/unknown-keys';

export class StrategyOptionError extends RangeError {
  override name = 'StrategyOptionError';
}

const paramValue = z.union([z.number(), z.string(), z.boolean()]);

/** The budget every strategy accepts as an option, as Kernel Tuner's strategies do (time_limit in seconds). */
export const budgetOptions = {
  /** At most this many distinct configurations are evaluated. */
  max_fevals: z.number().int().positive().optional(),
  /** No evaluation starts after this many seconds (in a replay: seconds of recorded time). */
  time_limit: z.number().positive().optional(),
};

/** Kernel Tuner's x0: the configuration to start from (its values in parameter order), instead of a random one. */
export const startOption = {
  x0: z.array(paramValue).min(1).optional(),
};

/** The options of a strategy that starts from one configuration: the budget and x0. */
export const commonOptions = { ...budgetOptions, ...startOption };

export type OptionShape = z.ZodRawShape;
export type ParsedOptions<S extends OptionShape> = z.infer<z.ZodObject<S>>;

/** The option values every parsed set has (the ones the search context reads). */
export interface CommonOptionValues {
  max_fevals?: number | undefined;
  time_limit?: number | undefined;
  x0?: (number | string | boolean)[] | undefined;
}

/**
 * Validates a strategy's options against its shape and fills in the defaults. Unknown names and wrong values are a
 * StrategyOptionError that names the strategy, the option and what it accepts.
 */
export function parseStrategyOptions<S extends OptionShape>(strategy: string, shape: S, raw: unknown = {}): ParsedOptions<S> {
  const known = Object.keys(shape);
  const accepted = `${strategy} takes ${known.join(', ') || 'no options'}`;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new StrategyOptionError(`Expected the options of ${strategy} as a map of names to values but received ${JSON.stringify(raw)}`);
  }
  const unknown = Object.keys(raw).filter((k) => !known.includes(k));
  if (unknown.length > 0) throw new StrategyOptionError(`${unknownKeysMessage(unknown, known).replace(/unknown key/g, `unknown option of ${strategy}`)} (${accepted})`);
  const parsed = z.object(shape).safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `option ${i.path.join('.')} of ${strategy}: ${i.message}`);
    throw new StrategyOptionError(lines.join('; '));
  }
  return parsed.data;
}

/**
 * One `--strategy-option KEY=VALUE`: the value read as YAML's flow scalars and lists read it (numbers, true/false,
 * [1, 2], strings), Python's True/False/None as Kernel Tuner users write them.
 */
export function parseStrategyOptionFlag(text: string): [string, unknown] {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(text);
  if (!m) throw new StrategyOptionError(`--strategy-option expects KEY=VALUE (e.g. max_fevals=200, neighbor=adjacent, x0=[32,4]) but received '${text}'`);
  const source = m[2]!.trim();
  const python: Record<string, unknown> = { True: true, False: false, None: null };
  if (source in python) return [m[1]!, python[source]];
  let value: unknown;
  try {
    value = parseYaml(source.replace(/\b(True|False)\b/g, (w) => w.toLowerCase()));
  } catch {
    value = source;
  }
  return [m[1]!, value ?? (source === '' ? '' : null)];
}

/** The options of several `--strategy-option` flags as one map; a name given twice is an error. */
export function strategyOptionsFromFlags(flags: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const flag of flags) {
    const [key, value] = parseStrategyOptionFlag(flag);
    if (key in out) throw new StrategyOptionError(`--strategy-option ${key} is given twice`);
    out[key] = value;
  }
  return out;
}
