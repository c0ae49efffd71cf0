import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

import type { Resolver } from '../deps.js';

export type { Resolver };

export const systemResolver: Resolver = async (host) =>
  (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * The IPv4 address an IPv6 address stands for, in the spellings that carry one: IPv4-mapped `::ffff:a.b.c.d`
 * (ipaddr.process), IPv4-compatible `::a.b.c.d` (deprecated; `[::127.0.0.1]` in a URL is `[::7f00:1]`), SIIT
 * `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::` and Teredo (the client's address, inverted).
 */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = ip.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  const zero = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  if (zero(0, 6) && !(p[6] === 0 && p[7] <= 1)) return v4(p[6], p[7]);
  if (zero(0, 4) && p[4] === 0xffff && p[5] === 0) return v4(p[6], p[7]);
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(2, 6)) return v4(p[6], p[7]);
  if (p[0] === 0x2002) return v4(p[1], p[2]);
  if (p[0] === 0x2001 && p[1] === 0) return v4(~p[6] & 0xffff, ~p[7] & 0xffff);
  return null;
}

/**
 * What an address is, as the webhook policy sees it: ipaddr's range (`unicast` is public). An IPv6 spelling that
 * carries an IPv4 address is never more public than it, nor than its own range: `::7f00:1` is loopback, as 127.0.0.1
 * is; 6to4, Teredo and NAT64 addresses stay refused whatever they carry; the rest of the IETF-reserved ::/8
 * (IPv4-compatible addresses included) is `reserved`.
 */
export function addressRange(address: string): { range: string; reaches?: string } | null {
  // `reaches`: the IPv4 address whose range it is, when that decided.
  if (!ipaddr.isValid(address)) return null;
  const ip = ipaddr.process(address); // IPv4-mapped IPv6 -> IPv4
  if (ip.kind() === 'ipv4') return { range: ip.range() };
  const v6 = ip as ipaddr.IPv6;
  const inner = embeddedIPv4(v6);
  if (inner && inner.range() !== 'unicast') return { range: inner.range(), reaches: inner.toString() };
  if (v6.parts[0] < 0x100 && v6.range() === 'unicast') return { range: 'reserved' };
  return { range: v6.range() };
}

/** True for addresses on the public internet; loopback, private, link-local, CGNAT, reserved, multicast... are not. */
export function isPublicAddress(address: string): boolean {
  return addressRange(address)?.range === 'unicast';
}

/** What an address that carries an IPv4 address stands for (`: it stands for 127.0.0.1, loopback`), else ''. */
function standsFor(address: string): string {
  const r = addressRange(address);
  return r?.reaches ? `: it stands for ${r.reaches}, ${r.range}` : '';
}

export class UrlPolicyError extends Error {}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Checks that a webhook URL is http(s) and that its host is, and resolves only to, public addresses
 * (unless private URLs are allowed). Throws UrlPolicyError with a reason a caller can read.
 */
export async function checkWebhookUrl(raw: string, opts: { allowPrivate: boolean; resolve: Resolver }): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlPolicyError('must be a valid URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UrlPolicyError('must be an http or https URL');
  if (url.username || url.password) throw new UrlPolicyError('must not contain credentials');
  if (opts.allowPrivate) return url;
  const host = hostOf(url);
  if (net.isIP(host)) {
    if (!isPublicAddress(host)) throw new UrlPolicyError(`must be a public address (${host} is not${standsFor(host)})`);
    return url;
  }
  let addresses: string[];
  try {
    addresses = await opts.resolve(host);
  } catch {
    throw new UrlPolicyError(`host ${host} does not resolve`);
  }
  const bad = addresses.find((a) => !isPublicAddress(a));
  if (bad || addresses.length === 0)
    throw new UrlPolicyError(
      `must be a public address (${host} resolves to ${bad ? `${bad}${standsFor(bad)}` : 'nothing'})`,
    );
  return url;
}

/**
 * A `lookup` for the HTTP client's sockets: resolves with `resolve` and refuses non-public addresses,
 * so the address connected to is the one checked (no DNS rebinding between check and connect).
 */
export function guardedLookup(opts: { allowPrivate: boolean; resolve: Resolver }): net.LookupFunction {
  return (hostname, options, callback) => {
    opts
      .resolve(hostname)
      .then((addresses) => {
        const allowed = opts.allowPrivate ? addresses : addresses.filter(isPublicAddress);
        if (allowed.length === 0) {
          const err = Object.assign(
            new Error(`Blocked: ${hostname} resolves to a non-public address (${addresses.join(', ')})`),
            { code: 'EBLOCKED' },
          );
          return callback(err, '', 4);
        }
        const list = allowed.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
        if ((options as { all?: boolean }).all)
          return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
        callback(null, list[0].address, list[0].family);
      })
      .catch((err: NodeJS.ErrnoException) => callback(err, '', 4));
  };
}
