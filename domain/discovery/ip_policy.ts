/**
 * IP address parsing and the "may the server connect here" policy for fetches of user-chosen hosts.
 *
 * IPv4 is parsed the way URL parsers and `inet_aton` do (decimal, octal, hex and short forms), because an
 * attacker picks the spelling: `127.1`, `2130706433`, `0177.0.0.1` and `0x7f.0.0.1` all mean loopback.
 * The public test is an allowlist for IPv6 (only 2000::/3, minus special ranges) and a denylist of the IANA
 * special-purpose ranges for IPv4 (performance_reliability §B4).
 */

/** A parsed IP address in canonical spelling (dotted decimal, or RFC 5952 IPv6). */
export type ClassifiedAddress = { readonly kind: "ipv4" | "ipv6"; readonly address: string };

type Ipv4Range = readonly [base: number, prefix: number];

const IPV4_DENIED: readonly Ipv4Range[] = [
  [ipv4(0, 0, 0, 0), 8], // "this network"
  [ipv4(10, 0, 0, 0), 8], // private
  [ipv4(100, 64, 0, 0), 10], // carrier-grade NAT
  [ipv4(127, 0, 0, 0), 8], // loopback
  [ipv4(169, 254, 0, 0), 16], // link-local, cloud metadata
  [ipv4(172, 16, 0, 0), 12], // private
  [ipv4(192, 0, 0, 0), 24], // IETF protocol assignments
  [ipv4(192, 0, 2, 0), 24], // TEST-NET-1
  [ipv4(192, 88, 99, 0), 24], // deprecated 6to4 relay anycast
  [ipv4(192, 168, 0, 0), 16], // private
  [ipv4(198, 18, 0, 0), 15], // benchmarking
  [ipv4(198, 51, 100, 0), 24], // TEST-NET-2
  [ipv4(203, 0, 113, 0), 24], // TEST-NET-3
  [ipv4(224, 0, 0, 0), 4], // multicast
  [ipv4(240, 0, 0, 0), 4], // reserved, includes broadcast 255.255.255.255
];

function ipv4(a: number, b: number, c: number, d: number): number {
  return ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
}

/** Parses an IPv4 or IPv6 address in any spelling a URL parser accepts; `undefined` when it is not one. */
export function classifyAddress(text: string): ClassifiedAddress | undefined {
  if (typeof text !== "string" || text === "" || text.length > 100) return undefined;
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { kind: "ipv4", address: formatIpv4(v4) };
  let inner = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  // A zone id (`fe80::1%eth0`) names an interface; it does not change which range the address is in.
  const zone = inner.indexOf("%");
  if (zone !== -1) inner = inner.slice(0, zone);
  const v6 = parseIpv6(inner);
  if (v6 !== undefined) return { kind: "ipv6", address: formatIpv6(v6) };
  return undefined;
}

/** Tells whether a host string is an IP address literal (any spelling, brackets allowed) rather than a name. */
export function isIpLiteral(host: string): boolean {
  return classifyAddress(host) !== undefined;
}

/** Tells whether an address is publicly routable; loopback, private, reserved and tunnelled forms of them are not. */
export function isPublicAddress(text: string): boolean {
  const parsed = classifyAddress(text);
  if (parsed === undefined) return false;
  if (parsed.kind === "ipv4") return isPublicIpv4(parseIpv4(parsed.address)!);
  return isPublicIpv6(parseIpv6(parsed.address)!);
}

function isPublicIpv4(value: number): boolean {
  for (const [base, prefix] of IPV4_DENIED) {
    const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
    if (((value & mask) >>> 0) === base) return false;
  }
  return true;
}

