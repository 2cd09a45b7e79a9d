import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  acceptAll,
  acceptHunk,
  applyChanges,
  applyEdits,
  asideChangeAt,
  asideChanges,
  describeHunk,
  hunkAt,
  hunkNear,
  openReview,
  planHunks,
  reinsert,
  rejectAll,
  rejectHunk,
  ReviewTimeline,
  textWith,
  textWithout,
  type Eol,
  type ReviewState,
  type TextChange,
  withoutAsideChange,
} from '../../src/extension/proposal';
import { splitLines } from '../../src/engine/candidate/diff';
import { int, pick, rng } from '../support/seeded';
import { ORIGINAL, PROPOSED } from '../support/small-kernel';

function open(text: string, proposed: string, eol: Eol = '\n'): ReviewState {
  const t = openReview(text, proposed, eol, 1);
  if (!t) throw new Error('nothing to review');
  expect(applyEdits(text, t.edits)).toBe(t.next.text);
  return t.next;
}

/** Runs a transition the way the editor does: the edits on the text, which must give the state's text. */
function run(state: ReviewState, t: { edits: readonly { start: number; end: number; text: string }[]; next: ReviewState }): ReviewState {
  expect(applyEdits(state.text, t.edits)).toBe(t.next.text);
  return t.next;
}

const blocks = (s: ReviewState) => s.pending.map((h) => ({ red: s.text.slice(h.start, h.mid - h.joint), green: s.text.slice(h.mid, h.end) }));

describe('planHunks', () => {
  it('gives each changed region its own hunk and splits the chosen values off the front of a change', () => {
    const hunks = planHunks(ORIGINAL, PROPOSED, '\n', 7);
    expect(hunks.map((h) => [h.kind, h.originalStart, h.originalText, h.proposedText])).toEqual([
      ['values', 0, '', '#ifndef block_size_x\n#define block_size_x 128\n#endif\n'],
      ['code', 2, '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n', '    int i = blockIdx.x * block_size_x + threadIdx.x;\n'],
    ]);
    expect(hunks[0]!.values).toEqual([{ name: 'block_size_x', value: '128' }]);
    expect(hunks.map((h) => h.id)).toEqual(['r7-0', 'r7-1']);
  });

  it('the recorded H100 session: guards, then the comment, then the kernel, line by line', () => {
    const original = readFileSync(join(__dirname, '..', 'fixtures', 'kernels', 'matmul_naive.cu'), 'utf8');
    const events = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'sessions', 'h100-matmul-naive.events.json'), 'utf8')) as { type: string; finalCode?: string }[];
    const final = events.find((e) => e.type === 'session.finished')!.finalCode!;
    const hunks = planHunks(original, final, '\n', 1);
    expect(hunks.map((h) => h.kind)).toEqual(['values', 'code', 'code', 'code', 'code']);
    expect(hunks[0]!.values).toEqual([
      { name: 'block_size_x', value: '32' },
      { name: 'block_size_y', value: '32' },
    ]);
    expect(hunks[1]!.proposedText.startsWith('// Shared-memory tiles')).toBe(true);
    // No hunk holds the whole kernel: the biggest one is the tiled loop.
    expect(Math.max(...hunks.map((h) => splitLines(h.proposedText).length))).toBeLessThan(12);
  });

  it('calls a change of plain #define values a values hunk, and a guard replacing code a values hunk plus the deletion', () => {
    const defines = planHunks('#define BLOCK 256\nint x;\n', '#define BLOCK 128\nint x;\n', '\n', 1);
    expect(defines.map((h) => [h.kind, h.values])).toEqual([['values', [{ name: 'BLOCK', value: '128' }]]]);
    const replaced = planHunks('// old\nint x;\n', '#ifndef B\n#define B 4\n#endif\nint x;\n', '\n', 1);
    expect(replaced.map((h) => [h.kind, h.originalText, h.proposedText])).toEqual([
      ['values', '', '#ifndef B\n#define B 4\n#endif\n'],
      ['code', '// old\n', ''],
    ]);
  });
});

