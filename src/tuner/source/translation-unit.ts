/**
 * The top-level structure of a CUDA source file as the tree-sitter-cuda parse tree shows it: its #includes and
 * #defines, and each declaration with where it runs (host, device, kernel) and which names it declares and uses.
 *
 * Three things are built on it:
 * - the device unit NVRTC compiles: the file with its host code (main, host functions, host variables) blanked out
 *   character by character, so every remaining line keeps its line number (compile-sources.ts);
 * - the device unit the LLM reads and rewrites: a kernel and the device code it uses (device-unit.ts);
 * - the host's launch sites of a kernel (`k<<<grid, block, smem, stream>>>(...)`, `cudaLaunchKernel`), which the final
 *   proposal rewrites for the tuned configuration (launch-sites.ts).
 *
 * Where the grammar cannot read a declaration (an unknown macro in it), the item is kept as it is and marked `unknown`:
 * the compiler judges it, and a file NVRTC cannot take goes to nvcc whole.
 */
import { withParseTree, type Node } from './parse-tree';

export type ItemKind = 'include' | 'define' | 'directive' | 'function' | 'variable' | 'type' | 'unknown';

/** Where a function runs, or the memory space of a variable. */
export type ExecutionSpace = 'host' | 'device' | 'kernel' | 'host-device';

export interface TopLevelItem {
  kind: ItemKind;
  /** [start, end) in the source; a directive's range ends at the end of its line. */
  start: number;
  end: number;
  /** Where the comments directly above it start (its doc comment); `start` when there are none. */
  commentStart: number;
  /** The frames (conditionals, namespaces, `extern "C"` blocks) it is inside, outermost first: SourceOutline.frames. */
  frames: number[];
  /**
   * The preprocessor conditions under which it is compiled, all of which must hold: `defined(X)`, `!(defined(X))`
   * for an #else after `#ifdef X`, the text of an #if or #elif condition.
   */
  guards: string[];
  /** A `typedef T name;` or `using name = T;`: the name and the type it stands for. */
  alias?: { name: string; target: string };
  /** Names it declares (unqualified): the function, variables, type, typedef, or the macro. */
  names: string[];
  /** Enclosing named namespaces, outermost first. */
  namespace: string[];
  /** Functions: where they run. Variables: 'device' for __device__/__constant__/__shared__/__managed__ memory. */
  space?: ExecutionSpace;
  /** A function with a body (a prototype has none). */
  isDefinition?: boolean;
  /** `constexpr`, or `const` with a value: usable in device code without being device memory. */
  isConstant?: boolean;
  include?: { spelling: string; system: boolean };
  macro?: { name: string; value: string; functionLike: boolean };
  /**
   * Classes: member functions that run on the host only (declared or defined without __device__), and how many
   * members are device code. NVRTC refuses both a host member and a class that only the host can use.
   */
  hostMembers?: { start: number; end: number }[];
  deviceMembers?: number;
  /** Identifiers it mentions (types, functions, variables, macros), for dependency closures. */
  uses: ReadonlySet<string>;
}

/**
 * What encloses declarations without being one: a preprocessor conditional (its #if, #elif, #else and #endif lines),
 * a namespace or an `extern "C"` block (its opening up to `{`, and its `}`). Pieces are ranges of the source.
 */
export interface Frame {
  pieces: { start: number; end: number }[];
}

export interface SourceOutline {
  code: string;
  /** Every top-level item in source order, through namespaces, `extern "C"` blocks and preprocessor conditionals. */
  items: TopLevelItem[];
  frames: Frame[];
  /** Object-like macros whose value contains a CUDA execution-space keyword (`#define HD __host__ __device__`). */
  spaceMacros: ReadonlyMap<string, string>;
}

const TYPE_NODES = new Set([
  'struct_specifier',
  'class_specifier',
  'union_specifier',
  'enum_specifier',
  'type_definition',
  'alias_declaration',
  'static_assert_declaration',
  'using_declaration',
  'namespace_alias_definition',
  'concept_definition',
]);
const IDENTIFIER_NODES = new Set(['identifier', 'type_identifier', 'field_identifier', 'namespace_identifier']);
const SPACE_WORDS = /\b(__global__|__device__|__host__|__constant__|__shared__|__managed__)\b/g;

/**
 * Parses `code` into its top-level items. `spaceMacros`: execution-space macros defined before it (by the headers it
 * includes; Preprocessed.spaceMacros), besides its own.
 */
export function outlineSource(code: string, options: { spaceMacros?: ReadonlyMap<string, string> } = {}): Promise<SourceOutline> {
  return withParseTree(code, (root, blanked) => new Outliner(code, blanked, options.spaceMacros).run(root));
}

