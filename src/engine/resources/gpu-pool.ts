/**
 * The GPUs of a session as a pool of leases. A tuning run either takes every GPU (one candidate's configurations spread
 * over all of them) or one (children of an evolutionary session evaluated side by side, one per GPU). Either way no two
 * runs time kernels on the same GPU at once: timings taken while another kernel runs there would be worthless.
 * Waiters are served first come, first served, so a run that needs every GPU is not starved by single leases; a
 * waiter with a priority (a lower number first) goes before those with a later one or none, so that work which holds
 * the GPUs in several leases (an evolutionary child's tuning, then its sanitizer run) finishes before later work starts.
 */
export type GpuShare = 'all' | 'one';

interface Waiter<B> {
  share: GpuShare;
  priority: number;
  grant: (backends: readonly B[]) => void;
}

export class GpuPool<B> {
  private readonly free: B[];
  private readonly waiting: Waiter<B>[] = [];
  private busyMs = 0;
  private readonly busyMsOf = new Map<number, number>();

  constructor(readonly backends: readonly B[]) {
    if (backends.length === 0) throw new RangeError('a GPU pool needs at least one backend');
    this.free = [...backends];
  }

  /** Runs `work` with the GPUs of the share, released when it settles (whether it succeeds or not). */
  async run<T>(share: GpuShare, work: (backends: readonly B[]) => Promise<T>, priority = Number.POSITIVE_INFINITY): Promise<T> {
    const leased = await this.acquire(share, priority);
    const start = performance.now();
    try {
      return await work(leased);
    } finally {
      const busy = (performance.now() - start) * leased.length;
      this.busyMs += busy;
      if (Number.isFinite(priority)) this.busyMsOf.set(priority, (this.busyMsOf.get(priority) ?? 0) + busy);
      this.free.push(...leased);
      this.dispatch();
    }
  }

  /** GPU-seconds leased so far (a lease of every GPU counts each): the time the session's GPUs had work. */
  get busyS(): number {
    return this.busyMs / 1000;
  }

  /** GPU-seconds leased to work of this priority so far. */
  busySOf(priority: number): number {
    return (this.busyMsOf.get(priority) ?? 0) / 1000;
  }

  /** GPUs not leased right now. */
  get idle(): number {
    return this.free.length;
  }

  private acquire(share: GpuShare, priority: number): Promise<readonly B[]> {
    return new Promise((grant) => {
      // After every waiter of the same or an earlier priority: first come, first served among equals.
      const place = this.waiting.findIndex((w) => w.priority > priority);
      this.waiting.splice(place === -1 ? this.waiting.length : place, 0, { share, priority, grant });
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      const next = this.waiting[0]!;
      const count = next.share === 'all' ? this.backends.length : 1;
      if (this.free.length < count) return;
      this.waiting.shift();
      // Backends keep their order in an 'all' lease: the first is the one the run's single-GPU work goes to.
      const leased = next.share === 'all' ? this.backends.filter((b) => this.free.includes(b)) : [this.free[0]!];
      for (const b of leased) this.free.splice(this.free.indexOf(b), 1);
      next.grant(leased);
    }
  }
}
