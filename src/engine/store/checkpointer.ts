/**
 * A LangGraph checkpointer that keeps everything in plain files, so a tuning session survives a crash or a window
 * reload without any native module.
 *
 * Layout under the root directory (names are escaped: `[a-z0-9_-]` kept, every other UTF-8 byte as `%XX`, so ids
 * differing only in case stay distinct on case-insensitive file systems):
 *
 *     t-<thread_id>/ns-<checkpoint_ns>/checkpoints/<checkpoint_id>.json
 *     t-<thread_id>/ns-<checkpoint_ns>/writes/<checkpoint_id>/<task_id>.json
 *
 * One file per checkpoint and one per (checkpoint, task) for pending writes, each replaced atomically (temp file,
 * fsync, rename): a crash mid-write leaves the previous state, and a new instance on the same directory sees
 * everything. Values go through the saver's serde (`dumpsTyped` / `loadsTyped`), so LangGraph's own types (messages,
 * Send, Command, interrupts) round-trip; the serialized bytes are stored as UTF-8 text when they are valid UTF-8
 * (readable JSON) and as base64 otherwise. Every file repeats its own ids, so listing never has to decode directory
 * names. Writes of one file are serialized within the process. Checkpoints are stored whole, in the format LangGraph 1.x
 * writes (v4), so the pending-sends migration MemorySaver keeps for older checkpoints has nothing to do here.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  copyCheckpoint,
  getCheckpointId,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from './fs-atomic.js';

const FORMAT = 1;
/** Longer escaped names are replaced by a hash, to stay far below the 255-byte file-name limit. */
const MAX_NAME = 200;
const TRASH_PREFIX = '.trash-';

const SerializedSchema = z.object({
  type: z.string(),
  encoding: z.enum(['utf8', 'base64']),
  data: z.string(),
});
type Serialized = z.infer<typeof SerializedSchema>;

const CheckpointFileSchema = z.object({
  format: z.literal(FORMAT),
  thread_id: z.string(),
  checkpoint_ns: z.string(),
  checkpoint_id: z.string(),
  parent_checkpoint_id: z.string().nullable(),
  checkpoint: SerializedSchema,
  metadata: SerializedSchema,
});
type CheckpointFile = z.infer<typeof CheckpointFileSchema>;

const StoredWriteSchema = z.object({
  idx: z.number().int(),
  channel: z.string(),
  task_path: z.string(),
  value: SerializedSchema,
});
type StoredWrite = z.infer<typeof StoredWriteSchema>;

const WritesFileSchema = z.object({
  format: z.literal(FORMAT),
  thread_id: z.string(),
  checkpoint_ns: z.string(),
  checkpoint_id: z.string(),
  task_id: z.string(),
  writes: z.array(StoredWriteSchema),
});
type WritesFile = z.infer<typeof WritesFileSchema>;