describe('a review in the document', () => {
  it('puts the new lines below the old ones; Reject All gives the text back byte for byte, Accept All the proposal', () => {
    const s = open(ORIGINAL, PROPOSED);
    expect(blocks(s)).toEqual([
      { red: '', green: '#ifndef block_size_x\n#define block_size_x 128\n#endif\n' },
      { red: '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n', green: '    int i = blockIdx.x * block_size_x + threadIdx.x;\n' },
    ]);
    expect(s.text.split('\n').slice(4, 7)).toEqual(['__global__ void k(float *y, int n) {', '    int i = blockIdx.x * blockDim.x + threadIdx.x;', '    int i = blockIdx.x * block_size_x + threadIdx.x;']);
    const rejected = run(s, rejectAll(s));
    expect(rejected.text).toBe(ORIGINAL);
    expect(rejected.pending).toEqual([]);
    expect(rejected.tally).toEqual({ accepted: 0, rejected: 2, withdrawn: 0 });
    const [first, second] = acceptAll(s);
    const middle = run(s, first);
    expect(middle.text).toBe(ORIGINAL); // one Undo after Accept All comes back here
    expect(middle.tally).toEqual({ accepted: 2, rejected: 0, withdrawn: 0 }); // the review ends here, every change accepted
    expect(run(middle, second).text).toBe(PROPOSED);
    expect(second.next.tally).toEqual({ accepted: 2, rejected: 0, withdrawn: 0 });
    expect(textWithout(s)).toBe(ORIGINAL);
    expect(textWith(s)).toBe(PROPOSED);
  });

  it('decides hunk by hunk in any order', () => {
    const s = open(ORIGINAL, PROPOSED);
    const [values, code] = s.pending;
    const a = run(s, acceptHunk(s, code!.hunk.id));
    expect(a.pending.map((h) => h.hunk.id)).toEqual([values!.hunk.id]);
    const b = run(a, rejectHunk(a, values!.hunk.id));
    expect(b.text).toBe(ORIGINAL.replace('blockDim.x', 'block_size_x'));
    expect(b.tally).toEqual({ accepted: 1, rejected: 1, withdrawn: 0 });
    expect(() => acceptHunk(b, values!.hunk.id)).toThrow(/no pending hunk/);
  });

  it.each([
    ['CRLF', '\r\n' as Eol, 'a\r\nb\r\nc\r\n', 'a\nB\nc\nd\n'],
    ['no final newline, changed last line', '\n' as Eol, 'a\nb', 'a\nc'],
    ['no final newline, lines added at the end', '\n' as Eol, 'a\nb', 'a\nb\nc'],
    ['final newline removed', '\n' as Eol, 'a\nb\n', 'a\nb'],
    ['final newline added, CRLF', '\r\n' as Eol, 'x\r\ny', 'x\ny\n'],
    ['everything replaced', '\n' as Eol, 'one\ntwo\n', 'three\n'],
    ['empty document', '\n' as Eol, '', 'new\n'],
    ['lines deleted at the end', '\n' as Eol, 'a\nb\nc', 'a\n'],
  ])('%s: Reject restores every byte, Accept gives the proposal in the document EOL', (_, eol, original, proposed) => {
    const s = open(original, proposed, eol);
    expect(run(s, rejectAll(s)).text).toBe(original);
    const expected = proposed.replace(/\r?\n/g, eol);
    const [first, second] = acceptAll(s);
    expect(run(run(s, first), second).text).toBe(expected);
    // One by one, from the last hunk up and from the first down, gives the same.
    let down = s;
    for (const h of s.pending) down = run(down, acceptHunk(down, h.hunk.id));
    expect(down.text).toBe(expected);
    let up = s;
    for (const h of [...s.pending].reverse()) up = run(up, rejectHunk(up, h.hunk.id));
    expect(up.text).toBe(original);
    // The blocks are whole lines, with a line break between old and new even where the old last line had none.
    for (const h of s.pending) expect(h.start === 0 || s.text[h.start - 1] === '\n').toBe(true);
  });

  it('a save writes the text without the proposal, and the proposal goes back in afterwards', () => {
    for (const [original, proposed, eol] of [[ORIGINAL, PROPOSED, '\n'], ['a\r\nb', 'a\r\nc\r\nd', '\r\n']] as const) {
      const s = open(original, proposed, eol);
      expect(textWithout(s)).toBe(original);
      expect(applyEdits(textWithout(s), reinsert(s))).toBe(s.text);
    }
  });

  it('equals the chosen hunks applied to the original, whatever the order (seeded)', () => {
    for (let seed = 1; seed <= 80; seed++) {
      const r = rng(seed);
      const eol: Eol = seed % 3 === 0 ? '\r\n' : '\n';
      const base = Array.from({ length: int(r, 0, 20) }, (_, i) => `l${i % 6}`);
      const prop = base.flatMap((l) => (r() < 0.2 ? [] : r() < 0.2 ? ['n', l] : r() < 0.2 ? [`${l}'`] : [l]));
      if (r() < 0.3) prop.unshift('#ifndef P', '#define P 4', '#endif');
      const original = base.join(eol) + (r() < 0.7 && base.length ? eol : '');
      const proposed = prop.join(eol) + (r() < 0.7 && prop.length ? eol : '');
      const t = openReview(original, proposed, eol, 1);
      if (!t) {
        expect(proposed).toBe(original);
        continue;
      }
      let s = t.next;
      const accepted = new Set<string>();
      for (const h of [...s.pending].sort(() => r() - 0.5)) {
        if (r() < 0.5) {
          accepted.add(h.hunk.id);
          s = run(s, acceptHunk(s, h.hunk.id));
        } else s = run(s, rejectHunk(s, h.hunk.id));
      }
      expect(s.text).toBe(oracle(original, planHunks(original, proposed, eol, 1), accepted));
    }
  });
});

