// The outbox's commands: what a service writes in its transaction to start, signal, cancel or terminate a workflow
// once the change commits (typed by the workflow definitions in workflows/shared.ts). src/temporal/relay.ts carries
// them out.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SearchAttributePair, SignalDefinition } from '@temporalio/common';
import {
  SA,
  WORKFLOW_DEFINITIONS,
  workflowDefinition,
  type SearchAttributeName,
  type SearchAttributeValues,
  type SignalArgs,
  type SignalOf,
  type WorkflowDefinition,
  type WorkflowInput,
} from '../../workflows/shared.js';
import { OutboxEntry } from './outbox.entities.js';

interface StartFields {
  /** The workflow type (a definition's `name`), stored as text in the row. */
  workflowType: string;
  workflowId: string;
  args: unknown[];
  searchAttributes?: SearchAttributeValues;
  /** One line shown in the Temporal UI's workflow list. */
  summary?: string;
  /** Longer markdown shown on the workflow's page. */
  details?: string;
  startDelayMs?: number;
  /**
   * `keep` (default): a second start of a running or finished workflow with this id is a no-op.
   * `replace`: a running workflow with this id is terminated and a new one starts (re-targeting a timer).
   * `restart`: a running workflow with this id is kept; a closed one (failed, terminated, ended while its
   * row still waits) gets a new run (the reconciler's repairs).
   */
  onExisting?: 'keep' | 'replace' | 'restart';
}

/** A command as an outbox row holds it (JSON): what the relay reads back. */
export type StoredCommand =
  | ({ kind: 'start' } & StartFields)
  | ({ kind: 'signalWithStart'; signal: string; signalArgs: unknown[] } & StartFields)
  /** `workflowType` is missing from rows written before it was recorded for signals. */
  | { kind: 'signal'; workflowType?: string; workflowId: string; signal: string; args: unknown[] }
  | { kind: 'cancel'; workflowId: string }
  | { kind: 'terminate'; workflowId: string; reason: string };

declare const typed: unique symbol;
/**
 * What the service asks of Temporal, written to the outbox in the transaction of the change. Made
 * only by the writers below (`outboxStart`, `outboxSignalWithStart`, `outboxSignal`, ...), which
 * check the workflow's input and the signal's arguments against the shared definitions.
 */
export type TemporalCommand = StoredCommand & { readonly [typed]: true };

const seal = (cmd: StoredCommand) => cmd as TemporalCommand;

/** How a start is shown and what it does when the workflow id is taken (everything but type, id and input). */
export type StartOptions = Omit<StartFields, 'workflowType' | 'workflowId' | 'args'>;

function assertSignalOf(def: WorkflowDefinition, signal: SignalDefinition<unknown[]>) {
  if (!Object.values(def.signals).includes(signal))
    throw new Error(`signal ${signal.name} is not one of the signals of workflow type ${def.name}`);
}

/** Starts `def`'s workflow under `workflowId` with `input`, typed by the workflow function's own parameter. */
export function outboxStart<D extends WorkflowDefinition>(
  def: D,
  workflowId: string,
  input: WorkflowInput<D>,
  opts: StartOptions = {},
): TemporalCommand {
  return seal({ kind: 'start', workflowType: def.name, workflowId, args: [input], ...opts });
}

/** Signals `def`'s running workflow, or starts it with `input` and then signals it. */
export function outboxSignalWithStart<D extends WorkflowDefinition, S extends SignalOf<D>>(
  def: D,
  workflowId: string,
  input: WorkflowInput<D>,
  signal: S,
  signalArgs: SignalArgs<S>,
  opts: Omit<StartOptions, 'startDelayMs' | 'onExisting'> = {},
): TemporalCommand {
  assertSignalOf(def, signal);
  return seal({
    kind: 'signalWithStart',
    workflowType: def.name,
    workflowId,
    args: [input],
    signal: signal.name,
    signalArgs: signalArgs as unknown[],
    ...opts,
  });
}

