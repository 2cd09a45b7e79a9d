/**
 * The model's calls as a compact table: what each was for, its tokens and, where the session knew the model's prices,
 * its cost; a last row with the total. The panel shows the session's calls and, in the lineage tree, a child's.
 */
import type { ReportModelCall } from '../src/report/model';
import { el } from './svg-dom';

const tokens = (n: number) => n.toLocaleString('en');
const usd = (n: number | undefined) => (n === undefined ? '' : `$${n.toFixed(4)}`);

/** `calls`: `llm.usage` events, or the HTML report's record of them. */
export function modelCallsTable(calls: readonly ReportModelCall[], caption: string): HTMLTableElement {
  const priced = calls.some((c) => c.costUsd !== undefined);
  const table = el('table', 'grid model-calls');
  table.createCaption().textContent = caption;
  const row = (cells: string[], cell: 'td' | 'th') => {
    const tr = el('tr');
    cells.forEach((text, i) => tr.append(el(cell, i === 0 ? undefined : 'num', text)));
    return tr;
  };
  const head = el('thead');
  head.append(row(['Call', 'Prompt tokens', 'Completion tokens', ...(priced ? ['Cost'] : [])], 'th'));
  const body = el('tbody');
  for (const c of calls) body.append(row([c.purpose, tokens(c.promptTokens), tokens(c.completionTokens), ...(priced ? [usd(c.costUsd)] : [])], 'td'));
  const sum = (of: (c: ReportModelCall) => number) => calls.reduce((n, c) => n + of(c), 0);
  const foot = el('tfoot');
  foot.append(row([`Total: ${calls.length} call(s)`, tokens(sum((c) => c.promptTokens)), tokens(sum((c) => c.completionTokens)), ...(priced ? [usd(sum((c) => c.costUsd ?? 0))] : [])], 'th'));
  table.append(head, body, foot);
  return table;
}
