/**
 * Finding the JSON in a model's answer, and saying precisely what is wrong with it.
 *
 * Models wrap JSON in ```json fences, put prose around it, or leave a trailing comma. We accept those (they are
 * unambiguous), and nothing looser: no single quotes, no comments, no guessing at truncated objects, because a
 * wrong guess would be silently wrong data while a clear error goes back to the model and gets fixed.
 */
import type { core } from 'zod';

export type JsonExtraction =
  | { ok: true; value: unknown }
  /** `detail` is meant for the model: which JSON was malformed and where, or that there was none. */
  | { ok: false; reason: 'no-json' | 'invalid-json'; detail: string };

const FENCE = /```[ \t]*([A-Za-z]*)[^\n]*\n([\s\S]*?)```/g;

export function extractJson(text: string): JsonExtraction {
  const trimmed = text.replace(/^\uFEFF/, '').trim();
  // The first parse error of something that looked like a JSON object is what the model most needs to hear.
  let firstFailure: string | undefined;
  const attempt = (candidate: string): JsonExtraction | undefined => {
    const parsed = parseLenient(candidate);
    if (parsed.ok) return parsed;
    if (candidate.startsWith('{')) firstFailure ??= parsed.detail;
    return undefined;
  };

  if (trimmed === '') return { ok: false, reason: 'no-json', detail: 'the answer is empty' };
  const whole = attempt(trimmed);
  if (whole) return whole;

  // Fenced blocks, the last first (an example may come before the answer); blocks tagged json before untagged ones.
  const fences = [...trimmed.matchAll(FENCE)].map((m) => ({ lang: (m[1] ?? '').toLowerCase(), body: m[2] ?? '' }));
  const ordered = [...fences.filter((f) => f.lang === 'json'), ...fences.filter((f) => f.lang === '')].reverse();
  for (const fence of ordered) {
    const found = attempt(fence.body.trim());
    if (found) return found;
  }

  // JSON inside prose: the longest top-level balanced {...} or [...] that parses.
  let best: { value: unknown; length: number } | undefined;
  for (const span of balancedSpans(trimmed)) {
    if (best && span.length <= best.length) continue;
    const found = attempt(span);
    if (found?.ok) best = { value: found.value, length: span.length };
  }
  if (best) return { ok: true, value: best.value };

  if (firstFailure !== undefined) {
    return { ok: false, reason: 'invalid-json', detail: `the JSON is malformed: ${firstFailure}` };
  }
  return { ok: false, reason: 'no-json', detail: 'the answer contains no JSON object' };
}

function parseLenient(candidate: string): { ok: true; value: unknown } | { ok: false; detail: string } {
  try {
    return { ok: true, value: JSON.parse(candidate) };
  } catch (error) {
    const repaired = removeTrailingCommas(candidate);
    if (repaired !== candidate) {
      try {
        return { ok: true, value: JSON.parse(repaired) };
      } catch {
        // Report the error of the text as the model wrote it.
      }
    }
    return { ok: false, detail: (error as Error).message };
  }
}

/** Drops commas directly before `}` or `]`, outside strings. */
function removeTrailingCommas(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      out += ch;
      if (ch === '\\') out += text[++i] ?? '';
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    if (ch === ',') {
      const next = text.slice(i + 1).match(/^\s*([}\]])/);
      if (next) continue;
    }
    out += ch;
  }
  return out;
}

/**
 * Every top-level balanced {...} or [...] in prose. Only top level: inside a truncated object an inner object would
 * parse, and answering with that fragment would hide that the JSON was cut off. Quotes count only inside brackets,
 * where they delimit JSON strings; in the prose around they are just quotes.
 */
function* balancedSpans(text: string): Generator<string> {
  const closers: string[] = [];
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (closers.length > 0 && ch === '"') inString = true;
    else if (ch === '{' || ch === '[') {
      if (closers.length === 0) start = i;
      closers.push(ch === '{' ? '}' : ']');
    } else if ((ch === '}' || ch === ']') && closers.length > 0) {
      if (closers.pop() !== ch) closers.length = 0;
      else if (closers.length === 0) yield text.slice(start, i + 1);
    }
  }
}

/** `steps[1].title` from ["steps", 1, "title"]. */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** One line per zod issue: "field `steps[1].title`: expected string, received number". */
export function formatZodIssues(issues: readonly core.$ZodIssue[]): string[] {
  return issues.map((issue) => {
    const message = issue.message.replace(/^Invalid input: /, '');
    return issue.path.length === 0 ? `the answer: ${message}` : `field \`${formatIssuePath(issue.path)}\`: ${message}`;
  });
}