/** Signals `def`'s workflow (dropped when none runs under that id any more). */
export function outboxSignal<D extends WorkflowDefinition, S extends SignalOf<D>>(
  def: D,
  workflowId: string,
  signal: S,
  ...args: SignalArgs<S>
): TemporalCommand {
  assertSignalOf(def, signal);
  return seal({ kind: 'signal', workflowType: def.name, workflowId, signal: signal.name, args: args as unknown[] });
}

export function outboxCancel(workflowId: string): TemporalCommand {
  return seal({ kind: 'cancel', workflowId });
}

export function outboxTerminate(workflowId: string, reason: string): TemporalCommand {
  return seal({ kind: 'terminate', workflowId, reason });
}

/** The same start, for the reconciler: a new run only when none is running under the id. */
export function asRestart(cmd: TemporalCommand): TemporalCommand {
  return cmd.kind === 'start' ? ({ ...cmd, onExisting: 'restart' } as TemporalCommand) : cmd;
}

/** Adds a command to the outbox. Call inside the transaction that makes the change; it is flushed with it. */
export function enqueueTemporal(em: EntityManager, cmd: TemporalCommand) {
  const { kind, workflowId } = cmd;
  return em.create(OutboxEntry, {
    kind,
    workflowId,
    workflowType: cmd.kind === 'cancel' || cmd.kind === 'terminate' ? null : (cmd.workflowType ?? null),
    payload: cmd as unknown as Record<string, unknown>,
  });
}

/**
 * An outbox row names a workflow type (or a signal) that this build does not define: never sent to
 * Temporal (a workflow of an unknown type would only fail on the worker). The row stays, retried with
 * backoff, for a build that knows it (a newer deployment may have written it).
 */
export class UnknownWorkflowCommandError extends Error {
  override name = 'UnknownWorkflowCommandError';
}

/** The definition a stored command's workflow type names, checked with its signal; throws when unknown. */
export function checkStoredCommand(cmd: StoredCommand): WorkflowDefinition | null {
  const known = (def: WorkflowDefinition, signal: string) => Object.values(def.signals).some((s) => s.name === signal);
  if (cmd.kind === 'cancel' || cmd.kind === 'terminate') return null;
  if (cmd.kind === 'signal' && cmd.workflowType === undefined) {
    // A signal row written before signals recorded their workflow type: its signal name is all there is.
    if (!WORKFLOW_DEFINITIONS.some((d) => known(d, cmd.signal)))
      throw new UnknownWorkflowCommandError(`unknown signal ${JSON.stringify(cmd.signal)}; not sent to Temporal`);
    return null;
  }
  const def = cmd.workflowType === undefined ? undefined : workflowDefinition(cmd.workflowType);
  if (!def)
    throw new UnknownWorkflowCommandError(
      `unknown workflow type ${JSON.stringify(cmd.workflowType)} (this build defines none of that name; known: ` +
        `${WORKFLOW_NAMES()}); not sent to Temporal`,
    );
  if (cmd.kind !== 'start' && !known(def, cmd.signal))
    throw new UnknownWorkflowCommandError(
      `unknown signal ${JSON.stringify(cmd.signal)} for workflow type ${def.name}; not sent to Temporal`,
    );
  return def;
}

export function toSearchAttributePairs(values: SearchAttributeValues | undefined): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [];
  for (const [name, value] of Object.entries(values ?? {})) {
    if (value === undefined || value === null) continue;
    const key = SA[name as SearchAttributeName];
    if (!key) throw new Error(`unknown search attribute ${name}`);
    pairs.push((key.type === 'DATETIME' ? { key, value: new Date(value) } : { key, value }) as SearchAttributePair);
  }
  return pairs;
}

const WORKFLOW_NAMES = () => WORKFLOW_DEFINITIONS.map((d) => d.name).join(', ');
