// The soak's judgement (`npm run chaos -- soak`, scripts/soak.ts): whether each process's memory keeps growing under
// a steady load, from samples taken through the run. Pure functions, unit-tested (test/unit/soak-judge.test.ts).

/** One sample: minutes since the load started, and each process tree's memory in kB. */
export interface SoakSample {
  min: number;
  [process: string]: number;
}

export type SoakVerdict = 'levels off' | 'falls' | 'levelling off at the end' | 'still growing' | 'too short to judge';

export interface ProcessJudgement {
  process: string;
  /** Least-squares slope through the second half of the samples, MB per 10 minutes. */
  secondHalf: number;
  /** The same through the last quarter (the most recent minutes, after the caches had the longest to fill). */
  lastQuarter: number;
  verdict: SoakVerdict;
}

export interface SoakJudgement {
  processes: ProcessJudgement[];
  /** True only when the run was long enough and no process is still growing. */
  flat: boolean;
  /** False when the run was shorter than `minMinutes`: no verdict is given, whatever the slopes say. */
  longEnough: boolean;
}

/** Slope (y units per x unit) of the least-squares line through the points; 0 for fewer than two. */
export function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den ? num / den : 0;
}

/**
 * Judges growth only: a process whose second half grows by less than `flatMb` per 10 minutes levels off, one that
 * shrinks by more than that falls (memory given back: never a leak), one whose second half grows but whose last
 * quarter no longer does is levelling off at the end (caches that filled late: a longer run confirms), and only one
 * that still grows through the last quarter is still growing. A run shorter than `minMinutes` gives no verdict at
 * all: PostgreSQL's shared buffers and Temporal's caches fill over the first tens of minutes, and a short run's second
 * half is still that filling (issue 39: a 10-minute run called +71 and +79 MB per 10 minutes "still growing").
 */
export function judgeSoak(
  samples: SoakSample[],
  processes: string[],
  opts: { flatMb: number; minMinutes: number },
): SoakJudgement {
  const lasted = samples.length ? samples[samples.length - 1].min - samples[0].min : 0;
  const longEnough = lasted >= opts.minMinutes && samples.length >= 8;
  const perTen = (from: number, key: string) =>
    (slope(samples.slice(from).map((s) => [s.min, s[key]] as [number, number])) * 10) / 1024;
  const judged = processes.map((process): ProcessJudgement => {
    const secondHalf = perTen(Math.floor(samples.length / 2), process);
    const lastQuarter = perTen(Math.floor((samples.length * 3) / 4), process);
    const verdict: SoakVerdict = !longEnough
      ? 'too short to judge'
      : secondHalf < -opts.flatMb
        ? 'falls'
        : secondHalf < opts.flatMb
          ? 'levels off'
          : lastQuarter < opts.flatMb
            ? 'levelling off at the end'
            : 'still growing';
    return { process, secondHalf, lastQuarter, verdict };
  });
  return {
    processes: judged,
    longEnough,
    flat: longEnough && judged.every((p) => p.verdict !== 'still growing'),
  };
}
