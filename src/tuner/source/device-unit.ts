/**
 * The part of a file the LLM reads and rewrites: a kernel and the device code it uses (the device functions, types,
 * constants and macros it reaches, with the file's #includes and the conditionals and namespaces around them), not the
 * host program. The model's answer is spliced back declaration by declaration, so host code, other kernels, comments
 * and includes stay byte for byte as they were, and a diff of the file shows only what the model changed.
 *
 * Device code the kernel uses from the user's own headers is shown beside the unit, read-only: the tuner changes the
 * file the user is tuning, never a header other files share.
 */
import * as path from 'node:path';
import { findLocalHeader } from './local-headers';
import { isHostOnly, outlineSource, type SourceOutline, type TopLevelItem } from './translation-unit';

export interface DeviceUnit {
  /** What the model reads: the unit as source text. */
  text: string;
  /** The file's items in the unit, in file order. */
  items: TopLevelItem[];
  /** Device code the kernel uses from local headers: read-only context, per header. */
  headerContext: { file: string; text: string; items: TopLevelItem[] }[];
}

export interface DeviceUnitOptions {
  /** The file's absolute path, for its quoted #includes. */
  filePath?: string;
  includePaths?: readonly string[];
  /** Reads a header; default none (no header context). */
  readFile?: (absolutePath: string) => string | undefined;
}

/** The answer cannot be spliced into the file: it changes what is not the model's to change. */
export class SpliceError extends Error {
  override readonly name = 'SpliceError';
}

const DECLARING_KINDS = new Set(['function', 'type', 'variable', 'define']);

/** Items that declare each name (host-only code never belongs to a device unit). */
function declarationsByName(items: readonly TopLevelItem[]): Map<string, TopLevelItem[]> {
  const byName = new Map<string, TopLevelItem[]>();
  for (const item of items) {
    if (!DECLARING_KINDS.has(item.kind) || isHostOnly(item)) continue;
    for (const name of item.names) byName.set(name, [...(byName.get(name) ?? []), item]);
  }
  return byName;
}

/**
 * What `roots` reach through the names they use, among `items` (operators, which code uses without naming them, come
 * with the types they take). Names nothing here declares are returned as `missing`.
 */
function closure(roots: readonly TopLevelItem[], items: readonly TopLevelItem[]): { reached: Set<TopLevelItem>; missing: Set<string> } {
  const byName = declarationsByName(items);
  const operators = items.filter((i) => i.kind === 'function' && !isHostOnly(i) && i.names.some((n) => n.startsWith('operator')));
  const reached = new Set<TopLevelItem>();
  const missing = new Set<string>();
  const seenNames = new Set<string>();
  const queue = [...roots];
  while (queue.length > 0) {
    const item = queue.pop()!;
    if (reached.has(item)) continue;
    reached.add(item);
    for (const name of item.uses) {
      if (seenNames.has(name)) continue;
      seenNames.add(name);
      const found = byName.get(name);
      if (found) queue.push(...found);
      else missing.add(name);
    }
    for (const op of operators) if (!reached.has(op) && [...op.uses].some((n) => item.names.includes(n))) queue.push(op);
  }
  return { reached, missing };
}

/** The items as text, with the frames around them (conditionals, namespaces), in file order, gaps closed up. */
function render(outline: SourceOutline, items: Iterable<TopLevelItem>): string {
  const pieces: { start: number; end: number }[] = [];
  const frames = new Set<number>();
  for (const item of items) {
    pieces.push({ start: item.commentStart, end: item.end });
    for (const f of item.frames) frames.add(f);
  }
  for (const f of frames) pieces.push(...outline.frames[f]!.pieces);
  pieces.sort((a, b) => a.start - b.start);
  let out = '';
  let last = -1;
  for (const piece of pieces) {
    if (piece.end <= last) continue;
    const start = Math.max(piece.start, last);
    if (last >= 0) {
      const gap = outline.code.slice(last, start);
      out += /^\s*$/.test(gap) ? gap : out.endsWith('\n') ? '\n' : '\n\n';
    }
    out += outline.code.slice(start, piece.end);
    last = piece.end;
  }
  return `${out.replace(/\s+$/, '')}\n`;
}

/** The device unit of kernel `kernelName` in `code` (see the module comment). */
export async function deviceUnitOf(code: string, kernelName: string, options: DeviceUnitOptions = {}): Promise<DeviceUnit> {
  const outline = await outlineSource(code);
  const kernels = outline.items.filter((i) => i.kind === 'function' && i.space === 'kernel' && i.names.includes(kernelName));
  if (kernels.length === 0) throw new Error(`no __global__ function named '${kernelName}' in the file`);
  const { reached, missing } = closure(kernels, outline.items);
  const includes = outline.items.filter((i) => i.kind === 'include');
  const items = [...new Set([...includes, ...reached])].sort((a, b) => a.start - b.start);
  return { text: render(outline, items), items, headerContext: await headerContext(outline, missing, options) };
}

