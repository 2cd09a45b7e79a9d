// Restrictions: expressions over tunable parameter names that a configuration must satisfy, as in Kernel Tuner
// ("block_size_x*block_size_y<=1024"). Every name is checked against the tunable parameters before anything runs, so a
// typo (or an LLM's invented parameter) is a RestrictionCheckError that names it, never a silently empty search space.

import { compileExpression, ExpressionEvalError, ExpressionSyntaxError, truthy, unknownNameMessage, type CompiledExpression } from './expressions';
import type { Config } from '../types';

/** A restriction that cannot be used: a syntax error, an unknown name, or a value it cannot be evaluated on. */
export class RestrictionCheckError extends Error {
  override name = 'RestrictionCheckError';
  constructor(
    message: string,
    /** The restriction as written. */
    readonly restriction: string,
    /** Names it uses that are not tunable parameters. */
    readonly unknownNames: readonly string[],
    /** The tunable parameters it may use. */
    readonly knownNames: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface CompiledRestriction {
  source: string;
  /** The tunable parameters it reads. */
  names: string[];
  /** True when the configuration satisfies it. Division by zero counts as not satisfied (no sensible kernel divides by 0). */
  test(config: Config): boolean;
}

export type RestrictionPredicate = ((config: Config) => boolean) & {
  readonly restrictions: readonly CompiledRestriction[];
  /** The first restriction the configuration violates, or undefined when it satisfies all of them. */
  violated(config: Config): string | undefined;
};

/** Compiles one restriction, validating its names against the tunable parameters. */
export function compileRestriction(source: string, paramNames: readonly string[]): CompiledRestriction {
  if (typeof source !== 'string') {
    throw new RestrictionCheckError(`Expected a string restriction but received ${typeof source}: ${String(source)}`, String(source), [], paramNames);
  }
  let expr: CompiledExpression;
  try {
    expr = compileExpression(source, {
      knownNames: paramNames,
      unknownName: (name, known, src) => {
        const message = `restriction "${src}" uses '${name}', which is not a tunable parameter: ${unknownNameMessage(name, known, src)}`;
        return new RestrictionCheckError(message, src, [name], known);
      },
    });
  } catch (e) {
    if (e instanceof ExpressionSyntaxError) {
      throw new RestrictionCheckError(`restriction "${source}" is not a valid expression: ${e.message}`, source, [], paramNames, { cause: e });
    }
    throw e;
  }
  return {
    source,
    names: expr.names,
    test(config) {
      try {
        return truthy(expr.evaluate(config));
      } catch (e) {
        if (e instanceof ExpressionEvalError && e.code === 'division_by_zero') return false;
        if (e instanceof ExpressionEvalError) {
          throw new RestrictionCheckError(
            `restriction "${source}" cannot be evaluated for ${JSON.stringify(config)}: ${e.reason}`,
            source,
            [],
            paramNames,
            { cause: e },
          );
        }
        throw e;
      }
    },
  };
}

/** Compiles a list of restrictions into one predicate (all must hold). Only strings are accepted, as Kernel Tuner's string form. */
export function compileRestrictions(restrictions: readonly string[] | undefined, paramNames: readonly string[]): RestrictionPredicate {
  if (restrictions !== undefined && !Array.isArray(restrictions)) {
    throw new RestrictionCheckError(`Expected a list of restriction strings but received ${typeof restrictions}`, String(restrictions), [], paramNames);
  }
  const compiled = (restrictions ?? []).map((r) => compileRestriction(r, paramNames));
  const violated = (config: Config): string | undefined => compiled.find((r) => !r.test(config))?.source;
  return Object.assign((config: Config) => violated(config) === undefined, { restrictions: compiled, violated });
}
