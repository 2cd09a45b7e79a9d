// Keys of a spec that its schema does not know, in words: each with the known key it was most likely meant to be
// ("dtyp": did you mean "dtype"?), so that a typo is found at once instead of read as a missing field.
import { closest, distance } from 'fastest-levenshtein';

/** The known key a mistyped one was most likely meant to be: within two edits, or a third of its length. */
export function likelyMeant(key: string, known: readonly string[]): string | undefined {
  if (known.length === 0) return undefined;
  const candidate = closest(key, [...known]);
  return distance(key, candidate) <= Math.max(2, Math.floor(key.length / 3)) ? candidate : undefined;
}

/** `unknown key "dtyp": did you mean "dtype"?`; `context` (the keys there are) follows a key with no close match. */
export function unknownKeysMessage(keys: readonly string[], known: readonly string[], context?: string): string {
  return keys
    .map((key) => {
      const meant = likelyMeant(key, known);
      return `unknown key ${JSON.stringify(key)}${meant ? `: did you mean ${JSON.stringify(meant)}?` : context ? ` (${context})` : ''}`;
    })
    .join('; ');
}

/** The error map of a strict zod object: a key it does not know is named, with the known key it was likely meant to be. */
export const unknownKeysError =
  (known: readonly string[], context?: string) =>
  (issue: { code?: string; keys?: string[] }): string | undefined =>
    issue.code === 'unrecognized_keys' ? unknownKeysMessage(issue.keys!, known, context) : undefined;

/**
 * The issues less those about a required key that is missing because it was mistyped: "dtype: required" says nothing
 * that "unknown key "dtyp": did you mean "dtype"?" does not.
 */
export function withoutMistypedKeys<T extends { path: readonly PropertyKey[] }>(issues: readonly T[], input: unknown, known: readonly string[]): T[] {
  if (typeof input !== 'object' || input === null) return [...issues];
  const present = Object.keys(input);
  const mistyped = new Set(present.filter((k) => !known.includes(k)).map((k) => likelyMeant(k, known)).filter((k): k is string => k !== undefined && !present.includes(k)));
  return issues.filter((i) => !(i.path.length === 1 && mistyped.has(String(i.path[0]))));
}