interface Scope {
  namespace: string[];
  frames: number[];
  guards: string[];
}

class Outliner {
  private readonly items: TopLevelItem[] = [];
  private readonly frames: Frame[] = [];
  private readonly spaceMacros: Map<string, string>;

  constructor(
    private readonly code: string,
    /** The code with comments and literals blanked: keyword scans never see a comment. */
    private readonly blanked: string,
    knownSpaceMacros: ReadonlyMap<string, string> = new Map(),
  ) {
    this.spaceMacros = new Map(knownSpaceMacros);
  }

  run(root: Node): SourceOutline {
    // Execution-space macros first: `HD float f()` must read as `__host__ __device__ float f()` wherever HD is defined.
    for (const def of root.descendantsOfType('preproc_def')) {
      const name = def.childForFieldName('name');
      const value = def.childForFieldName('value');
      if (name && value && /\b__(global|device|host)__\b/.test(this.blanked.slice(value.startIndex, value.endIndex))) {
        this.spaceMacros.set(this.text(name), this.blanked.slice(value.startIndex, value.endIndex).trim());
      }
    }
    this.visitChildren(root, { namespace: [], frames: [], guards: [] });
    this.items.sort((a, b) => a.start - b.start);
    return { code: this.code, items: this.items, frames: this.frames, spaceMacros: this.spaceMacros };
  }

  private text(node: Node): string {
    return this.code.slice(node.startIndex, node.endIndex);
  }

  private visitChildren(node: Node, scope: Scope, skip?: Node | null): void {
    for (const child of node.namedChildren) if (!skip?.equals(child)) this.visit(child, scope);
  }

  private visit(node: Node, scope: Scope): void {
    switch (node.type) {
      case 'comment':
        return;
      case 'namespace_definition': {
        const name = node.childForFieldName('name');
        const body = node.childForFieldName('body');
        const inner = name ? this.text(name).split(/\s*::\s*/).filter((s) => s !== '') : [];
        if (body) this.visitChildren(body, this.enter(scope, node, body, inner));
        return;
      }
      case 'linkage_specification': {
        const body = node.childForFieldName('body');
        if (body?.type === 'declaration_list') this.visitChildren(body, this.enter(scope, node, body, []));
        else if (body) this.visitDeclaration(body, scope, node.startIndex);
        return;
      }
      case 'preproc_include':
        return this.add(node, scope, { kind: 'include', include: this.includeOf(node) });
      case 'preproc_def':
      case 'preproc_function_def': {
        const name = node.childForFieldName('name');
        const value = node.childForFieldName('value');
        const macroName = name ? this.text(name) : '';
        return this.add(node, scope, {
          kind: 'define',
          names: macroName ? [macroName] : [],
          macro: { name: macroName, value: value ? this.text(value).trim() : '', functionLike: node.type === 'preproc_function_def' },
        });
      }
      case 'preproc_if':
      case 'preproc_ifdef': {
        // One frame for the whole #if / #elif / #else / #endif chain: its directive lines are kept, and what each
        // branch encloses is visited (not the conditions), under the branch's condition and the negations of those before.
        const frame = this.addFrame(this.conditionalLines(node));
        this.visitBranch(node, { ...scope, frames: [...scope.frames, frame] });
        return;
      }
      default:
        if (node.type.startsWith('preproc_')) return this.add(node, scope, { kind: 'directive' });
        this.visitDeclaration(node, scope);
    }
  }

  /** The declarations of one branch of a conditional, then of the branches after it (#elif, #else). */
  private visitBranch(node: Node, scope: Scope): void {
    const condition = node.childForFieldName('condition') ?? node.childForFieldName('name');
    const alternative = node.childForFieldName('alternative');
    const holds = this.branchCondition(node, condition);
    const inside = holds === undefined ? scope : { ...scope, guards: [...scope.guards, holds] };
    for (const child of node.namedChildren) {
      if (condition?.equals(child)) continue;
      if (alternative?.equals(child)) this.visitBranch(child, holds === undefined ? scope : { ...scope, guards: [...scope.guards, `!(${holds})`] });
      else this.visit(child, inside);
    }
  }

  /** The condition a branch is taken under, as preprocessor expression text (undefined for #else). */
  private branchCondition(node: Node, condition: Node | null): string | undefined {
    if (!condition) return undefined;
    const text = this.blanked.slice(condition.startIndex, condition.endIndex).replace(/\\\r?\n/g, ' ').trim();
    if (node.type !== 'preproc_ifdef' && node.type !== 'preproc_elifdef') return text;
    return /^#\s*(el)?ifndef\b/.test(this.code.slice(node.startIndex, condition.startIndex)) ? `!defined(${text})` : `defined(${text})`;
  }

