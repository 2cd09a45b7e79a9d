/**
 * What a session proposes for a document: the whole tuned file, carried onto the document as the user has it now.
 * Pure (no vscode import), so both are unit-tested.
 */
import { computeHunks, splitLines } from '../engine/candidate/diff';
import { convertEol, type Eol } from './proposal';

/**
 * The whole file with the tuned kernel in place of the original one. The engine hands back the whole file; a session
 * saved by an earlier version holds the kernel alone, which lacks what the file holds around it (includes, other
 * kernels, host code). Unless the final code already carries that code (but for what the final code changes there:
 * comments, which the model may rewrite above the kernel, the file's own `#define`s, which get the chosen values, and
 * the kernel's launches, rewritten for them), it replaces only the original kernel's definition
 * (`kernelStart`..`kernelEnd`, string offsets), so nothing around it is lost.
 */
export function spliceFinalCode(original: string, finalCode: string, kernelStart: number, kernelEnd: number): string {
  const before = original.slice(0, kernelStart);
  const after = original.slice(kernelEnd);
  const outside = [...before.split('\n'), ...after.split('\n')].map((l) => l.trim()).filter((l) => l !== '' && !/^(\/\/|\/\*|\*|#\s*define\s)/.test(l) && !l.includes('<<<'));
  if (outside.every((line) => finalCode.includes(line))) return finalCode;
  return `${before}${finalCode.replace(/\s+$/, '')}${after}`;
}

interface LineChange {
  /** Original lines [start, end) are replaced by `text`. */
  start: number;
  end: number;
  text: string;
}

function lineChanges(from: string, to: string): LineChange[] {
  return computeHunks(from, to).map((h) => ({ start: h.originalStart, end: h.originalStart + splitLines(h.originalText).length, text: h.proposedText }));
}

/**
 * Two changes of the same original lines cannot both be kept, nor two insertions at one place (their order is anyone's
 * guess); an insertion just before replaced lines goes above them.
 */
function collide(a: LineChange, b: LineChange): boolean {
  if (a.start < b.end && b.start < a.end) return true;
  return a.start === a.end && b.start === b.end && a.start === b.start;
}

/**
 * What to propose for a document now: the session changed `original` into `final`; the document holds `current`
 * (equal to `original` unless the user edited it meanwhile; any line endings, the proposal comes in the document's
 * `eol`). The user's edits are kept; a change of the session whose lines the user edited is left out and counted in
 * `conflicts`.
 */
export function proposalForDocument(original: string, final: string, current: string, eol: Eol): { proposed: string; conflicts: number } {
  const [from, to, now] = [original, final, current].map((t) => convertEol(t, eol)) as [string, string, string];
  if (now === from) return { proposed: to, conflicts: 0 };
  const user = lineChanges(from, now);
  const wanted = lineChanges(from, to);
  const kept = wanted.filter((w) => !user.some((u) => collide(w, u)));
  const lines = splitLines(from);
  let proposed = '';
  let next = 0;
  // Insertions before replacements at the same line, so an insertion never lands inside replaced lines.
  for (const c of [...user, ...kept].sort((a, b) => a.start - b.start || a.end - b.end)) {
    proposed += lines.slice(next, c.start).join('') + c.text;
    next = c.end;
  }
  return { proposed: proposed + lines.slice(next).join(''), conflicts: wanted.length - kept.length };
}
