/**
 * The model's calls as a compact table: what each was for, its tokens and, where the session knew the model's prices,
 * its cost; a last row with the total. The panel shows the session's calls and, in the lineage tree, a child's.
 */
import type { EventOf } from '../src/engine/progress/events';
import { usageOf } from '../src/engine/session/session-view';
import { el } from './svg-dom';

const tokens = (n: number) => n.toLocaleString('en');
const usd = (n: number | null | undefined) => (n === null || n === undefined ? '' : `$${n.toFixed(4)}`);

export function modelCallsTable(calls: readonly EventOf<'llm.usage'>[], caption: string): HTMLTableElement {
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
  const total = usageOf(calls);
  const foot = el('tfoot');
  foot.append(row([`Total: ${total.calls} call(s)`, tokens(total.promptTokens), tokens(total.completionTokens), ...(priced ? [usd(total.costUsd)] : [])], 'th'));
  table.append(head, body, foot);
  return table;
}
