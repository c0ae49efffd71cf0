// `npm start` supervision: the embedded children (PostgreSQL, the Temporal dev server, the PayPal
// stand-in) and the in-process worker are checked every second; one that died is logged, restarted
// with backoff (1 s, doubling, at most 30 s) and reported by /health as degraded until it is back.
import type { Logger } from './logger.js';
import type { WorkerHandle } from './worker-runtime.js';

export interface SupervisedPiece {
  name: string;
  /** True while the piece is up. */
  check(): Promise<boolean>;
  /** Starts it again; a failure is retried after the backoff. */
  restart(): Promise<void>;
}

interface PieceState {
  downSince: number | null;
  attempts: number;
  nextTryAt: number;
  /** A check or restart of this piece is under way (a slow restart holds up no other piece). */
  busy: boolean;
}

export class Supervisor {
  private readonly pieces: { piece: SupervisedPiece; state: PieceState }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Restarts done since start, per piece. */
  readonly restarts: Record<string, number> = {};

  constructor(
    private readonly logger: Logger,
    private readonly everyMs = 1000,
  ) {}

  add(piece: SupervisedPiece): void {
    this.pieces.push({ piece, state: { downSince: null, attempts: 0, nextTryAt: 0, busy: false } });
  }

  /** The pieces that are down or being restarted. */
  degraded(): string[] {
    return this.pieces.filter((p) => p.state.downSince !== null).map((p) => p.piece.name);
  }

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.tick(), this.everyMs);
    this.timer.unref();
  }

  /** Stops watching; a restart under way finishes, none starts (the service is shutting down). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  private tick(): void {
    for (const { piece, state } of this.pieces) {
      if (state.busy) continue;
      state.busy = true;
      void this.watch(piece, state).finally(() => {
        state.busy = false;
      });
    }
  }

  private async watch(piece: SupervisedPiece, state: PieceState): Promise<void> {
    const up = await piece.check().catch(() => false);
    const log = this.logger.child({ component: 'supervisor', piece: piece.name });
    if (up) {
      if (state.downSince !== null) {
        log.info({ downForMs: Date.now() - state.downSince, attempts: state.attempts }, `${piece.name} is back`);
        state.downSince = null;
        state.attempts = 0;
      }
      return;
    }
    if (state.downSince === null) {
      state.downSince = Date.now();
      state.nextTryAt = 0;
      log.error(`${piece.name} is down; restarting it with backoff`);
    }
    if (Date.now() < state.nextTryAt || this.stopped) return;
    state.attempts++;
    try {
      await piece.restart();
      this.restarts[piece.name] = (this.restarts[piece.name] ?? 0) + 1;
      log.info({ attempt: state.attempts }, `restarted ${piece.name}`);
    } catch (err) {
      const waitMs = Math.min(30_000, 1000 * 2 ** Math.min(state.attempts - 1, 5));
      state.nextTryAt = Date.now() + waitMs;
      log.warn({ err, attempt: state.attempts, retryInMs: waitMs }, `could not restart ${piece.name}; will retry`);
    }
  }
}

/**
 * The in-process Temporal worker as a supervised piece: down once it no longer runs (it failed, or
 * stopped); `replace` shuts what is left of it down and starts a new one.
 */
export function workerPiece(current: () => WorkerHandle, replace: () => Promise<void>): SupervisedPiece {
  return {
    name: 'worker',
    check: async () => current().worker.getState() === 'RUNNING',
    restart: replace,
  };
}
