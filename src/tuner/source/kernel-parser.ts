/**
 * CUDA source parser: finds every `__global__` kernel in a translation unit with web-tree-sitter + tree-sitter-cuda (WASM),
 * for the tuner (argument list, template parameters, launch bounds), the LLM layer (did a rewrite keep the interface?) and
 * the editor (which kernel holds the cursor, CodeLens ranges).
 *
 * What is fatal (`ParseError`), and what is not:
 * - an ERROR or MISSING node in a kernel's signature (template prefix, specifiers, name, parameter list) or in a
 *   `__global__` declaration: the interface is unknown, so nothing about it may be guessed;
 * - a `__global__` keyword (outside comments, string literals and `#define` bodies) that does not belong to a kernel
 *   definition or declaration this parser understood: a kernel was swallowed by a syntax error, nested in an unclosed
 *   body, or its signature holds a macro the grammar cannot read;
 * - `__launch_bounds__` with other than 1 to 3 arguments, or given twice.
 * Errors inside a kernel's body are not fatal (tree-sitter-cuda does not know every CUDA extension; NVRTC judges bodies):
 * the kernel is returned with `warnings`. Errors in host code or `__device__` functions are ignored for the same reason.
 * Forward declarations and explicit instantiations are not reported as kernels (nothing to tune); they are listed in the
 * `declarations` of the definition with the same qualified name. Kernels in comments or in branches the preprocessor
 * leaves out (preprocessor.ts: `#if 0`, a condition decided by the file's macros and the defines given) are not
 * reported; kernels under a condition that cannot be decided are, so one name may appear twice. With the local headers
 * followed (options.preprocess.includes), their kernels are reported too, with `file` set.
 *
 * Positions are 0-based lines and UTF-16 columns/indices (JavaScript string offsets), as VS Code uses them.
 */
import {
  ParseError,
  type KernelParameter,
  type KernelSignature,
  type LaunchBounds,
  type SourceDiagnostic,
  type SourceRange,
  type TemplateParameter,
} from './kernel-signature';
import { collapseSpace, normalizeType, withParseTree, type CudaAttribute, type Node } from './parse-tree';
import { preprocess, type Preprocessed, type PreprocessedFile, type PreprocessOptions } from './preprocessor';

// ---------------------------------------------------------------------------------------------------------------------
// Positions and messages.

class SourceText {
  private readonly lineStarts: number[] = [0];

  constructor(
    readonly code: string,
    readonly fileName: string,
  ) {
    for (let i = code.indexOf('\n'); i >= 0; i = code.indexOf('\n', i + 1)) this.lineStarts.push(i + 1);
  }

  position(index: number): { line: number; column: number } {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.lineStarts[mid] ?? 0) <= index) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo, column: index - (this.lineStarts[lo] ?? 0) };
  }

  range(startIndex: number, endIndex: number): SourceRange {
    const s = this.position(startIndex);
    const e = this.position(endIndex);
    return { startLine: s.line, startColumn: s.column, endLine: e.line, endColumn: e.column, startIndex, endIndex };
  }

  text(node: Node): string {
    return this.code.slice(node.startIndex, node.endIndex);
  }

  /** "file:12:5: reason", then the source line and a caret under the column (tabs kept so that the caret lines up). */
  diagnostic(index: number, reason: string): SourceDiagnostic {
    const { line, column } = this.position(index);
    const start = this.lineStarts[line] ?? 0;
    const sourceLine = this.code.slice(start, this.lineStarts[line + 1] ?? this.code.length).replace(/\r?\n$/, '');
    const caret = sourceLine.slice(0, column).replace(/[^\t]/g, ' ') + '^';
    return { line, column, message: `${this.fileName}:${line + 1}:${column + 1}: ${reason}\n${sourceLine}\n${caret}` };
  }

  /** What tree-sitter reported at an ERROR or MISSING node; `context` is appended, e.g. " in the body of kernel 'k'". */
  syntaxError(node: Node, context = ''): SourceDiagnostic {
    if (node.isMissing) return this.diagnostic(node.startIndex, `syntax error: expected '${node.type}'${context}`);
    const near = collapseSpace(this.text(node).split('\n')[0] ?? '');
    return this.diagnostic(node.startIndex, `syntax error near '${near.length > 40 ? `${near.slice(0, 40)}…` : near}'${context}`);
  }
}

