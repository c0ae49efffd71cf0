import { streamChanges, type ChangeEvent } from '@offerkit/sdk';
import { eventually } from './wait.js';

/** A reader of the change stream in the background: its events so far, and waits on them. */
export interface Collector {
  events: ChangeEvent[];
  /** Events that are changes (no keep-alives). */
  changes(): ChangeEvent[];
  waitFor(pred: (e: ChangeEvent) => boolean, ms?: number): Promise<ChangeEvent>;
  /** Settles when the server ends the stream (with the error that ended it, if any). */
  ended: Promise<unknown>;
  close(): void;
}

export function collect(baseUrl: string, appId: string, credential: string, lastEventId?: string | null): Collector {
  const events: ChangeEvent[] = [];
  const controller = new AbortController();
  const ended = (async () => {
    for await (const e of streamChanges({ baseUrl, appId, credential, lastEventId, signal: controller.signal }))
      events.push(e);
  })().then(
    () => null,
    (err: unknown) => err,
  );
  return {
    events,
    changes: () => events.filter((e) => e.type !== 'keep-alive'),
    waitFor: (pred, ms = 15_000) => eventually(async () => events.find(pred), ms),
    ended,
    close: () => controller.abort(),
  };
}
