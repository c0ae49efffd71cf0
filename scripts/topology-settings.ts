// The settings of `npm run topology` (scripts/topology.ts lists them) and what its parts print with: `--dev` and
// `--no-faults` from the command line, TOPOLOGY_* from the environment, the admin key and PayPal credentials of the run.

const args = new Set(process.argv.slice(2));
export const DEV = args.has('--dev');
export const FAULTS = !args.has('--no-faults') && !DEV;
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
export const SETTINGS = {
  accounts: num('TOPOLOGY_ACCOUNTS', 300),
  usage: num('TOPOLOGY_USAGE', 600),
  checkouts: num('TOPOLOGY_CHECKOUTS', 20),
  concurrency: num('TOPOLOGY_CONCURRENCY', 16),
  expiryS: num('TOPOLOGY_EXPIRY_S', 40),
  seed: num('TOPOLOGY_SEED', Date.now() % 100_000),
  convergeS: num('TOPOLOGY_CONVERGE_S', 300),
};
export const ADMIN = 'adm_topology_admin_key_0123456789';
export const PAYPAL = { client_id: 'topology', client_secret: 'topology-secret' };
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const say = (line: string) => process.stdout.write(`${line}\n`);
export const elapsed = (from: number) => `${((Date.now() - from) / 1000).toFixed(1)} s`;
