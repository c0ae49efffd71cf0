// What every section of `npm run bench` measures with: the repository's root, seconds per cell, the connection counts,
// the main app's accounts and rounds per cell, from the BENCH_* environment (bench/run.ts lists the sections).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
export const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,16,64').split(',').map(Number);
/** The main app's accounts (`acct-0` ...), seeded by bench/run.ts and drawn at random by the sections. */
export const ACCOUNTS = 1000;
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
