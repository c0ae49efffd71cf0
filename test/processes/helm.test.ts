// The Helm chart (deploy/helm/offerkit) as Kubernetes would get it: rendered by the real `helm` (built once into
// .tools by scripts/go-tools.ts), parsed, and held to what the service needs: the API scaled on CPU and ready on
// /health, the worker, migrations before a rollout, every secret from a Secret and none in plain values, and the
// environment names the service actually reads (src/config.ts).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { parse, parseAllDocuments } from 'yaml';
import { configSchema } from '../../src/config.js';
import { ensureHelm } from '../../scripts/go-tools.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CHART = path.join(ROOT, 'deploy/helm/offerkit');
/** The settings that are secrets: they must come from a Secret, never from values, a ConfigMap or an inline env. */
const SECRETS = ['ADMIN_API_KEY', 'CONSOLE_AUTH_SECRET', 'DATABASE_URL', 'TEMPORAL_API_KEY', 'OPENAI_API_KEY'];

interface Env {
  name: string;
  value?: string;
  valueFrom?: unknown;
}
interface Container {
  name: string;
  command: string[];
  env?: Env[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  securityContext?: Record<string, unknown>;
}
interface PodSpec {
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string } }[];
  securityContext?: Record<string, unknown>;
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown> & { template?: { spec: PodSpec } };
  data?: Record<string, string>;
}

let helm: string;

function render(...set: string[]): Manifest[] {
  const r = spawnSync(helm, ['template', 'rel', CHART, ...set.flatMap((s) => ['--set', s])], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => !!m);
}

const find = (ms: Manifest[], kind: string, name: string) => {
  const m = ms.find((x) => x.kind === kind && x.metadata.name === name);
  expect(m, `${kind} ${name} in ${ms.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`).to.not.equal(undefined);
  return m!;
};
const pod = (m: Manifest) => m.spec!.template!.spec;
const workloads = (ms: Manifest[]) => ms.filter((m) => ['Deployment', 'Job'].includes(m.kind));

