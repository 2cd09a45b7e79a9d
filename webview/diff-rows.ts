/**
 * Rows of a unified diff (as the engine's `candidate` event carries it) for the unified and side-by-side views. Pure.
 * The diff is parsed by jsdiff (the `diff` package), which also wrote it (src/engine/candidate/diff.ts).
 */
import { parsePatch } from 'diff';

export interface DiffLine {
  kind: 'context' | 'add' | 'del';
  text: string;
  oldNo?: number;
  newNo?: number;
}

export interface DiffHunk {
  header: string;
  lines: DiffLine[];
}

/** The hunks of a one-file unified diff with both versions' line numbers. Throws on a malformed diff. */
export function parseUnifiedDiff(diff: string): DiffHunk[] {
  return parsePatch(diff).flatMap((file) =>
    file.hunks.map((hunk) => {
      let oldNo = hunk.oldStart;
      let newNo = hunk.newStart;
      const lines: DiffLine[] = [];
      for (const raw of hunk.lines) {
        // A CRLF file's lines keep their CR in the diff; the view shows the line without it.
        const text = raw.slice(1).replace(/\r$/, '');
        if (raw.startsWith('+')) lines.push({ kind: 'add', text, newNo: newNo++ });
        else if (raw.startsWith('-')) lines.push({ kind: 'del', text, oldNo: oldNo++ });
        else if (raw.startsWith(' ')) lines.push({ kind: 'context', text, oldNo: oldNo++, newNo: newNo++ });
      }
      return { header: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`, lines };
    }),
  );
}

export interface SideBySideRow {
  left?: DiffLine;
  right?: DiffLine;
}

/** Pairs each run of removed lines with the run of added lines after it; context lines sit on both sides. */
export function sideBySide(hunk: DiffHunk): SideBySideRow[] {
  const rows: SideBySideRow[] = [];
  let i = 0;
  const lines = hunk.lines;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.kind === 'context') {
      rows.push({ left: line, right: line });
      i++;
      continue;
    }
    const dels: DiffLine[] = [];
    const adds: DiffLine[] = [];
    while (i < lines.length && lines[i]!.kind === 'del') dels.push(lines[i++]!);
    while (i < lines.length && lines[i]!.kind === 'add') adds.push(lines[i++]!);
    for (let k = 0; k < Math.max(dels.length, adds.length); k++) rows.push({ ...(dels[k] && { left: dels[k] }), ...(adds[k] && { right: adds[k] }) });
  }
  return rows;
}