/** ERROR and MISSING nodes under `node`, skipping the subtrees in `skip`. */
function syntaxErrors(node: Node, skip: readonly (Node | null)[] = []): Node[] {
  if (skip.some((s) => s?.equals(node))) return [];
  if (node.isError || node.isMissing) return [node];
  if (!node.hasError) return [];
  return node.children.flatMap((c) => syntaxErrors(c, skip));
}

// ---------------------------------------------------------------------------------------------------------------------
// Parameters.

const QUALIFIER_ORDER = ['const', 'volatile', '__restrict__'];

/** const, volatile, __restrict__ first (in that order), then the rest in source order; `__restrict` spelt `__restrict__`. */
function orderQualifiers(qualifiers: string[]): string[] {
  const canonical = qualifiers.map((q) => (q === '__restrict' ? '__restrict__' : q));
  const rank = (q: string) => {
    const i = QUALIFIER_ORDER.indexOf(q);
    return i < 0 ? QUALIFIER_ORDER.length : i;
  };
  return [...new Set(canonical)].sort((a, b) => rank(a) - rank(b));
}

function qualifiersOf(node: Node, src: SourceText): string[] {
  return node.namedChildren.filter((c) => c.type === 'type_qualifier' || c.type === 'ms_pointer_modifier').map((c) => src.text(c));
}

/** A function or template parameter declaration (`parameter_declaration`, `optional_parameter_declaration`, ...). */
function readParameter(node: Node, src: SourceText): KernelParameter {
  const typeNode = node.childForFieldName('type');
  const baseType = typeNode ? normalizeType(src.text(typeNode)) : '';
  const baseQualifiers = orderQualifiers(qualifiersOf(node, src));
  // Declarator tokens in source order: "*const", "*", "&"; then arrays and function-pointer parameter lists.
  const tokens: string[] = [];
  let pointerDepth = 0;
  let isRestrict = false;
  let isReference = false;
  let arraySuffix = '';
  let functionSuffix = '';
  let name = '';
  let d: Node | null = node.childForFieldName('declarator');
  while (d) {
    switch (d.type) {
      case 'identifier':
        name = src.text(d);
        d = null;
        break;
      case 'pointer_declarator':
      case 'abstract_pointer_declarator': {
        const q = orderQualifiers(qualifiersOf(d, src));
        isRestrict ||= q.includes('__restrict__');
        pointerDepth++;
        tokens.push('*' + q.join(' '));
        d = d.childForFieldName('declarator');
        break;
      }
      case 'reference_declarator':
      case 'abstract_reference_declarator':
        isReference = true;
        tokens.push(d.child(0)?.type ?? '&');
        d = d.namedChildren[0] ?? null;
        break;
      case 'array_declarator':
      case 'abstract_array_declarator': {
        const size = d.childForFieldName('size');
        arraySuffix = `[${size ? collapseSpace(src.text(size)) : ''}]` + arraySuffix;
        d = d.childForFieldName('declarator');
        break;
      }
      case 'function_declarator':
      case 'abstract_function_declarator': {
        const params = d.childForFieldName('parameters');
        functionSuffix = params ? normalizeType(src.text(params)) : '()';
        d = d.childForFieldName('declarator');
        break;
      }
      case 'parenthesized_declarator':
      case 'abstract_parenthesized_declarator':
      case 'variadic_declarator':
        d = d.namedChildren.find((c) => c.type !== 'type_qualifier') ?? null;
        break;
      case 'attributed_declarator':
        d = d.namedChildren.find((c) => c.type !== 'attribute_declaration') ?? null;
        break;
      default:
        throw new UnsupportedSyntax(d);
    }
  }
  const declarator = tokens.reduce((acc, t) => acc + (/\w$/.test(acc) ? ' ' : '') + t, '');
  const base = [...baseQualifiers, baseType].join(' ');
  const type = functionSuffix
    ? `${base} (${declarator})${functionSuffix}`
    : [base, declarator + arraySuffix].filter((s) => s !== '').join(' ');
  const defaultNode = node.childForFieldName('default_value');
  const isArray = arraySuffix !== '';
  return {
    name,
    type,
    baseType,
    isPointer: pointerDepth > 0 || isArray || functionSuffix !== '',
    pointerDepth: pointerDepth + (isArray ? 1 : 0),
    isConst: baseQualifiers.includes('const'),
    isRestrict,
    isReference,
    ...(defaultNode ? { defaultValue: collapseSpace(src.text(defaultNode)) } : {}),
    ...(isArray ? { arraySuffix } : {}),
  };
}

