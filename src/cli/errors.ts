// How the CLI reports an error: the message the error was written to carry (our errors say what happened and what to
// do), its explanation when it has one, and never a stack trace unless asked for.

export function reportError(e: unknown, debug: boolean): number {
  const err = e instanceof Error ? e : new Error(String(e));
  const explanation = (err as { explanation?: unknown }).explanation;
  let text = `error: ${err.message}`;
  if (typeof explanation === 'string' && explanation && !err.message.includes(explanation)) text += `\n${explanation}`;
  if (debug && err.stack) text += `\n\n${err.stack}`;
  process.stderr.write(`${text}\n`);
  return 1;
}