// ignoreBOM keeps a leading BOM in the text, so bytes -> text -> bytes is exact.
const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function escapeName(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += /[a-z0-9_-]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function unescapeName(name: string): string {
  return Buffer.from(name.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8');
}

function dirName(prefix: string, value: string): string {
  const escaped = escapeName(value);
  return escaped.length <= MAX_NAME ? `${prefix}${escaped}` : `${prefix}~${createHash('sha256').update(value).digest('hex')}`;
}

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

async function readDirOrEmpty(path: string): Promise<string[]> {
  try {
    return await fs.readdir(path);
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
}

/** Structural equality of JSON-like values, for metadata filters (`{ step: 1 }`, `{ source: 'loop' }`, nested objects). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

interface Location {
  threadId: string;
  ns: string;
}

export class FileCheckpointSaver extends BaseCheckpointSaver {
  private readonly locks = new Map<string, Promise<unknown>>();

  /** @param root directory holding all threads; created on first write. */
  constructor(readonly root: string, serde?: SerializerProtocol) {
    super(serde);
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) return undefined;
    const loc: Location = { threadId: String(threadId), ns: (config.configurable?.checkpoint_ns as string | undefined) ?? '' };
    let checkpointId: string | undefined = getCheckpointId(config) || undefined;
    if (checkpointId === undefined) {
      checkpointId = (await this.checkpointIds(this.nsDir(loc))).at(-1);
      if (checkpointId === undefined) return undefined;
    }
    const file = await this.readCheckpointFile(join(this.nsDir(loc), 'checkpoints', `${escapeName(checkpointId)}.json`));
    return file ? this.toTuple(file) : undefined;
  }

  async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options ?? {};
    let remaining = options?.limit;
    const threadId = config.configurable?.thread_id as string | undefined;
    const ns = config.configurable?.checkpoint_ns as string | undefined;
    const onlyId = config.configurable?.checkpoint_id as string | undefined;
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;

    const nsDirs: string[] = [];
    const threadDirs =
      threadId !== undefined
        ? [join(this.root, dirName('t-', String(threadId)))]
        : (await readDirOrEmpty(this.root)).filter((n) => n.startsWith('t-')).map((n) => join(this.root, n));
    for (const threadDir of threadDirs) {
      if (ns !== undefined) nsDirs.push(join(threadDir, dirName('ns-', ns)));
      else nsDirs.push(...(await readDirOrEmpty(threadDir)).filter((n) => n.startsWith('ns-')).map((n) => join(threadDir, n)));
    }
    const candidates: { id: string; path: string }[] = [];
    for (const dir of nsDirs) {
      for (const id of await this.checkpointIds(dir)) {
        if (onlyId && id !== onlyId) continue;
        if (beforeId && id >= beforeId) continue;
        candidates.push({ id, path: join(dir, 'checkpoints', `${escapeName(id)}.json`) });
      }
    }
    // Checkpoint ids are uuid6 (time-ordered), so descending id order is newest first, across threads too.
    candidates.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    for (const candidate of candidates) {
      if (remaining !== undefined && remaining <= 0) return;
      const file = await this.readCheckpointFile(candidate.path);
      if (!file) continue;
      if (filter) {
        const metadata = (await this.decode(file.metadata)) as Record<string, unknown>;
        if (!Object.entries(filter).every(([key, value]) => jsonEqual(metadata[key], value))) continue;
      }
      if (remaining !== undefined) remaining--;
      yield await this.toTuple(file);
    }
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, _newVersions: ChannelVersions): Promise<RunnableConfig> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) {
      throw new Error('FileCheckpointSaver.put: config.configurable.thread_id is required (pass { configurable: { thread_id } } to the graph)');
    }
    const loc: Location = { threadId: String(threadId), ns: (config.configurable?.checkpoint_ns as string | undefined) ?? '' };
    const escapedId = escapeName(checkpoint.id);
    if (checkpoint.id === '' || escapedId.length > MAX_NAME) throw new Error(`FileCheckpointSaver.put: unusable checkpoint id ${JSON.stringify(checkpoint.id)}`);
    const parent = (config.configurable?.checkpoint_id as string | undefined) ?? null;
    const file: CheckpointFile = {
      format: FORMAT,
      thread_id: loc.threadId,
      checkpoint_ns: loc.ns,
      checkpoint_id: checkpoint.id,
      parent_checkpoint_id: parent,
      checkpoint: await this.encode(copyCheckpoint(checkpoint)),
      metadata: await this.encode(metadata),
    };
    const path = join(this.nsDir(loc), 'checkpoints', `${escapedId}.json`);
    await this.locked(path, () => writeFileAtomic(path, JSON.stringify(file)));
    return { configurable: { thread_id: loc.threadId, checkpoint_ns: loc.ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = config.configurable?.thread_id as string | undefined;
    const checkpointId = config.configurable?.checkpoint_id as string | undefined;
    if (threadId === undefined || checkpointId === undefined) {
      throw new Error('FileCheckpointSaver.putWrites: config.configurable.thread_id and checkpoint_id are required');
    }
    const loc: Location = { threadId: String(threadId), ns: (config.configurable?.checkpoint_ns as string | undefined) ?? '' };
    const path = join(this.nsDir(loc), 'writes', dirName('', checkpointId), `${dirName('', taskId)}.json`);
    const incoming = await Promise.all(
      writes.map(async ([channel, value], i): Promise<StoredWrite> => ({
        // Special channels (errors, interrupts, resume values) have fixed negative slots, as in every saver.
        idx: WRITES_IDX_MAP[channel] ?? i,
        channel,
        task_path: taskPath ?? '',
        value: await this.encode(value),
      })),
    );
    await this.locked(path, async () => {
      const existing = await this.readWritesFile(path);
      const byIdx = new Map<number, StoredWrite>((existing?.writes ?? []).map((w) => [w.idx, w]));
      for (const write of incoming) {
        // A regular write already stored for this slot wins (a task retried after a crash reproduces it); special
        // slots hold the latest value.
        if (write.idx >= 0 && byIdx.has(write.idx)) continue;
        byIdx.set(write.idx, write);
      }
      const file: WritesFile = {
        format: FORMAT,
        thread_id: loc.threadId,
        checkpoint_ns: loc.ns,
        checkpoint_id: checkpointId,
        task_id: taskId,
        writes: [...byIdx.values()].sort((a, b) => a.idx - b.idx),
      };
      await writeFileAtomic(path, JSON.stringify(file));
    });
  }

  async deleteThread(threadId: string): Promise<void> {
    const dir = join(this.root, dirName('t-', threadId));
    const trash = join(this.root, `${TRASH_PREFIX}${randomBytes(8).toString('hex')}`);
    // Renaming first makes the deletion atomic for readers; a crash during rm leaves only an ignored trash folder.
    try {
      await fs.rename(dir, trash);
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
    for (const name of await readDirOrEmpty(this.root)) {
      if (name.startsWith(TRASH_PREFIX)) await fs.rm(join(this.root, name), { recursive: true, force: true });
    }
  }

  private nsDir(loc: Location): string {
    return join(this.root, dirName('t-', loc.threadId), dirName('ns-', loc.ns));
  }

  /** Checkpoint ids stored in a namespace folder, ascending. */
  private async checkpointIds(nsDir: string): Promise<string[]> {
    const names = await readDirOrEmpty(join(nsDir, 'checkpoints'));
    return names
      .filter((n) => n.endsWith('.json') && !n.startsWith('.'))
      .map((n) => unescapeName(n.slice(0, -'.json'.length)))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  private async readJson<T>(path: string, schema: z.ZodType<T>): Promise<T | undefined> {
    let text: string;
    try {
      text = await fs.readFile(path, 'utf8');
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new Error(`FileCheckpointSaver: corrupt file ${path}: ${(err as Error).message}`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new Error(`FileCheckpointSaver: corrupt file ${path}: ${z.prettifyError(parsed.error)}`);
    return parsed.data;
  }

  private readCheckpointFile(path: string): Promise<CheckpointFile | undefined> {
    return this.readJson(path, CheckpointFileSchema);
  }

  private readWritesFile(path: string): Promise<WritesFile | undefined> {
    return this.readJson(path, WritesFileSchema);
  }

  private async toTuple(file: CheckpointFile): Promise<CheckpointTuple> {
    const loc: Location = { threadId: file.thread_id, ns: file.checkpoint_ns };
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: file.thread_id, checkpoint_ns: file.checkpoint_ns, checkpoint_id: file.checkpoint_id } },
      checkpoint: (await this.decode(file.checkpoint)) as Checkpoint,
      metadata: (await this.decode(file.metadata)) as CheckpointMetadata,
      pendingWrites: await this.pendingWrites(loc, file.checkpoint_id),
    };
    if (file.parent_checkpoint_id !== null) {
      tuple.parentConfig = { configurable: { thread_id: file.thread_id, checkpoint_ns: file.checkpoint_ns, checkpoint_id: file.parent_checkpoint_id } };
    }
    return tuple;
  }

  /** Pending writes of a checkpoint in `writesSortKey` order (task path, task id, idx), as LangGraph requires. */
  private async pendingWrites(loc: Location, checkpointId: string): Promise<CheckpointPendingWrite[]> {
    const dir = join(this.nsDir(loc), 'writes', dirName('', checkpointId));
    const keyed: { key: ReturnType<typeof writesSortKey>; taskId: string; write: StoredWrite }[] = [];
    for (const name of await readDirOrEmpty(dir)) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      const file = await this.readWritesFile(join(dir, name));
      if (!file) continue;
      for (const write of file.writes) keyed.push({ key: writesSortKey(write.task_path, file.task_id, write.idx), taskId: file.task_id, write });
    }
    keyed.sort((a, b) => compareWritesSortKeys(a.key, b.key));
    return Promise.all(keyed.map(async ({ taskId, write }): Promise<CheckpointPendingWrite> => [taskId, write.channel, await this.decode(write.value)]));
  }

  private async encode(value: unknown): Promise<Serialized> {
    const [type, bytes] = await this.serde.dumpsTyped(value);
    try {
      return { type, encoding: 'utf8', data: utf8Strict.decode(bytes) };
    } catch {
      return { type, encoding: 'base64', data: Buffer.from(bytes).toString('base64') };
    }
  }

  private decode(value: Serialized): Promise<unknown> {
    const bytes = value.encoding === 'utf8' ? new TextEncoder().encode(value.data) : new Uint8Array(Buffer.from(value.data, 'base64'));
    return this.serde.loadsTyped(value.type, bytes);
  }

  /** Runs `task` after every earlier task on the same file, so read-merge-write of writes files cannot interleave. */
  private locked<T>(path: string, task: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(path) ?? Promise.resolve();
    const run = previous.then(task, task);
    const tail = run.catch(() => undefined);
    this.locks.set(path, tail);
    void tail.then(() => {
      if (this.locks.get(path) === tail) this.locks.delete(path);
    });
    return run;
  }
}
