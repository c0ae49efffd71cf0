// The verdict of `npm run chaos -- offline` (scripts/chaos-offline.ts): the client processes' log
// (scripts/chaos-offline-client.ts writes it) read against what the API says once it is back.
//
// - Checks: every answer for an account the evaluator knew is compared with the answer the API gives for that
//   account's plan at the usage the client had tracked before the check (the client is the only source of usage
//   and the catalog does not change during the run, so that is exactly what the API would have answered then).
// - Usage: for every account and entitlement, the counter in the database equals the units tracked (exactly once).
// - A track cut by SIGKILL (its 't' line without a 'd'): counted when its add reached the buffer file, which the run
//   reads right after the kill (`cut`); the client never makes two equal adds in a row, so the file's last add says.

export interface LogLine {
  k: 'c' | 't' | 'd' | 'x' | 'start' | 'end' | 'm';
  /** A mark the run writes ('m'): `api-down`, `api-up`, `client-killed`. */
  what?: string;
  a?: string;
  e?: string;
  ok?: boolean;
  known?: boolean;
  n?: number;
  amt?: number;
  status?: number;
  pid?: number;
  pending?: number;
}

/** What the API says of an account now: its entitlements' limits and feature answers, and its counters. */
export interface Truth {
  /** entitlement id -> max (null: unlimited) for usage entitlements, or the boolean answer for features. */
  limits: Record<string, { type: 'usage'; max: number | null } | { type: 'boolean'; can: boolean }>;
  usage: Record<string, number>;
}

export interface Cut {
  /** The 't' line of the track the kill cut, if any. */
  track: LogLine | null;
  /** The last add in the buffer file right after the kill (null: the file was empty). */
  lastBuffered: { accountId: string; entitlementId: string; amount: number } | null;
}

export interface Verdict {
  checks: number;
  knownChecks: number;
  unknownChecks: number;
  wrong: { index: number; account: string; entitlement: string; answered: boolean; expected: boolean }[];
  tracked: Record<string, Record<string, number>>;
  mismatched: { account: string; entitlement: string; tracked: number; counted: number }[];
  dropped: number;
  /** Checks answered and units tracked while the API was down (between the run's marks). */
  offline: { checks: number; knownChecks: number; tracks: number };
  cutCounted: boolean | null;
  ends: { pid: number; pending: number }[];
  ok: boolean;
}

/** Splits the log into one part per client process ('start' lines). */
function processes(lines: LogLine[]): LogLine[][] {
  const parts: LogLine[][] = [];
  for (const l of lines) {
    if (l.k === 'start' || !parts.length) parts.push([]);
    // The run's marks belong to whichever process runs then.
    parts[parts.length - 1].push(l);
  }
  return parts;
}

/** Whether the track the kill cut made it into the buffer file (so into the count). */
export function cutReachedFile(cut: Cut): boolean {
  const t = cut.track;
  const b = cut.lastBuffered;
  return !!t && !!b && b.accountId === t.a && b.entitlementId === t.e && b.amount === t.amt;
}

export function judge(lines: LogLine[], truth: Record<string, Truth>, cuts: Cut[]): Verdict {
  const used: Record<string, Record<string, number>> = {};
  const add = (a: string, e: string, amt: number) => ((used[a] ??= {})[e] = (used[a][e] ?? 0) + amt);
  const v: Verdict = {
    checks: 0,
    knownChecks: 0,
    unknownChecks: 0,
    wrong: [],
    tracked: used,
    mismatched: [],
    dropped: 0,
    offline: { checks: 0, knownChecks: 0, tracks: 0 },
    cutCounted: null,
    ends: [],
    ok: false,
  };
  let index = 0;
  let cutIndex = 0;
  let down = false;
  for (const part of processes(lines)) {
    const pending = new Map<number, LogLine>();
    for (const l of part) {
      index++;
      if (l.k === 'm') down = l.what === 'api-down' ? true : l.what === 'api-up' ? false : down;
      else if (l.k === 't') {
        pending.set(l.n!, l);
        if (down) v.offline.tracks++;
      } else if (l.k === 'd') {
        const t = pending.get(l.n!);
        pending.delete(l.n!);
        if (t) add(t.a!, t.e!, t.amt!);
      } else if (l.k === 'x') {
        v.dropped++;
        add(l.a!, l.e!, -l.amt!);
      } else if (l.k === 'end') v.ends.push({ pid: l.pid!, pending: l.pending! });
      else if (l.k === 'c') {
        v.checks++;
        if (down) v.offline.checks++;
        if (!l.known) {
          v.unknownChecks++;
          continue;
        }
        v.knownChecks++;
        if (down) v.offline.knownChecks++;
        const limit = truth[l.a!]?.limits[l.e!];
        const expected = !limit
          ? false
          : limit.type === 'boolean'
            ? limit.can
            : limit.max === null || (used[l.a!]?.[l.e!] ?? 0) < limit.max;
        if (expected !== l.ok) v.wrong.push({ index, account: l.a!, entitlement: l.e!, answered: l.ok!, expected });
      }
    }
    // A process that ended without 'end' was killed: its one unfinished track counts if it reached the file.
    if (!part.some((l) => l.k === 'end') && pending.size) {
      const cut = cuts[cutIndex++] ?? { track: null, lastBuffered: null };
      const t = [...pending.values()].at(-1)!;
      v.cutCounted = cutReachedFile({ ...cut, track: t });
      if (v.cutCounted) add(t.a!, t.e!, t.amt!);
    } else if (!part.some((l) => l.k === 'end')) cutIndex++;
  }
  for (const [account, t] of Object.entries(truth))
    for (const [entitlement, counted] of Object.entries(t.usage)) {
      const tracked = used[account]?.[entitlement] ?? 0;
      if (tracked !== counted) v.mismatched.push({ account, entitlement, tracked, counted });
    }
  v.ok =
    v.wrong.length === 0 &&
    v.mismatched.length === 0 &&
    v.dropped === 0 &&
    v.ends.length > 0 &&
    v.ends.every((e) => e.pending === 0) &&
    v.knownChecks > 0;
  return v;
}
