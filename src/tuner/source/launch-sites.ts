/**
 * Where the host code launches a kernel: `k<<<grid, block[, smem[, stream]]>>>(args)` and `cudaLaunchKernel(k, ...)`
 * (and its Ex/Cooperative variants), read from the tree-sitter-cuda parse tree with the ranges an edit needs. The file
 * is read as the preprocessor leaves it for its host compile, whose -D options are not known here (the open world of
 * preprocessor.ts): branches its own macros rule out are not searched, the others are.
 */
import { withParseTree, type Node } from './parse-tree';
import { preprocess } from './preprocessor';

export interface SourceSpan {
  text: string;
  start: number;
  end: number;
}

export interface LaunchSite {
  kind: 'chevron' | 'runtime-api';
  /** The whole call expression. */
  start: number;
  end: number;
  /** 0-based line of the call. */
  line: number;
  /** The callee as written, e.g. "ns::k<float, 256>" (chevron) or the runtime function's name. */
  callee: string;
  /** Chevron launches: `<<<...>>>` and the expressions in it (grid, block, shared memory, stream). */
  config?: SourceSpan & { args: SourceSpan[] };
  /** The call's arguments: the kernel's (chevron) or the runtime function's. */
  args: SourceSpan[];
  /** The function whose body holds the launch, when it has a name. */
  inFunction?: string;
}

const RUNTIME_LAUNCHES = new Set(['cudaLaunchKernel', 'cudaLaunchCooperativeKernel', 'cudaLaunchKernelEx']);

/** The unqualified name a callee expression names ("ns::k<float>" → "k"). */
function calleeName(text: string): string {
  const withoutTemplate = text.replace(/<[\s\S]*>$/, '');
  return withoutTemplate.split('::').at(-1)!.trim();
}

function spans(code: string, nodes: readonly Node[]): SourceSpan[] {
  return nodes.filter((n) => n.type !== 'comment').map((n) => ({ text: code.slice(n.startIndex, n.endIndex), start: n.startIndex, end: n.endIndex }));
}

/** Every launch of the kernel named `kernelName` (unqualified; qualified calls of it match too). */
export function findLaunchSites(code: string, kernelName: string): Promise<LaunchSite[]> {
  const { view } = preprocess(code, 'host.cu', { world: 'open' }).files[0]!;
  return withParseTree(view, (root) => {
    const sites: LaunchSite[] = [];
    for (const call of root.descendantsOfType('call_expression')) {
      const fn = call.childForFieldName('function');
      const argumentList = call.childForFieldName('arguments');
      if (!fn || !argumentList) continue;
      const callee = code.slice(fn.startIndex, fn.endIndex);
      const args = spans(code, argumentList.namedChildren);
      const chevron = call.namedChildren.find((c) => c.type === 'kernel_call_syntax');
      const base = { start: call.startIndex, end: call.endIndex, line: call.startPosition.row, callee, args, ...enclosingFunction(code, call) };
      if (chevron && calleeName(callee) === kernelName) {
        const config = { text: code.slice(chevron.startIndex, chevron.endIndex), start: chevron.startIndex, end: chevron.endIndex, args: spans(code, chevron.namedChildren) };
        sites.push({ kind: 'chevron', ...base, config });
      } else if (RUNTIME_LAUNCHES.has(callee) && args[0] && new RegExp(`\\b${kernelName}\\b`).test(args[0].text)) {
        sites.push({ kind: 'runtime-api', ...base });
      }
    }
    return sites;
  });
}

function enclosingFunction(code: string, node: Node): { inFunction?: string } {
  for (let p = node.parent; p; p = p.parent) {
    if (p.type !== 'function_definition') continue;
    const declarator = p.childForFieldName('declarator');
    const name = declarator?.childForFieldName('declarator');
    return name ? { inFunction: code.slice(name.startIndex, name.endIndex) } : {};
  }
  return {};
}
