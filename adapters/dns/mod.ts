/** DNS TXT lookups with dns-packet over UDP and TCP. */
export { createDnsPacketResolver } from "./dns_packet_resolver.ts";
