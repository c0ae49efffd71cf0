import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

import type { Resolver } from '../deps.js';

export type { Resolver };

export const systemResolver: Resolver = async (host) =>
  (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** True for addresses on the public internet; loopback, private, link-local, CGNAT, reserved, multicast... are not. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.process(address); // IPv4-mapped IPv6 -> IPv4
  return ip.range() === 'unicast';
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
    if (!isPublicAddress(host)) throw new UrlPolicyError(`must be a public address (${host} is not)`);
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
    throw new UrlPolicyError(`must be a public address (${host} resolves to ${bad ?? 'nothing'})`);
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