describe('the user edits during a review', () => {
  const change = (from: number, to: number, insert: string): TextChange => ({ rangeOffset: from, rangeLength: to - from, text: insert });
  const setup = () => {
    const s = open(ORIGINAL, PROPOSED);
    return { s, code: s.pending[1]! };
  };

  it('lines added above or below move the hunks; Reject All keeps them', () => {
    const { s } = setup();
    const { next, withdrawn } = applyChanges(s, [change(0, 0, '// top\n'), change(s.text.length + 7, s.text.length + 7, '// end\n')]);
    expect(withdrawn).toEqual([]);
    expect(blocks(next)).toEqual(blocks(s));
    expect(run(next, rejectAll(next)).text).toBe(`// top\n${ORIGINAL}// end\n`);
  });

  it('typing inside the new lines stays with them: Accept keeps the keystrokes', () => {
    const { s, code } = setup();
    const at = code.mid + 4;
    const { next } = applyChanges(s, [change(at, at, 'const ')]);
    const accepted = run(next, acceptHunk(next, code.hunk.id));
    expect(accepted.text).toContain('    const int i = blockIdx.x * block_size_x');
    expect(accepted.text).not.toContain('blockDim');
  });

  it('typing inside the old lines stays with them: Reject keeps the keystrokes', () => {
    const { s, code } = setup();
    const { next } = applyChanges(s, [change(code.start, code.start, '/*kept*/')]);
    expect(next.pending).toHaveLength(2);
    const rejected = run(next, rejectAll(next));
    expect(rejected.text).toBe(ORIGINAL.replace('    int i = blockIdx.x * blockDim', '/*kept*/    int i = blockIdx.x * blockDim'));
  });

  it('Enter at the start of the old lines opens a line above the hunk', () => {
    const { s, code } = setup();
    const { next } = applyChanges(s, [change(code.start, code.start, '\n')]);
    expect(next.pending[1]!.start).toBe(code.start + 1);
    expect(blocks(next)).toEqual(blocks(s));
  });

  it('an edit across the old and new lines withdraws that hunk only, leaving the text as typed', () => {
    const { s, code } = setup();
    const { next, withdrawn } = applyChanges(s, [change(code.mid - 3, code.mid + 3, 'X')]);
    expect(withdrawn.map((w) => [w.hunk.id, w.reason])).toEqual([[code.hunk.id, 'edited']]);
    expect(next.pending.map((h) => h.hunk.id)).toEqual([s.pending[0]!.hunk.id]);
    expect(next.text).toBe(s.text.slice(0, code.mid - 3) + 'X' + s.text.slice(code.mid + 3));
    expect(next.tally.withdrawn).toBe(1);
  });

  it('deleting a hunk\'s new lines by hand withdraws it; a change that does not fit withdraws everything', () => {
    const { s } = setup();
    const values = s.pending[0]!;
    expect(applyChanges(s, [change(values.mid, values.end, '')]).withdrawn.map((w) => w.hunk.id)).toEqual([values.hunk.id]);
    const lost = applyChanges(s, [{ rangeOffset: s.text.length + 5, rangeLength: 1, text: '' }]);
    expect(lost.withdrawn.map((w) => w.reason)).toEqual(['out-of-sync', 'out-of-sync']);
    expect(lost.next.pending).toEqual([]);
  });

  it('tracks the text through random edits: every pending hunk stays whole lines (seeded)', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const r = rng(500 + seed);
      const eol: Eol = seed % 2 ? '\r\n' : '\n';
      let s = open(ORIGINAL.replace(/\n/g, eol), PROPOSED, eol);
      let doc = s.text;
      for (let step = 0; step < 20 && s.pending.length > 0; step++) {
        let from = int(r, 0, doc.length);
        let to = Math.min(doc.length, from + (r() < 0.5 ? 0 : int(r, 0, 6)));
        if (from > 0 && doc[from - 1] === '\r') from--;
        if (to > 0 && to < doc.length && doc[to - 1] === '\r') to++;
        const text = Array.from({ length: int(r, 0, 2) }, () => pick(r, ['q', eol, 'x;'])).join('');
        doc = doc.slice(0, from) + text + doc.slice(to);
        s = applyChanges(s, [{ rangeOffset: from, rangeLength: to - from, text }]).next;
        expect(s.text).toBe(doc);
        for (const h of s.pending) {
          expect(h.start === 0 || doc[h.start - 1] === '\n').toBe(true);
          if (h.mid > h.start && h.end > h.mid) expect(doc[h.mid - 1]).toBe('\n');
        }
        if (r() < 0.2 && s.pending.length > 0) {
          s = run(s, (r() < 0.5 ? acceptHunk : rejectHunk)(s, pick(r, s.pending).hunk.id));
          doc = s.text;
        }
      }
    }
  });
});