  /** The #if line, each #elif and #else line, and the #endif line of a conditional. */
  private conditionalLines(node: Node): { start: number; end: number }[] {
    const lines = [this.lineAt(node.startIndex)];
    for (let alt = node.childForFieldName('alternative'); alt; alt = alt.childForFieldName('alternative')) lines.push(this.lineAt(alt.startIndex));
    const endif = node.children.find((c) => c.type === '#endif');
    if (endif) lines.push(this.lineAt(endif.startIndex));
    return lines;
  }

  private lineAt(index: number): { start: number; end: number } {
    const start = this.code.lastIndexOf('\n', index - 1) + 1;
    const nl = this.code.indexOf('\n', index);
    return { start, end: nl < 0 ? this.code.length : nl + 1 };
  }

  /** A namespace or `extern "C"` block: its opening up to `{` and its closing `}` are the frame's pieces. */
  private enter(scope: Scope, node: Node, body: Node, names: string[]): Scope {
    const frame = this.addFrame([
      { start: node.startIndex, end: body.startIndex + 1 },
      { start: body.endIndex - 1, end: body.endIndex },
    ]);
    return { ...scope, namespace: [...scope.namespace, ...names], frames: [...scope.frames, frame] };
  }

  private addFrame(pieces: { start: number; end: number }[]): number {
    this.frames.push({ pieces });
    return this.frames.length - 1;
  }

  private visitDeclaration(node: Node, scope: Scope, prefixStart = node.startIndex): void {
    let decl = node;
    if (node.type === 'template_declaration') {
      decl = node.namedChildren.find((c) => c.type !== 'template_parameter_list' && c.type !== 'comment') ?? node;
    }
    if (TYPE_NODES.has(decl.type)) {
      const alias = this.aliasOf(decl);
      return this.add(node, scope, { kind: 'type', names: this.typeNames(decl), ...this.members(decl), ...(alias && { alias }) }, prefixStart);
    }
    if (decl.type === 'function_definition' || decl.type === 'declaration' || decl.type === 'template_instantiation') {
      const declarators = decl.childrenForFieldName('declarator');
      const functionDeclarator = declarators.find((d) => this.innermostDeclarator(d)?.type === 'function_declarator' || d.type === 'function_declarator');
      const spaces = this.spaceWords(prefixStart, this.declaratorStart(decl, declarators));
      if (decl.type === 'function_definition' || functionDeclarator || decl.type === 'template_instantiation') {
        const nameNode = functionDeclarator ? this.functionName(functionDeclarator) : null;
        return this.add(
          node,
          scope,
          {
            kind: decl.hasError && !nameNode ? 'unknown' : 'function',
            names: nameNode ? [nameNode] : [],
            space: functionSpace(spaces),
            isDefinition: decl.type === 'function_definition',
            isConstant: /\b(constexpr|consteval)\b/.test(this.blanked.slice(prefixStart, decl.endIndex).split('{')[0] ?? ''),
          },
          prefixStart,
        );
      }
      if (declarators.length === 0) {
        // `struct A { ... };` read as a declaration of no variable, or `template <...> struct S;`
        const type = decl.childForFieldName('type');
        if (type && TYPE_NODES.has(type.type)) return this.add(node, scope, { kind: 'type', names: this.typeNames(type), ...this.members(type) }, prefixStart);
        return this.add(node, scope, { kind: 'unknown' }, prefixStart);
      }
      const qualifiers = decl.namedChildren.filter((c) => c.type === 'type_qualifier').map((c) => this.text(c));
      const isConstexpr = qualifiers.includes('constexpr');
      // `const int N = 4;` is a constant; `const char* p = ...` is a mutable pointer to constants.
      const isConst = qualifiers.includes('const') && !declarators.some((d) => this.innermostDeclarator(d, true)?.type === 'pointer_declarator');
      const names = declarators.map((d) => this.variableName(d)).filter((n): n is string => n !== null);
      const type = decl.childForFieldName('type');
      return this.add(
        node,
        scope,
        {
          kind: 'variable',
          names: [...names, ...(type && TYPE_NODES.has(type.type) ? this.typeNames(type) : [])],
          space: spaces.some((s) => s !== '__host__' && s !== '__global__') ? 'device' : 'host',
          isConstant: isConstexpr || isConst,
        },
        prefixStart,
      );
    }
    this.add(node, scope, { kind: node.type === 'expression_statement' ? 'directive' : 'unknown' }, prefixStart);
  }

