// `npm start` supervision: the embedded children (PostgreSQL, the Temporal dev server, the PayPal
// stand-in) and the in-process worker are checked every second; one that died is logged, restarted
// with backoff (1 s, doubling, at most 30 s) and reported by /health as degraded until it is back.
import type { Logger } from './logger.js';

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
  restarting: boolean;
}

export class Supervisor {
  private readonly pieces: { piece: SupervisedPiece; state: PieceState }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  /** Restarts done since start, per piece. */
  readonly restarts: Record<string, number> = {};

  constructor(
    private readonly logger: Logger,
    private readonly everyMs = 1000,
  ) {}

  add(piece: SupervisedPiece): void {
    this.pieces.push({ piece, state: { downSince: null, attempts: 0, nextTryAt: 0, restarting: false } });
  }

  /** The pieces that are down or being restarted. */
  degraded(): string[] {
    return this.pieces.filter((p) => p.state.downSince !== null).map((p) => p.piece.name);
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      await Promise.all(this.pieces.map((p) => this.watch(p.piece, p.state)));
    } finally {
      this.ticking = false;
    }
  }

  private async watch(piece: SupervisedPiece, state: PieceState): Promise<void> {
    if (state.restarting) return;
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
    if (Date.now() < state.nextTryAt) return;
    state.restarting = true;
    state.attempts++;
    try {
      await piece.restart();
      this.restarts[piece.name] = (this.restarts[piece.name] ?? 0) + 1;
      log.info({ attempt: state.attempts }, `restarted ${piece.name}`);
    } catch (err) {
      const waitMs = Math.min(30_000, 1000 * 2 ** Math.min(state.attempts - 1, 5));
      state.nextTryAt = Date.now() + waitMs;
      log.warn({ err, attempt: state.attempts, retryInMs: waitMs }, `could not restart ${piece.name}; will retry`);
    } finally {
      state.restarting = false;
    }
  }
}