describe('reading a review', () => {
  it('finds the hunk at an offset, else the next one, else the last; describes hunks in a few words', () => {
    const s = open(ORIGINAL, PROPOSED);
    const [values, code] = s.pending;
    expect(hunkAt(s, code!.start)).toBe(code);
    expect(hunkAt(s, code!.end - 1)).toBe(code);
    expect(hunkAt(s, code!.end)).toBeUndefined();
    expect(hunkNear(s, values!.end + 1)).toBe(code);
    expect(hunkNear(s, s.text.length)).toBe(code);
    expect(describeHunk(values!, s.text)).toBe('chosen values: block_size_x = 128');
    expect(describeHunk(code!, s.text)).toBe('+1 −1');
  });

  it('the timeline gives back the state of a text seen before, forgets the oldest', () => {
    const s = open(ORIGINAL, PROPOSED);
    const timeline = new ReviewTimeline(2);
    timeline.remember(ORIGINAL, null);
    timeline.remember(s.text, s);
    expect(timeline.recall(ORIGINAL)).toBeNull();
    expect(timeline.recall(s.text)).toBe(s);
    expect(timeline.recall('other')).toBeUndefined();
    timeline.remember('third', null);
    expect(timeline.recall(ORIGINAL)).toBeUndefined();
  });

  it('the timeline steps through decisions that left the text as it was, back and forth, and only from their states', () => {
    const s = open(ORIGINAL, PROPOSED);
    const values = s.pending[0]!;
    expect(s.text.slice(values.start, values.mid)).toBe('');
    const accepted = run(s, acceptHunk(s, values.hunk.id));
    expect(accepted.text).toBe(s.text);
    const timeline = new ReviewTimeline();
    timeline.remember(s.text, s);
    timeline.rememberUnchanged(s, accepted);
    expect(timeline.recall(s.text)).toBe(accepted);
    expect(timeline.redoUnchanged(accepted)).toBeUndefined();
    expect(timeline.undoUnchanged(s)).toBeUndefined();
    expect(timeline.undoUnchanged(accepted)).toBe(s);
    expect(timeline.recall(s.text)).toBe(s);
    expect(timeline.undoUnchanged(s)).toBeUndefined();
    expect(timeline.redoUnchanged(s)).toBe(accepted);
    expect(timeline.recall(s.text)).toBe(accepted);
    // A new decision of the kind forgets what was undone.
    timeline.undoUnchanged(accepted);
    timeline.rememberUnchanged(s, accepted);
    timeline.undoUnchanged(accepted);
    timeline.rememberUnchanged(s, { ...accepted });
    expect(timeline.redoUnchanged(s)).toBeUndefined();
  });
});