  /** `typedef T name;` (one plain name) and `using name = T;`: what the name stands for. */
  private aliasOf(decl: Node): { name: string; target: string } | undefined {
    if (decl.type === 'alias_declaration') {
      const name = decl.childForFieldName('name');
      const type = decl.childForFieldName('type');
      return name && type ? { name: this.text(name), target: this.text(type).replace(/\s+/g, ' ').trim() } : undefined;
    }
    if (decl.type !== 'type_definition') return undefined;
    const declarators = decl.childrenForFieldName('declarator');
    const type = decl.childForFieldName('type');
    if (declarators.length !== 1 || declarators[0]!.type !== 'type_identifier' || !type || type.childForFieldName('body')) return undefined;
    const qualifiers = decl.namedChildren.filter((c) => c.type === 'type_qualifier').map((c) => this.text(c));
    return { name: this.text(declarators[0]!), target: [...qualifiers, this.text(type)].join(' ').replace(/\s+/g, ' ').trim() };
  }

  /** The member functions of a class, struct or union body, split by where they run. */
  private members(specifier: Node): Pick<TopLevelItem, 'hostMembers' | 'deviceMembers'> {
    const body = specifier.childForFieldName('body');
    if (!body || body.type !== 'field_declaration_list') return {};
    const hostMembers: { start: number; end: number }[] = [];
    let deviceMembers = 0;
    for (const child of body.namedChildren) {
      const member = child.type === 'template_declaration' ? child.namedChildren.find((c) => c.type !== 'template_parameter_list') : child;
      if (!member || !['function_definition', 'field_declaration', 'declaration'].includes(member.type)) continue;
      const declarator = member.childForFieldName('declarator');
      const fn = declarator && (declarator.type === 'function_declarator' ? declarator : this.innermostDeclarator(declarator));
      if (fn?.type !== 'function_declarator') continue; // a data member
      const head = this.blanked.slice(child.startIndex, fn.startIndex);
      const tail = this.blanked.slice(fn.endIndex, member.childForFieldName('body')?.startIndex ?? member.endIndex);
      // `= default` and `= delete` members are implicitly host and device; constexpr ones are usable in device code.
      if (/=\s*(default|delete)\b/.test(tail) || /\b(constexpr|consteval)\b/.test(head)) continue;
      const space = functionSpace(this.spaceWords(child.startIndex, fn.startIndex));
      if (space === 'host') hostMembers.push({ start: child.startIndex, end: child.endIndex });
      else deviceMembers++;
    }
    return { hostMembers, deviceMembers };
  }

  private add(node: Node, scope: Scope, item: Partial<TopLevelItem> & { kind: ItemKind }, start = node.startIndex): void {
    this.items.push({
      names: [],
      ...item,
      namespace: scope.namespace,
      frames: scope.frames,
      guards: scope.guards,
      start,
      commentStart: this.leadingComments(node, start),
      end: node.endIndex,
      uses: this.identifiersIn(node, item.macro?.value),
    });
  }

  /** Where the comments right above a declaration start (no blank line between them and it), else its own start. */
  private leadingComments(node: Node, start: number): number {
    let at = start;
    for (let prev = node.previousNamedSibling; prev?.type === 'comment'; prev = prev.previousNamedSibling) {
      if (!/^[ \t]*\r?\n?[ \t]*$/.test(this.code.slice(prev.endIndex, at))) break;
      at = prev.startIndex;
    }
    return at;
  }

  private includeOf(node: Node): { spelling: string; system: boolean } | undefined {
    const path = node.childForFieldName('path');
    if (!path) return undefined;
    const text = this.text(path);
    if (path.type === 'system_lib_string') return { spelling: text.slice(1, -1), system: true };
    if (path.type === 'string_literal') return { spelling: text.slice(1, -1), system: false };
    return undefined; // `#include MACRO`: kept as it is
  }

  /** The CUDA space keywords (and macros that stand for them) before the declarator. */
  private spaceWords(start: number, end: number): string[] {
    const prefix = this.blanked.slice(start, end);
    const words = [...prefix.matchAll(SPACE_WORDS)].map((m) => m[1]!);
    for (const m of prefix.matchAll(/\b[A-Za-z_]\w*\b/g)) {
      const expansion = this.spaceMacros.get(m[0]);
      if (expansion) words.push(...[...expansion.matchAll(SPACE_WORDS)].map((x) => x[1]!));
    }
    return words;
  }

  private declaratorStart(decl: Node, declarators: Node[]): number {
    return declarators[0]?.startIndex ?? decl.childForFieldName('body')?.startIndex ?? decl.endIndex;
  }

