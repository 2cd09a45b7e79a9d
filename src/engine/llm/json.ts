/**
 * Finding the JSON in a model's answer, and saying precisely what is wrong with it.
 *
 * Models wrap JSON in ```json fences, put prose or `<think>` blocks around it, leave a trailing comma or add comments.
 * We accept those (they are unambiguous), and nothing looser: no single quotes, no Python literals, no guessing at
 * truncated objects, because a wrong guess would be silently wrong data while a clear error goes back to the model and
 * gets fixed. Those errors say what the model did (single quotes, an answer cut off) rather than where a parser choked.
 */
import type { core } from 'zod';
import { answerOutsideThinking } from './thinking';

export type JsonExtraction =
  | { ok: true; value: unknown }
  /** `detail` is meant for the model: which JSON was malformed and where, or that there was none. */
  | { ok: false; reason: 'no-json' | 'invalid-json'; detail: string };

const FENCE = /```[ \t]*([A-Za-z]*)[^\n]*\n([\s\S]*?)```/g;

/** What an answer cut off at the output token limit is told (the code extraction says the same of code). */
export const CUT_OFF_ADVICE = 'the answer was cut off, probably at the output token limit: answer again, shorter';

export function extractJson(text: string): JsonExtraction {
  const visible = answerOutsideThinking(text.replace(/^\uFEFF/, ''));
  if (visible.cutOffWhileThinking) return { ok: false, reason: 'no-json', detail: `the answer ends inside its <think> block, before any JSON: ${CUT_OFF_ADVICE} (think more briefly)` };
  const trimmed = visible.text.trim();
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
  const { spans, unclosed } = topLevelSpans(trimmed);
  let best: { value: unknown; length: number } | undefined;
  for (const span of spans) {
    if (best && span.length <= best.length) continue;
    const found = attempt(span);
    if (found?.ok) best = { value: found.value, length: span.length };
  }
  if (best) return { ok: true, value: best.value };

  if (unclosed) return { ok: false, reason: 'invalid-json', detail: `the JSON ends before its closing bracket: ${CUT_OFF_ADVICE}` };
  if (firstFailure !== undefined) {
    return { ok: false, reason: 'invalid-json', detail: `the JSON is malformed: ${firstFailure}` };
  }
  return { ok: false, reason: 'no-json', detail: 'the answer contains no JSON object' };
}

function parseLenient(candidate: string): { ok: true; value: unknown } | { ok: false; detail: string } {
  try {
    return { ok: true, value: JSON.parse(candidate) };
  } catch (error) {
    const relaxed = withoutCommentsAndTrailingCommas(candidate);
    if (relaxed !== candidate) {
      try {
        return { ok: true, value: JSON.parse(relaxed) };
      } catch {
        // Report the error of the text as the model wrote it.
      }
    }
    return { ok: false, detail: misspellingOf(relaxed) ?? (error as Error).message };
  }
}

/**
 * Calls `visit` for every character outside JSON strings, with its index; returns the text with the characters
 * `visit` dropped (it returns the number of characters to drop from there, 0 for none).
 */
function outsideStrings(text: string, visit: (i: number) => number): string {
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
    const drop = visit(i);
    if (drop > 0) {
      i += drop - 1;
      continue;
    }
    if (ch === '"') inString = true;
    out += ch;
  }
  return out;
}

/** Drops line and block comments, and commas directly before `}` or `]`, outside strings. */
function withoutCommentsAndTrailingCommas(text: string): string {
  const uncommented = outsideStrings(text, (i) => {
    if (text.startsWith('//', i)) {
      const end = text.indexOf('\n', i);
      return (end === -1 ? text.length : end) - i;
    }
    if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      return end === -1 ? 0 : end + 2 - i;
    }
    return 0;
  });
  return outsideStrings(uncommented, (i) => (uncommented[i] === ',' && /^\s*[}\]]/.test(uncommented.slice(i + 1)) ? 1 : 0));
}

/** What a model wrote that JSON spells otherwise (Python's quotes and literals), in words; undefined when nothing. */
function misspellingOf(text: string): string | undefined {
  // The text with the contents of its JSON strings blanked: what is left is the JSON's own syntax.
  const syntax = text.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const literal = /\b(True|False|None)\b/.exec(syntax)?.[1];
  const problems = [
    ...(syntax.includes("'") ? ['names and strings take double quotes in JSON ("name"), not single quotes'] : []),
    ...(literal ? [`JSON spells true, false and null in lower case (${literal} is Python's)`] : []),
  ];
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/**
 * Every top-level balanced {...} or [...] in prose, and whether the text ends inside an object it opened (cut off).
 * Only top level: inside a truncated object an inner object would parse, and answering with that fragment would hide
 * that the JSON was cut off. Quotes count only inside brackets, where they delimit JSON strings; in the prose around
 * they are just quotes.
 */
function topLevelSpans(text: string): { spans: string[]; unclosed: boolean } {
  const spans: string[] = [];
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
      else if (closers.length === 0) spans.push(text.slice(start, i + 1));
    }
  }
  return { spans, unclosed: closers.length > 0 && text[start] === '{' };
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
