// How the CLI reports an error: the message the error was written to carry (our errors say what happened and what to
// do), its explanation when it has one, and never a stack trace unless asked for.

/** An error's message and, where it has one that the message lacks, its explanation (what to install, what to change). */
export function describeError(e: unknown): string {
  const err = e instanceof Error ? e : new Error(String(e));
  const explanation = (err as { explanation?: unknown }).explanation;
  return typeof explanation === 'string' && explanation && !err.message.includes(explanation) ? `${err.message}\n${explanation}` : err.message;
}

export function reportError(e: unknown, debug: boolean): number {
  let text = `error: ${describeError(e)}`;
  if (debug && e instanceof Error && e.stack) text += `\n\n${e.stack}`;
  process.stderr.write(`${text}\n`);
  return 1;
}