  /** Through init, pointer, reference, array and attributed declarators to the one that names something. */
  private innermostDeclarator(d: Node, stopAtPointer = false): Node | null {
    let cur: Node | null = d;
    while (cur) {
      if (cur.type === 'function_declarator' || cur.type === 'identifier' || cur.type === 'qualified_identifier' || cur.type === 'operator_name') return cur;
      if (stopAtPointer && cur.type === 'pointer_declarator') return cur;
      cur = cur.childForFieldName('declarator') ?? cur.namedChildren.find((c) => c.type.endsWith('declarator')) ?? null;
    }
    return null;
  }

  private functionName(functionDeclarator: Node): string | null {
    const fd = functionDeclarator.type === 'function_declarator' ? functionDeclarator : this.innermostDeclarator(functionDeclarator);
    let d = fd?.childForFieldName('declarator') ?? null;
    while (d && (d.type === 'qualified_identifier' || d.type === 'template_function')) {
      d = d.type === 'qualified_identifier' ? d.childForFieldName('name') : d.childForFieldName('name');
    }
    return d ? this.text(d) : null;
  }

  private variableName(d: Node): string | null {
    const inner = this.innermostDeclarator(d);
    if (!inner) return null;
    if (inner.type === 'qualified_identifier') return this.text(inner.childForFieldName('name') ?? inner);
    return this.text(inner);
  }

  private typeNames(node: Node): string[] {
    const out: string[] = [];
    const name = node.childForFieldName('name');
    if (name) out.push(this.text(name));
    if (node.type === 'type_definition') {
      for (const d of node.childrenForFieldName('declarator')) {
        const inner = d.type === 'type_identifier' ? d : d.descendantsOfType('type_identifier').at(-1);
        if (inner) out.push(this.text(inner));
      }
      // `typedef struct X { ... } Y;` declares X too; `typedef Packed128<float> f128;` declares only f128.
      const type = node.childForFieldName('type');
      if (type?.childForFieldName('body')) out.push(...this.typeNames(type));
    }
    if (node.type === 'enum_specifier') {
      for (const e of node.descendantsOfType('enumerator')) {
        const n = e.childForFieldName('name');
        if (n) out.push(this.text(n));
      }
    }
    return [...new Set(out)];
  }

  private identifiersIn(node: Node, macroValue?: string): Set<string> {
    const out = new Set<string>();
    for (const leaf of node.descendantsOfType([...IDENTIFIER_NODES])) out.add(this.text(leaf));
    // Macro bodies and the arguments of unparsed code are token soup to the grammar: take every identifier-like word.
    const soup = macroValue ?? (node.hasError ? this.blanked.slice(node.startIndex, node.endIndex) : '');
    for (const m of soup.matchAll(/\b[A-Za-z_]\w*\b/g)) out.add(m[0]);
    return out;
  }
}

function functionSpace(words: readonly string[]): ExecutionSpace {
  if (words.includes('__global__')) return 'kernel';
  const device = words.includes('__device__');
  const host = words.includes('__host__');
  return device ? (host ? 'host-device' : 'device') : 'host';
}

/**
 * Host code that NVRTC must not see: functions that run on the host only (main, launchers, host templates, their
 * prototypes and explicit instantiations) and host variables. Constant expressions are kept (device code may use
 * them), and so is everything the grammar could not read.
 */
export function isHostOnly(item: TopLevelItem): boolean {
  if (item.kind === 'function') return item.space === 'host' && !item.isConstant;
  if (item.kind === 'variable') return item.space === 'host' && !item.isConstant;
  // A class with member functions, none of them device code (an exception type, a host RAII wrapper).
  if (item.kind === 'type') return (item.hostMembers?.length ?? 0) > 0 && item.deviceMembers === 0;
  return false;
}

/** What NVRTC must not see of a file: its host-only items, and the host member functions of the classes it keeps. */
export function hostCodeRanges(items: readonly TopLevelItem[]): { start: number; end: number }[] {
  return items.flatMap((item) => (isHostOnly(item) ? [item] : (item.hostMembers ?? [])));
}

/** `code` with every character of the ranges replaced by a space, line breaks kept: line numbers stay the same. */
export function blankRanges(code: string, ranges: readonly { start: number; end: number }[]): string {
  if (ranges.length === 0) return code;
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  let out = '';
  let last = 0;
  for (const r of sorted) {
    const start = Math.max(r.start, last);
    if (r.end <= start) continue;
    out += code.slice(last, start) + code.slice(start, r.end).replace(/[^\r\n]/g, ' ');
    last = r.end;
  }
  return out + code.slice(last);
}