/** Device code the unit uses that lives in the user's headers (followed through their own includes). */
async function headerContext(outline: SourceOutline, wanted: Set<string>, options: DeviceUnitOptions): Promise<DeviceUnit['headerContext']> {
  if (!options.readFile || wanted.size === 0) return [];
  const out: DeviceUnit['headerContext'] = [];
  const seen = new Set<string>();
  const visit = async (from: SourceOutline, dir: string | undefined) => {
    for (const inc of from.items.filter((i) => i.kind === 'include' && i.include)) {
      const file = findLocalHeader(inc.include!, dir, options.includePaths ?? []);
      if (!file || seen.has(file)) continue;
      seen.add(file);
      const text = options.readFile!(file);
      if (text === undefined) continue;
      const header = await outlineSource(text);
      const byName = declarationsByName(header.items);
      const roots = [...wanted].flatMap((n) => byName.get(n) ?? []);
      if (roots.length > 0) {
        const { reached } = closure(roots, header.items);
        for (const item of reached) for (const n of item.names) wanted.delete(n);
        const items = [...reached].sort((a, b) => a.start - b.start);
        out.push({ file, text: render(header, items), items });
      }
      await visit(header, path.dirname(file));
    }
  };
  await visit(outline, options.filePath ? path.dirname(options.filePath) : undefined);
  return out;
}

/** How an item is recognised in an answer: what it is, in which namespace, and its name. */
function keyOf(item: TopLevelItem): string | undefined {
  if (item.kind === 'include') return item.include ? `include ${item.include.spelling}` : undefined;
  if (item.kind === 'directive' || item.kind === 'unknown' || item.names.length === 0) return undefined;
  const what = item.kind === 'function' ? (item.isDefinition ? 'function' : 'declaration') : item.kind;
  return `${what} ${[...item.namespace, item.names[0]].join('::')}`;
}

/** Items by key, each key's items in source order (overloads and #if alternatives share a key). */
function byKey(items: readonly TopLevelItem[]): Map<string, TopLevelItem[]> {
  const map = new Map<string, TopLevelItem[]>();
  for (const item of items) {
    const key = keyOf(item);
    if (key !== undefined) map.set(key, [...(map.get(key) ?? []), item]);
  }
  return map;
}

const textOf = (code: string, item: TopLevelItem) => code.slice(item.commentStart, item.end);
const same = (a: string, b: string) => a.replace(/\s+/g, ' ').trim() === b.replace(/\s+/g, ' ').trim();

/**
 * The file with the model's rewrite of its device unit spliced in: each declaration of the answer replaces the one it
 * rewrites (same kind, namespace and name, in order), a new one goes next to its neighbour in the answer, and one the
 * answer leaves out stays as it was. Host-only code in the answer (a `main()` showing how to call the kernel) is left
 * out: the file's host code is the user's, not the model's to write. Throws SpliceError when the answer changes device
 * code outside the unit (another kernel) or a header's code.
 */
export async function spliceDeviceUnit(code: string, unit: DeviceUnit, answer: string): Promise<string> {
  const answerOutline = await outlineSource(answer);
  const fileOutline = await outlineSource(code);
  const unitByKey = byKey(unit.items);
  const fileByKey = byKey(fileOutline.items);
  const headerByKey = new Map(unit.headerContext.flatMap((h) => h.items.map((i) => [keyOf(i), { item: i, header: h }] as const)));
  const used = new Map<string, number>();
  const edits: { start: number; end: number; text: string }[] = [];
  const pending: TopLevelItem[] = [];
  let lastMatchedEnd: number | undefined;

  const insertPending = (at: number, before: boolean) => {
    if (pending.length === 0) return;
    const text = pending.map((i) => textOf(answer, i)).join('\n\n');
    edits.push({ start: at, end: at, text: before ? `${text}\n\n` : `\n\n${text}` });
    pending.length = 0;
  };

  for (const item of answerOutline.items) {
    const key = keyOf(item);
    if (key === undefined || isHostOnly(item)) continue;
    const index = used.get(key) ?? 0;
    used.set(key, index + 1);
    const target = unitByKey.get(key)?.[index];
    if (target) {
      insertPending(target.commentStart, true);
      if (!same(textOf(answer, item), textOf(code, target))) edits.push({ start: target.commentStart, end: target.end, text: textOf(answer, item) });
      lastMatchedEnd = target.end;
      continue;
    }
    const header = headerByKey.get(key);
    if (header) {
      if (same(textOf(answer, item), textOf(header.header.text, header.item))) continue;
      throw new SpliceError(
        `${item.names[0]} is defined in ${path.basename(header.header.file)}, which the tuner does not change: give your version a new name in the kernel's file and use that`,
      );
    }
    const elsewhere = fileByKey.get(key)?.[index];
    if (elsewhere) {
      if (same(textOf(answer, item), textOf(code, elsewhere))) continue;
      throw new SpliceError(`the answer changes ${item.names[0]}, which is not part of the kernel's device code: return only the device code you were given`);
    }
    pending.push(item);
  }
  if (pending.length > 0) {
    const kernel = unit.items.find((i) => i.kind === 'function' && i.space === 'kernel');
    if (lastMatchedEnd !== undefined) insertPending(lastMatchedEnd, false);
    else if (kernel) insertPending(kernel.commentStart, true);
  }
  // Back to front; at one position the replacement goes before the insertion in front of it.
  edits.sort((a, b) => b.start - a.start || b.end - a.end);
  let out = code;
  for (const e of edits) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}
