/** Highlighted code as DOM (text nodes and classed spans only), from webview/highlight.ts's tokens. */
import type { DiffHunk, DiffLine } from './diff-rows';
import { highlightTokens } from './highlight';

/** One fragment per line, ready to append to a table cell or a `<pre>`. */
export function highlightLines(lines: readonly string[]): DocumentFragment[] {
  return highlightTokens(lines).map((tokens) => {
    const fragment = document.createDocumentFragment();
    for (const token of tokens) {
      if (token.classes.length === 0) fragment.append(token.text);
      else {
        const span = document.createElement('span');
        span.className = token.classes.join(' ');
        span.textContent = token.text;
        fragment.append(span);
      }
    }
    return fragment;
  });
}

/**
 * The lines of a diff hunk highlighted side by side: the old and the new version each as a text of its own, so that
 * block comments carry within each version. A context line has a fragment on both sides.
 */
export function highlightHunk(hunk: DiffHunk): { old: Map<DiffLine, DocumentFragment>; new: Map<DiffLine, DocumentFragment> } {
  const side = (lines: DiffLine[]) => {
    const fragments = highlightLines(lines.map((l) => l.text));
    return new Map(lines.map((line, i) => [line, fragments[i]!]));
  };
  return { old: side(hunk.lines.filter((l) => l.kind !== 'add')), new: side(hunk.lines.filter((l) => l.kind !== 'del')) };
}
