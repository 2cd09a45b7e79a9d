/**
 * The messages between the extension host and the tuning panel (webview/), one typed map per direction, in the manner of
 * Continue's core/protocol: a map from message type to its payload, and a union derived from it. Both sides import this
 * file; nothing else crosses the boundary.
 *
 * The host owns the session (its event log); the webview derives everything it shows from that log with the reducer in
 * session-view.ts. So a reload, a reopened report and a live session are the same code path: `session` replaces the
 * log, `events` appends to it.
 *
 * Messages from the webview are untrusted input (a compromised or stale webview script): `parseFromWebview` checks them
 * field by field before the host acts on them.
 */
import type { TuningEvent } from '../engine/progress/events';
import type { SessionHeader } from '../engine/session/session-view';

/** A plan step as the user edits it before approving. */
export interface EditedPlanStep {
  id: string;
  title: string;
  details: string;
}

/** The step series of a session related to the one shown (its parent, a branch of it), for the chart. */
export interface RelatedSeries {
  sessionId: string;
  /** "parent", "branch from step 3" ... */
  label: string;
  /** Baseline first, then every accepted step (as the session's own chart line). */
  timeline: { label: string; timeMs: number; step?: number }[];
}

/** Host → webview. */
export interface ToWebviewMap {
  /** Everything about one session: replaces what the panel shows. `live`: the session is running in this window. */
  session: { header: SessionHeader; events: TuningEvent[]; live: boolean };
  /** Events of the session in order; `from` is the index of the first in the session's log, so overlaps and gaps show. */
  events: { sessionId: string; from: number; events: TuningEvent[] };
  /** The session stopped running in this window (finished, failed, cancelled) or its header changed. */
  live: { sessionId: string; live: boolean; header: SessionHeader };
  /** The sessions this one branched from or that branched from it, drawn beside it in the chart. */
  related: { sessionId: string; series: RelatedSeries[] };
}

/** Webview → host. */
export interface FromWebviewMap {
  /** The script started (first load or after a reload); the host answers with `session`. */
  ready: { sessionId: string | null };
  cancel: { sessionId: string };
  approvePlan: { sessionId: string; steps: EditedPlanStep[] };
  /** Show a kernel as an inline diff in the editor: the final one, or the one an accepted step produced. */
  showDiff: { sessionId: string; stepId: string | null };
  openSideBySide: { sessionId: string; stepId: string | null };
  /** What the panel has drawn: the number of events of the session it has applied (the host reports it to tests). */
  rendered: { sessionId: string; eventCount: number };
  /** Start a branch of the session from one of its steps (the host asks: as it was, or with the kernel edited). */
  branch: { sessionId: string; stepId: string };
  /** Save the performance chart: `data` is a PNG data URL or the text of an SVG document (see chart-export.ts). */
  exportChart: { sessionId: string; format: ChartImageFormat; data: string };
  /** Show a variant of an evolutionary session's population, its values defined, as a proposal in the editor. */
  proposeVariant: { sessionId: string; variantId: string };
  /** Start a new evolutionary session from a variant: a branch of the session from the variant's child step. */
  branchVariant: { sessionId: string; variantId: string };
  /** A finished evolutionary session goes on evolving (the host asks for a larger budget). */
  evolveFurther: { sessionId: string };
}

export type ChartImageFormat = 'png' | 'svg';

/** A chart image is a few hundred KB; this bounds what a webview can make the host decode and write. */
export const MAX_CHART_IMAGE_CHARS = 20_000_000;

export type MessageOf<M> = { [K in keyof M]: { type: K } & M[K] }[keyof M];
export type ToWebviewMessage = MessageOf<ToWebviewMap>;
export type FromWebviewMessage = MessageOf<FromWebviewMap>;

export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

type Checker = (value: unknown, path: string) => void;

const fail = (path: string, expected: string, value: unknown): never => {
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
  throw new ProtocolError(`${path}: expected ${expected}, got ${got}`);
};

/** Ids are ours (session ids, plan step ids): bounded, printable. */
const id: Checker = (v, path) => {
  if (typeof v !== 'string' || v.length === 0 || v.length > 200) fail(path, 'a non-empty string of at most 200 characters', v);
};
const text =
  (max: number): Checker =>
  (v, path) => {
    if (typeof v !== 'string' || v.length > max) fail(path, `a string of at most ${max} characters`, v);
  };
const nullable =
  (check: Checker): Checker =>
  (v, path) => {
    if (v !== null) check(v, path);
  };

const count: Checker = (v, path) => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(path, 'a non-negative integer', v);
};

const oneOf =
  (values: readonly string[]): Checker =>
  (v, path) => {
    if (typeof v !== 'string' || !values.includes(v)) fail(path, `one of ${values.join(', ')}`, v);
  };

const MAX_PLAN_STEPS = 100;

const planSteps: Checker = (v, path) => {
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_PLAN_STEPS) fail(path, `an array of 1 to ${MAX_PLAN_STEPS} steps`, v);
  (v as unknown[]).forEach((step, i) => {
    if (typeof step !== 'object' || step === null) fail(`${path}[${i}]`, 'an object', step);
    const s = step as Record<string, unknown>;
    id(s.id, `${path}[${i}].id`);
    text(500)(s.title, `${path}[${i}].title`);
    if ((s.title as string).trim() === '') fail(`${path}[${i}].title`, 'a non-empty title', s.title);
    text(20_000)(s.details, `${path}[${i}].details`);
  });
};

const FROM_WEBVIEW: { [K in keyof FromWebviewMap]: Record<keyof FromWebviewMap[K], Checker> } = {
  ready: { sessionId: nullable(id) },
  cancel: { sessionId: id },
  approvePlan: { sessionId: id, steps: planSteps },
  showDiff: { sessionId: id, stepId: nullable(id) },
  openSideBySide: { sessionId: id, stepId: nullable(id) },
  rendered: { sessionId: id, eventCount: count },
  branch: { sessionId: id, stepId: id },
  exportChart: { sessionId: id, format: oneOf(['png', 'svg']), data: text(MAX_CHART_IMAGE_CHARS) },
  proposeVariant: { sessionId: id, variantId: id },
  branchVariant: { sessionId: id, variantId: id },
  evolveFurther: { sessionId: id },
};

/** Checks a message from the webview; throws ProtocolError naming the first bad field. Unknown fields are dropped. */
export function parseFromWebview(raw: unknown): FromWebviewMessage {
  if (typeof raw !== 'object' || raw === null) fail('message', 'an object', raw);
  const message = raw as Record<string, unknown>;
  const type = message.type;
  if (typeof type !== 'string' || !Object.hasOwn(FROM_WEBVIEW, type)) {
    throw new ProtocolError(`message.type: expected one of ${Object.keys(FROM_WEBVIEW).join(', ')}, got ${JSON.stringify(type)}`);
  }
  const fields = FROM_WEBVIEW[type as keyof FromWebviewMap] as Record<string, Checker>;
  const out: Record<string, unknown> = { type };
  for (const [name, check] of Object.entries(fields)) {
    check(message[name], `${type}.${name}`);
    out[name] = message[name];
  }
  if (type === 'approvePlan') {
    out.steps = (out.steps as EditedPlanStep[]).map(({ id: stepId, title, details }) => ({ id: stepId, title: title.trim(), details }));
  }
  return out as FromWebviewMessage;
}
