/** Highlighted code as DOM (text nodes and classed spans only), from webview/highlight.ts's tokens. */
import { highlightTokens } from './highlight';

/** One fragment per line, ready to append to a table cell or a `<pre>`. */
export function highlightLines(lines: readonly string[], doc: Document = document): DocumentFragment[] {
  return highlightTokens(lines).map((tokens) => {
    const fragment = doc.createDocumentFragment();
    for (const token of tokens) {
      if (token.classes.length === 0) fragment.append(token.text);
      else {
        const span = doc.createElement('span');
        span.className = token.classes.join(' ');
        span.textContent = token.text;
        fragment.append(span);
      }
    }
    return fragment;
  });
}

/** Replaces the content of `element` (a `<pre>` or `<code>`) with `code`, highlighted. */
export function highlightInto(element: HTMLElement, code: string): void {
  const fragments = highlightLines(code.split(/\r?\n/), element.ownerDocument);
  element.replaceChildren(...fragments.flatMap((fragment, i) => (i === 0 ? [fragment] : ['\n', fragment])));
}
