/**
 * Keyboard and screen-reader support of the panel, kept apart from what it draws:
 * - the panel is redrawn whole on every batch of events, so the focused control is found again afterwards by where it
 *   sits (its id, or its path of tags from the nearest element with an id or a step), and focused again;
 * - the steps' collapsible headers (inside vscode-collapsible's shadow DOM) are announced as buttons that expand;
 * - the chart gets its data as tables for screen readers (webview/chart-data.ts).
 */
import { chartTables } from './chart-data';
import type { ChartData } from './chart-series';

/** Where the focused element was: a selector for an anchor, then child steps (tag name and index among same tags). */
export interface FocusMemo {
  anchor: string;
  path: [string, number][];
  /** The focus was on the collapsible header inside the element's shadow root. */
  inShadow: boolean;
}

function anchorSelector(el: Element): string | undefined {
  if (el.id) return `#${CSS.escape(el.id)}`;
  const step = el.getAttribute('data-step');
  return step === null ? undefined : `[data-step="${CSS.escape(step)}"]`;
}

export function captureFocus(root: HTMLElement): FocusMemo | undefined {
  // A panel without the keyboard focus keeps its last active element: focusing it again would take the focus from
  // wherever the user is (the editor), so nothing is remembered then.
  if (!document.hasFocus()) return undefined;
  const focused = document.activeElement;
  if (!focused || focused === document.body || !root.contains(focused)) return undefined;
  const path: [string, number][] = [];
  let el: Element = focused;
  let anchor = anchorSelector(el);
  while (!anchor && el.parentElement && el !== root) {
    const parent: Element = el.parentElement;
    const same = [...parent.children].filter((c) => c.tagName === el.tagName);
    path.unshift([el.tagName, same.indexOf(el)]);
    el = parent;
    anchor = anchorSelector(el);
  }
  return { anchor: anchor ?? '#app', path, inShadow: focused.shadowRoot?.activeElement != null };
}

/**
 * Focuses the element at the remembered place in the new DOM, if there is one, once the custom elements around it
 * have rendered (an element slotted into a collapsible that has not rendered yet cannot take the focus).
 */
export async function restoreFocus(root: HTMLElement, memo: FocusMemo | undefined): Promise<void> {
  if (!memo) return;
  let el: Element | null = memo.anchor === '#app' ? root : root.querySelector(memo.anchor);
  for (const [tag, index] of memo.path) el = el ? ([...el.children].filter((c) => c.tagName === tag)[index] ?? null) : null;
  // A drawn node (the graphs', the lineage tree's) is an SVG element that takes the focus like an HTML one.
  if (!(el instanceof HTMLElement || el instanceof SVGElement)) return;
  const rendering: Promise<unknown>[] = [];
  for (let up: Element | null = el; up && up !== root; up = up.parentElement) {
    if ('updateComplete' in up) rendering.push((up as Element & { updateComplete: Promise<unknown> }).updateComplete);
  }
  await Promise.all(rendering);
  const target: HTMLOrSVGElement | null | undefined = memo.inShadow ? el.shadowRoot?.querySelector<HTMLElement>('[tabindex="0"]') : el;
  target?.focus({ preventScroll: true });
}

interface Collapsible extends HTMLElement {
  open: boolean;
  heading: string;
  updateComplete: Promise<unknown>;
}

/** The collapsible's header is a div with tabindex: say what it is and whether it is open. */
export function exposeCollapsibles(root: HTMLElement): void {
  for (const el of root.querySelectorAll<Collapsible>('vscode-collapsible')) {
    const label = () => {
      const header = el.shadowRoot?.querySelector('.collapsible-header');
      if (!header) return;
      header.setAttribute('role', 'button');
      header.setAttribute('aria-expanded', String(el.open));
      header.setAttribute('aria-label', [el.getAttribute('heading'), el.getAttribute('description')].filter(Boolean).join(', '));
    };
    void el.updateComplete.then(label);
    el.addEventListener('vsc-collapsible-toggle', () => void el.updateComplete.then(label));
  }
}

/** The chart's data as tables, for screen readers only (the chart itself is drawn for the eye). */
export function chartDataElement(data: ChartData): HTMLElement | null {
  const tables = chartTables(data);
  if (tables.length === 0) return null;
  const holder = document.createElement('div');
  holder.className = 'visually-hidden';
  holder.id = 'chart-data';
  for (const t of tables) {
    const table = document.createElement('table');
    table.createCaption().textContent = t.caption;
    const head = table.createTHead().insertRow();
    for (const c of t.columns) {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = c;
      head.append(th);
    }
    const body = table.createTBody();
    for (const r of t.rows) {
      const row = body.insertRow();
      for (const cell of r) row.insertCell().textContent = cell;
    }
    holder.append(table);
  }
  return holder;
}