function readTemplateParameter(node: Node, src: SourceText): TemplateParameter {
  const identifier = (n: Node) => n.namedChildren.find((c) => c.type === 'type_identifier');
  switch (node.type) {
    case 'type_parameter_declaration':
    case 'variadic_type_parameter_declaration': {
      const id = identifier(node);
      return { kind: 'type', name: id ? src.text(id) : '', variadic: node.type.startsWith('variadic') };
    }
    case 'optional_type_parameter_declaration': {
      const id = node.childForFieldName('name');
      const def = node.childForFieldName('default_type');
      return { kind: 'type', name: id ? src.text(id) : '', variadic: false, ...(def ? { default: normalizeType(src.text(def)) } : {}) };
    }
    case 'template_template_parameter_declaration': {
      const inner = node.namedChildren.filter((c) => c.type !== 'template_parameter_list').at(-1);
      const p = inner ? readTemplateParameter(inner, src) : { name: '', variadic: false };
      return { ...p, kind: 'template' };
    }
    default: {
      // parameter_declaration, optional_parameter_declaration, variadic_parameter_declaration
      const p = readParameter(node, src);
      return {
        kind: 'value',
        name: p.name,
        type: p.type,
        variadic: node.type === 'variadic_parameter_declaration',
        ...(p.defaultValue !== undefined ? { default: p.defaultValue } : {}),
      };
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Extraction.

interface Scope {
  namespace: string[];
  externC: boolean;
}

const PARAMETER_TYPES = new Set(['parameter_declaration', 'optional_parameter_declaration', 'variadic_parameter_declaration']);

/** Nodes that hold declarations; a syntax error is looked for in the declaration below the innermost one. */
const CONTAINERS = new Set([
  'translation_unit',
  'declaration_list',
  'linkage_specification',
  'preproc_if',
  'preproc_ifdef',
  'preproc_else',
  'preproc_elif',
  'preproc_elifdef',
]);

/** A declarator this parser does not model; reported as a ParseError at the node. */
class UnsupportedSyntax extends Error {
  constructor(readonly node: Node) {
    super(`unsupported declarator '${node.type}'`);
  }
}

class KernelExtractor {
  readonly kernels: KernelSignature[] = [];
  readonly errors: SourceDiagnostic[] = [];
  private readonly declarations: { qualifiedName: string; range: SourceRange }[] = [];
  /** Start indices of the `__global__` keywords that belong to something understood. */
  private readonly understood = new Set<number>();
  private readonly attributeByEnd: Map<number, CudaAttribute>;

  constructor(
    private readonly src: SourceText,
    private readonly blanked: string,
    private readonly attributes: CudaAttribute[],
  ) {
    this.attributeByEnd = new Map(attributes.map((a) => [a.end, a]));
  }

  run(root: Node): void {
    this.visit(root, { namespace: [], externC: false });
    for (const k of this.kernels) {
      k.declarations = this.declarations.filter((d) => d.qualifiedName === k.qualifiedName).map((d) => d.range);
    }
    this.checkEveryGlobalUnderstood(root);
    this.errors.sort((a, b) => a.line - b.line || a.column - b.column);
  }

  private visit(node: Node, scope: Scope): void {
    for (const child of node.namedChildren) this.visitNode(child, scope);
  }

  /** `prefixStart`: where the range of a declaration found here starts, when something before the node belongs to it. */
  private visitNode(node: Node, scope: Scope, prefixStart?: number): void {
    switch (node.type) {
      case 'comment':
      case 'compound_statement':
        break;
      case 'namespace_definition': {
        const name = node.childForFieldName('name');
        const body = node.childForFieldName('body');
        const inner = name ? collapseSpace(this.src.text(name)).split(/\s*::\s*/) : [];
        if (body) this.visit(body, { ...scope, namespace: [...scope.namespace, ...inner] });
        break;
      }
      case 'linkage_specification': {
        const value = node.childForFieldName('value');
        const inner = { ...scope, externC: value !== null && this.src.text(value) === '"C"' };
        const body = node.childForFieldName('body');
        if (body?.type === 'declaration_list') this.visit(body, inner);
        else if (body) this.visitNode(body, inner, node.startIndex); // `extern "C" __global__ ...`: part of the range
        break;
      }
      case 'template_declaration': {
        const decl = node.namedChildren.find((c) => c.type === 'function_definition' || c.type === 'declaration');
        if (decl) this.visitDeclaration(decl, node, scope, prefixStart);
        break;
      }
      case 'function_definition':
      case 'declaration':
      case 'template_instantiation':
        this.visitDeclaration(node, null, scope, prefixStart);
        break;
      default:
        this.visit(node, scope); // preprocessor conditionals, declaration lists, ERROR nodes
    }
  }

  private visitDeclaration(node: Node, template: Node | null, scope: Scope, prefixStart = (template ?? node).startIndex): void {
    const global = node.children.find((c) => c.type === '__global__');
    if (!global) return;
    const body = node.type === 'function_definition' ? node.childForFieldName('body') : null;
    const signatureErrors = [
      ...syntaxErrors(node, [body]),
      ...(template ? template.children.flatMap((c) => (c.equals(node) ? [] : syntaxErrors(c))) : []),
    ];
    if (signatureErrors.length > 0) {
      this.understood.add(global.startIndex); // reported through its syntax errors
      const declarator = node.childForFieldName('declarator');
      const context = declarator?.type === 'function_declarator' ? ` in the signature of kernel '${this.readName(declarator).name}'` : '';
      this.errors.push(...signatureErrors.map((e) => this.src.syntaxError(e, context)));
      return;
    }
    const declarators = node.childrenForFieldName('declarator');
    // Anything else (`__global__ void MACRO(4) k(...)` read as a variable) is reported by checkEveryGlobalUnderstood.
    if (declarators.length === 0 || declarators.some((d) => d.type !== 'function_declarator')) return;
    this.understood.add(global.startIndex);

    const start = this.extendOverLeadingAttributes(prefixStart);
    if (!body) {
      for (const d of declarators) {
        const { name, namespace } = this.readName(d);
        const qualifiedName = [...scope.namespace, ...namespace, name].join('::');
        this.declarations.push({ qualifiedName, range: this.src.range(start, node.endIndex) });
      }
      return;
    }
    const declarator = declarators[0]!;
    const { name, nameNode, arguments: templateArguments, namespace: qualifier } = this.readName(declarator);
    const namespace = [...scope.namespace, ...qualifier];
    let parameters: KernelParameter[];
    let templateParameters: TemplateParameter[];
    try {
      parameters = (declarator.childForFieldName('parameters')?.namedChildren ?? [])
        .filter((p) => PARAMETER_TYPES.has(p.type))
        .map((p) => readParameter(p, this.src))
        // `k(void)` declares no parameters
        .filter((p, _, all) => !(all.length === 1 && p.type === 'void' && p.name === ''));
      templateParameters = (template?.childForFieldName('parameters')?.namedChildren ?? [])
        .filter((p) => p.type !== 'comment')
        .map((p) => readTemplateParameter(p, this.src));
    } catch (e) {
      if (!(e instanceof UnsupportedSyntax)) throw e;
      this.errors.push(this.src.diagnostic(e.node.startIndex, `kernel '${name}': ${e.message}`));
      return;
    }

    const signatureEnd = body.startIndex;
    const own = this.attributes.filter((a) => a.start >= start && a.end <= signatureEnd);
    const bounds = own.filter((a) => a.keyword === '__launch_bounds__');
    for (const extra of bounds.slice(1)) this.errors.push(this.src.diagnostic(extra.start, `kernel '${name}': __launch_bounds__ given twice`));
    const launchBounds = bounds[0] ? this.readLaunchBounds(bounds[0], name) : undefined;
    const skipped = new Set([global.id, node.childForFieldName('type')?.id, declarator.id, body.id]);
    const specifiers = node.children
      .filter((c) => !skipped.has(c.id) && c.type !== 'comment' && c.startIndex < declarator.startIndex)
      .map((c) => ({ start: c.startIndex, text: collapseSpace(this.src.text(c)) }));
    const attributes = [...specifiers, ...own.filter((a) => a !== bounds[0]).map((a) => ({ start: a.start, text: a.text }))]
      .sort((a, b) => a.start - b.start)
      .map((a) => a.text);

    this.kernels.push({
      name,
      qualifiedName: [...namespace, name].join('::'),
      namespace,
      isTemplate: template !== null,
      templateParameters,
      ...(templateArguments ? { templateArguments } : {}),
      ...(launchBounds ? { launchBounds } : {}),
      attributes,
      externC: scope.externC,
      parameters,
      range: this.src.range(start, node.endIndex),
      nameRange: this.src.range(nameNode.startIndex, nameNode.endIndex),
      bodyRange: this.src.range(body.startIndex, body.endIndex),
      signatureText: this.src.code.slice(start, signatureEnd).trimEnd().replace(/\r\n?/g, '\n'),
      declarations: [],
      warnings: syntaxErrors(body).map((e) => this.src.syntaxError(e, ` in the body of kernel '${name}'`)),
    });
  }

  /** `k`, `ns::k` (out-of-line definition) or the specialization `k<float, 16>`. */
  private readName(declarator: Node): { name: string; nameNode: Node; arguments?: string[]; namespace: string[] } {
    let d = declarator.childForFieldName('declarator') ?? declarator;
    const namespace: string[] = [];
    while (d.type === 'qualified_identifier') {
      const scope = d.childForFieldName('scope');
      if (scope) namespace.push(...collapseSpace(this.src.text(scope)).split(/\s*::\s*/));
      const inner = d.childForFieldName('name');
      if (!inner) break;
      d = inner;
    }
    if (d.type === 'template_function') {
      const nameNode = d.childForFieldName('name') ?? d;
      const args = d.childForFieldName('arguments')?.namedChildren ?? [];
      return {
        name: this.src.text(nameNode),
        nameNode,
        namespace,
        arguments: args.filter((a) => a.type !== 'comment').map((a) => normalizeType(this.src.text(a))),
      };
    }
    return { name: this.src.text(d), nameNode: d, namespace };
  }

  private readLaunchBounds(a: CudaAttribute, kernel: string): LaunchBounds | undefined {
    const [maxThreads, minBlocks, maxBlocksPerCluster] = a.args;
    if (maxThreads === undefined || a.args.length > 3 || a.args.includes('')) {
      this.errors.push(this.src.diagnostic(a.start, `kernel '${kernel}': __launch_bounds__ takes 1 to 3 arguments, got '${a.text}'`));
      return undefined;
    }
    return {
      maxThreads,
      ...(minBlocks !== undefined ? { minBlocks } : {}),
      ...(maxBlocksPerCluster !== undefined ? { maxBlocksPerCluster } : {}),
      range: this.src.range(a.start, a.end),
    };
  }

  /** `__launch_bounds__(128) __global__ void k(...)`: the masked attribute before the node belongs to the kernel. */
  private extendOverLeadingAttributes(start: number): number {
    for (;;) {
      let j = start;
      while (j > 0 && /\s/.test(this.blanked[j - 1] ?? '')) j--;
      const a = this.attributeByEnd.get(j);
      if (!a) return start;
      start = a.start;
    }
  }

  private checkEveryGlobalUnderstood(root: Node): void {
    for (const leaf of this.tokens(root, '__global__')) {
      if (!this.understood.has(leaf.startIndex)) this.errors.push(this.explainNotUnderstood(leaf));
    }
    // `#define KERNEL __global__`, then `KERNEL void k(...)`: a kernel that would otherwise vanish without a word.
    for (const def of root.descendantsOfType(['preproc_def', 'preproc_function_def'])) {
      const value = def.childForFieldName('value');
      const macro = def.childForFieldName('name');
      if (!value || !macro || !/\b__global__\b/.test(this.blanked.slice(value.startIndex, value.endIndex))) continue;
      const name = this.src.text(macro);
      const line = this.src.position(def.startIndex).line + 1;
      for (const use of this.tokens(root, name)) {
        if (this.onDirectiveLine(use.startIndex)) continue; // the #define itself, #ifdef KERNEL, ...
        const reason = `kernel declared through the macro '${name}' (#define at line ${line}), which this parser does not expand: write __global__ in the signature`;
        this.errors.push(this.src.diagnostic(use.startIndex, reason));
      }
    }
  }

  /** Leaves that are exactly the identifier `word` in compiled code (not in comments, literals or #define text). */
  private *tokens(root: Node, word: string): Generator<Node> {
    for (const m of this.blanked.matchAll(new RegExp(`\\b${word}\\b`, 'g'))) {
      const leaf = root.descendantForIndex(m.index, m.index + word.length);
      if (leaf && leaf.type !== 'preproc_arg' && leaf.startIndex === m.index && leaf.endIndex === m.index + word.length) yield leaf;
    }
  }

  private onDirectiveLine(index: number): boolean {
    const lineStart = this.blanked.lastIndexOf('\n', index - 1) + 1;
    return /^\s*#/.test(this.blanked.slice(lineStart, index + 1));
  }

  private explainNotUnderstood(keyword: Node): SourceDiagnostic {
    // The declaration-level node holding the keyword, and the outermost function whose body holds it.
    let top = keyword;
    let owner: Node | null = null;
    for (let p = keyword.parent; p; p = p.parent) {
      if (p.type === 'compound_statement' && p.parent?.type === 'function_definition') owner = p.parent;
      if (CONTAINERS.has(p.type)) break;
      top = p;
    }
    if (owner) {
      const declarator = owner.childForFieldName('declarator');
      const ownerName = declarator ? collapseSpace(this.src.text(declarator)).split('(')[0] : 'a function';
      const line = this.src.position(owner.startIndex).line + 1;
      return this.src.diagnostic(keyword.startIndex, `__global__ function inside the body of '${ownerName}' (line ${line}): is a '}' missing before it?`);
    }
    const nearby = syntaxErrors(top)[0];
    if (nearby) return this.src.syntaxError(nearby);
    return this.src.diagnostic(
      keyword.startIndex,
      'cannot read this __global__ declaration (a macro in the signature? of those, only __launch_bounds__, __cluster_dims__, __maxnreg__ and __align__ are understood)',
    );
  }
}

export interface ParseKernelsOptions {
  /** How the preprocessor sees the file; default the open world (no configuration), local headers not followed. */
  preprocess?: PreprocessOptions;
}

/**
 * Every `__global__` function definition in `code` (and in the local headers it includes, when they are followed), in
 * source order, as the preprocessor leaves the file. Throws `ParseError` (see the module comment).
 */
export function parseKernels(code: string, fileName = '<source>', options: ParseKernelsOptions = {}): Promise<KernelSignature[]> {
  return kernelsOf(preprocess(code, fileName, options.preprocess ?? { world: 'open' }));
}

/** The kernels of a preprocessed file and its headers (see parseKernels). */
export async function kernelsOf({ files }: Preprocessed): Promise<KernelSignature[]> {
  const kernels: KernelSignature[] = [];
  for (const [i, file] of files.entries()) kernels.push(...(await kernelsOfFile(file, i > 0)));
  return kernels;
}

/** The kernels of one preprocessed file: the view is parsed, names, types and positions are read from the file. */
export function kernelsOfFile(file: PreprocessedFile, isHeader: boolean): Promise<KernelSignature[]> {
  return withParseTree(file.view, (root, blanked, attributes) => {
    const src = new SourceText(file.code, file.fileName);
    const extractor = new KernelExtractor(src, blanked, attributes as CudaAttribute[]);
    extractor.run(root);
    const [first, ...rest] = extractor.errors;
    if (first) {
      const more = rest.length > 0 ? `\n(and ${rest.length} more error${rest.length > 1 ? 's' : ''})` : '';
      throw new ParseError(file.fileName, first.line, first.column, first.message + more, extractor.errors, extractor.kernels);
    }
    return isHeader && file.path ? extractor.kernels.map((k) => ({ ...k, file: file.path })) : extractor.kernels;
  });
}