describe('a proposal beside its file', () => {
  const file = 'a\nb\nc\nd\ne\n';
  const proposed = 'A\nb\nc\nd2\nd3\ne\nf\n';

  it('finds the changes with their lines in the file and in the proposal; each one\'s edit takes it alone into the file', () => {
    const changes = asideChanges(file, proposed);
    expect(changes.map((c) => [c.fileLines, c.proposedLines, c.fileText])).toEqual([
      [{ start: 0, end: 1 }, { start: 0, end: 1 }, 'a\n'],
      [{ start: 3, end: 4 }, { start: 3, end: 5 }, 'd\n'],
      [{ start: 5, end: 5 }, { start: 6, end: 7 }, ''],
    ]);
    expect(applyEdits(file, [changes[1]!.edit])).toBe('a\nb\nc\nd2\nd3\ne\n');
    expect(applyEdits(file, changes.map((c) => c.edit))).toBe(proposed);
    expect(asideChanges(file, file)).toEqual([]);
  });

  it('Reject takes one change out of the proposal, leaving the others', () => {
    const [first, second, third] = asideChanges(file, proposed);
    expect(withoutAsideChange(proposed, second!)).toBe('A\nb\nc\nd\ne\nf\n');
    expect(asideChanges(file, withoutAsideChange(proposed, second!)).map((c) => c.fileText)).toEqual([first!.fileText, third!.fileText]);
    expect(withoutAsideChange(withoutAsideChange(proposed, third!), first!)).toBe('a\nb\nc\nd2\nd3\ne\n');
  });

  it('the change at a line of either side, else the next below, else the last', () => {
    const changes = asideChanges(file, proposed);
    expect(asideChangeAt(changes, 'proposal', 4)).toBe(changes[1]);
    expect(asideChangeAt(changes, 'file', 4)).toBe(changes[2]);
    expect(asideChangeAt(changes, 'file', 1)).toBe(changes[1]);
    expect(asideChangeAt(changes, 'proposal', 9)).toBe(changes[2]);
    expect(asideChangeAt([], 'file', 0)).toBeUndefined();
  });
});

/** The original with the chosen hunks applied, line by line: the reference the review must agree with. */
function oracle(original: string, hunks: ReturnType<typeof planHunks>, accepted: Set<string>): string {
  const lines = splitLines(original);
  let out = '';
  let next = 0;
  for (const h of hunks) {
    out += lines.slice(next, h.originalStart).join('');
    out += accepted.has(h.id) ? h.proposedText : h.originalText;
    next = Math.max(next, h.originalStart + splitLines(h.originalText).length);
  }
  return out + lines.slice(next).join('');
}