function isPublicIpv6(groups: readonly number[]): boolean {
  const g = (i: number) => groups[i]!;
  const embeddedLow = () => ((g(6) << 16) >>> 0) + g(7);
  const zerosUntil = (end: number) => groups.slice(0, end).every((x) => x === 0);
  // ::ffff:a.b.c.d (IPv4-mapped): the connection is really an IPv4 one.
  if (zerosUntil(5) && g(5) === 0xffff) return isPublicIpv4(embeddedLow());
  // 64:ff9b::/96 (well-known NAT64 prefix): the translator connects to the embedded IPv4.
  if (g(0) === 0x64 && g(1) === 0xff9b && groups.slice(2, 6).every((x) => x === 0)) return isPublicIpv4(embeddedLow());
  // 2002::/16 (6to4): the tunnel endpoint is the IPv4 in bits 16..48.
  if (g(0) === 0x2002) return isPublicIpv4(((g(1) << 16) >>> 0) + g(2));
  // Only 2000::/3 is allocated as global unicast; this also refuses ::, ::1, ::/96 (IPv4-compatible),
  // 64:ff9b:1::/48, 100::/64, fc00::/7, fe80::/10, fec0::/10 and ff00::/8.
  if ((g(0) & 0xe000) !== 0x2000) return false;
  // 2001::/23 IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID and friends.
  if (g(0) === 0x2001 && g(1) < 0x0200) return false;
  if (g(0) === 0x2001 && g(1) === 0x0db8) return false; // documentation
  if (g(0) === 0x3fff && g(1) < 0x1000) return false; // documentation 3fff::/20
  if (g(0) === 0x5f00) return false; // SRv6 SIDs
  return true;
}

function parseIpv4(text: string): number | undefined {
  const parts = text.split(".");
  // URL parsers accept one trailing dot (`127.0.0.1.`).
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length === 0 || parts.length > 4) return undefined;
  const numbers: number[] = [];
  for (const part of parts) {
    const n = parseIpv4Part(part);
    if (n === undefined) return undefined;
    numbers.push(n);
  }
  const last = numbers.pop()!;
  if (numbers.some((n) => n > 255)) return undefined;
  if (last >= 256 ** (4 - numbers.length)) return undefined;
  let value = 0;
  numbers.forEach((n, i) => {
    value += n * 256 ** (3 - i);
  });
  return value + last;
}

function parseIpv4Part(part: string): number | undefined {
  if (part === "") return undefined;
  if (/^0[xX][0-9a-fA-F]*$/.test(part)) return part.length === 2 ? 0 : parseInt(part.slice(2), 16);
  if (/^0[0-7]+$/.test(part)) return parseInt(part.slice(1), 8);
  if (/^(0|[1-9][0-9]*)$/.test(part)) return Number(part);
  return undefined;
}

function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".");
}

function parseIpv6(text: string): number[] | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = parseGroups(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? parseGroups(halves[1]!, true) : [];
  if (head === undefined || tail === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const missing = 8 - head.length - tail.length;
  // `::` stands for at least one zero group.
  if (missing < 1) return undefined;
  return [...head, ...new Array<number>(missing).fill(0), ...tail];
}

/** Parses colon-separated groups; the last one may be dotted IPv4 when `mayEndInIpv4`. */
function parseGroups(text: string, mayEndInIpv4: boolean): number[] | undefined {
  if (text === "") return [];
  const pieces = text.split(":");
  const groups: number[] = [];
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i]!;
    if (piece.includes(".")) {
      // Embedded IPv4 must be strict dotted decimal and come last.
      if (!mayEndInIpv4 || i !== pieces.length - 1) return undefined;
      if (!/^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(piece)) return undefined;
      const v4 = parseIpv4(piece)!;
      groups.push(v4 >>> 16, v4 & 0xffff);
    } else {
      if (!/^[0-9a-fA-F]{1,4}$/.test(piece)) return undefined;
      groups.push(parseInt(piece, 16));
    }
  }
  return groups;
}

function formatIpv6(groups: readonly number[]): string {
  if (groups.slice(0, 5).every((x) => x === 0) && groups[5] === 0xffff) {
    return `::ffff:${formatIpv4(((groups[6]! << 16) >>> 0) + groups[7]!)}`;
  }
  // RFC 5952: compress the longest run (length >= 2) of zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((x) => x.toString(16));
  if (bestLength < 2) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}