describe('Helm chart deploy/helm/offerkit', function () {
  // The first run on a machine builds helm (a few minutes, once).
  this.timeout(15 * 60_000);
  before(() => {
    helm = ensureHelm();
  });

  it('passes helm lint --strict', () => {
    const r = spawnSync(helm, ['lint', '--strict', CHART], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).to.equal(0);
  });

  it('renders the API (Deployment, Service, CPU HPA), the worker and the migration Job', () => {
    const ms = render();
    const api = find(ms, 'Deployment', 'rel-offerkit-api');
    const [apiC] = pod(api).containers;
    expect(apiC.command).to.deep.equal(['npx', 'tsx', 'src/api.ts']);
    expect(api.spec!.replicas, 'the HPA owns the replica count').to.equal(undefined);
    const svc = find(ms, 'Service', 'rel-offerkit-api');
    expect(svc.spec!.selector).to.deep.equal((api.spec!.selector as { matchLabels: unknown }).matchLabels);
    expect(svc.spec!.ports).to.deep.equal([{ name: 'http', port: 80, targetPort: 'http' }]);

    const hpa = find(ms, 'HorizontalPodAutoscaler', 'rel-offerkit-api');
    expect(hpa.apiVersion).to.equal('autoscaling/v2');
    expect(hpa.spec!.scaleTargetRef).to.deep.equal({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'rel-offerkit-api',
    });
    expect(hpa.spec!.metrics).to.deep.equal([
      { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } },
    ]);
    expect(hpa.spec!.minReplicas).to.equal(2);
    // CPU utilization needs a CPU request to be measured against.
    expect((apiC as unknown as { resources: { requests: { cpu: string } } }).resources.requests.cpu).to.equal('500m');

    const worker = find(ms, 'Deployment', 'rel-offerkit-worker');
    expect(pod(worker).containers[0].command).to.deep.equal(['npx', 'tsx', 'src/worker.ts']);
    expect(worker.spec!.replicas).to.equal(2);

    const job = find(ms, 'Job', 'rel-offerkit-migrate');
    expect(pod(job).containers[0].command).to.deep.equal(['npx', 'tsx', 'scripts/migrate.ts']);
    expect(job.metadata.annotations).to.include({ 'helm.sh/hook': 'pre-install,pre-upgrade' });
    // The ConfigMap the Job reads exists before it (hooks run before the release's other resources).
    const jobConfig = find(ms, 'ConfigMap', 'rel-offerkit-migrate');
    expect(Number(jobConfig.metadata.annotations!['helm.sh/hook-weight'])).to.be.lessThan(
      Number(job.metadata.annotations!['helm.sh/hook-weight']),
    );

    // With autoscaling off, the Deployment carries the count and no HPA is rendered.
    const fixed = render('api.autoscaling.enabled=false', 'api.replicas=3');
    expect(find(fixed, 'Deployment', 'rel-offerkit-api').spec!.replicas).to.equal(3);
    expect(fixed.some((m) => m.kind === 'HorizontalPodAutoscaler')).to.equal(false);
  });

  it('probes: ready on /health (503 while the database is down), alive on / (no dependency)', () => {
    const [c] = pod(find(render(), 'Deployment', 'rel-offerkit-api')).containers;
    expect(c.ports).to.deep.equal([{ name: 'http', containerPort: 3000 }]);
    expect(c.readinessProbe!.httpGet).to.deep.equal({ path: '/health', port: 'http' });
    expect(c.livenessProbe!.httpGet).to.deep.equal({ path: '/', port: 'http' });
  });

  it('secrets come from the Secret only: none in values, ConfigMaps or inline env, and secrets in env are refused', () => {
    const values = parse(fs.readFileSync(path.join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
    const flat = JSON.stringify(values);
    for (const s of SECRETS) expect(flat, `values.yaml mentions ${s}`).to.not.include(s);
    expect(flat).to.not.match(/password|postgres:\/\/|adm_|BEGIN/i);

    for (const set of [[], ['temporalTls.enabled=true', 'temporalTls.ca=true']]) {
      const ms = render(...set);
      expect(
        ms.filter((m) => m.kind === 'Secret'),
        'the chart creates no Secret',
      ).to.have.length(0);
      for (const cm of ms.filter((m) => m.kind === 'ConfigMap'))
        for (const s of SECRETS) expect(cm.data ?? {}, `${cm.metadata.name}`).to.not.have.property(s);
      for (const w of workloads(ms)) {
        for (const c of pod(w).containers) {
          expect(c.envFrom, `${w.metadata.name}`).to.deep.include({ secretRef: { name: 'offerkit' } });
          for (const e of c.env ?? [])
            expect(SECRETS, `${w.metadata.name} sets ${e.name} inline`).to.not.include(e.name);
        }
      }
    }
    const refused = spawnSync(helm, ['template', 'rel', CHART, '--set', 'env.DATABASE_URL=postgres://u:p@db/x'], {
      encoding: 'utf8',
    });
    expect(refused.status).to.not.equal(0);
    expect(refused.stderr).to.include('env.DATABASE_URL is a secret');
  });

  it('mTLS for Temporal Cloud: the TLS Secret mounted read-only and the files named in TEMPORAL_TLS_*', () => {
    const off = render();
    for (const w of workloads(off)) expect(pod(w).volumes, w.metadata.name).to.equal(undefined);
    const ms = render('temporalTls.enabled=true', 'temporalTls.secretName=cloud-mtls');
    for (const name of ['rel-offerkit-api', 'rel-offerkit-worker']) {
      const spec = pod(find(ms, 'Deployment', name));
      expect(spec.volumes).to.deep.equal([{ name: 'temporal-tls', secret: { secretName: 'cloud-mtls' } }]);
      const [c] = spec.containers;
      expect(c.volumeMounts).to.deep.equal([
        { name: 'temporal-tls', mountPath: '/etc/offerkit/temporal-tls', readOnly: true },
      ]);
      expect(c.env).to.deep.equal([
        { name: 'TEMPORAL_TLS_CERT', value: '/etc/offerkit/temporal-tls/tls.crt' },
        { name: 'TEMPORAL_TLS_KEY', value: '/etc/offerkit/temporal-tls/tls.key' },
      ]);
    }
  });

  it('every environment name the chart and docker-compose.yml set is one the service reads', () => {
    const known = new Set(Object.keys(configSchema.shape));
    const names = new Set<string>();
    const ms = render('temporalTls.enabled=true', 'temporalTls.ca=true', 'temporalTls.serverName=x');
    for (const cm of ms.filter((m) => m.kind === 'ConfigMap')) Object.keys(cm.data ?? {}).forEach((k) => names.add(k));
    for (const w of workloads(ms)) for (const c of pod(w).containers) (c.env ?? []).forEach((e) => names.add(e.name));
    // The keys values.yaml documents for the Secret.
    const doc = fs.readFileSync(path.join(CHART, 'values.yaml'), 'utf8');
    for (const m of doc.matchAll(/^#\s+([A-Z][A-Z0-9_]+)\s{2,}/gm)) names.add(m[1]);
    expect(
      [...names].filter((n) => !known.has(n)),
      'names src/config.ts does not read',
    ).to.deep.equal([]);
    for (const s of ['ADMIN_API_KEY', 'CONSOLE_AUTH_SECRET', 'DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE'])
      expect([...names], `values.yaml documents ${s} for the Secret`).to.include(s);

    const compose = parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, { environment?: Record<string, string>; command?: string[] }>;
    };
    for (const svc of ['api', 'worker', 'migrate']) {
      const env = compose.services[svc]?.environment;
      expect(env, `docker-compose.yml service ${svc}`).to.be.an('object');
      expect(
        Object.keys(env!).filter((n) => !known.has(n)),
        `${svc}: names src/config.ts does not read`,
      ).to.deep.equal([]);
    }
    expect(compose.services.api.command).to.deep.equal(['npx', 'tsx', 'src/api.ts']);
    expect(compose.services.worker.command).to.deep.equal(['npx', 'tsx', 'src/worker.ts']);
    expect(compose.services.migrate.command).to.deep.equal(['npx', 'tsx', 'scripts/migrate.ts']);
  });
});
