/**
 * The chain picker in the console's header (decisions §30, issue 48 item 6): filled from `/v1/trust-anchors` (the
 * served chains), the page's one chain when the answer lists none. The picked chain is sent as `chain` on the public
 * reads the panels make (`readOptions()`), when the service listed its chains; a service that lists none is asked as
 * before, with nothing sent. Panels that show chain data hear of a change through `onChainChange`.
 */
import { fetchTrustAnchors, type ReadOptions } from "../client/mod.ts";
import { type PickerChain, pickerChains, type PickerChains } from "./_chain_list.ts";
import { api, byId, CHAIN_ID, h } from "./_dom.ts";

const pageName = () => document.querySelector<HTMLMetaElement>('meta[name="ats-chain-name"]')?.content ?? `Chain ${CHAIN_ID}`;

let offered: PickerChains = pickerChains(undefined, { chainId: CHAIN_ID, name: pageName() });
let picked: PickerChain = offered.chains[0]!;
const listeners: ((chain: PickerChain) => void)[] = [];

/** The chain the person picked (the default until they pick another). */
export function pickedChain(): PickerChain {
  return picked;
}

/** The options of a public read: the service, and the picked chain when the service listed its chains. */
export function readOptions(): ReadOptions {
  return offered.listed ? { ...api, chain: picked.caip2 } : api;
}

/** Calls `listener` whenever another chain is picked. */
export function onChainChange(listener: (chain: PickerChain) => void): void {
  listeners.push(listener);
}

function render(select: HTMLSelectElement): void {
  select.replaceChildren(...offered.chains.map((c) => h("option", { value: c.caip2 }, `${c.name} (id ${c.chainId})${c.isDefault && offered.chains.length > 1 ? ", default" : ""}`)));
  select.value = picked.caip2;
  select.disabled = offered.chains.length < 2;
}

/** Reads the served chains and wires the picker; the page's one chain until (and unless) the anchors list more. */
export function setUpChainPicker(): void {
  const select = byId<HTMLSelectElement>("chain-picker");
  render(select);
  select.addEventListener("change", () => {
    const next = offered.chains.find((c) => c.caip2 === select.value);
    if (next === undefined || next.caip2 === picked.caip2) return;
    picked = next;
    document.documentElement.dataset.chain = picked.caip2;
    for (const listener of listeners) listener(picked);
  });
  void fetchTrustAnchors({ url: "/v1/trust-anchors" }).catch(() => undefined).then((anchors) => {
    offered = pickerChains(anchors, { chainId: CHAIN_ID, name: pageName() });
    picked = offered.chains.find((c) => c.isDefault) ?? offered.chains[0]!;
    render(select);
    document.documentElement.dataset.chain = picked.caip2;
    document.documentElement.dataset.chains = String(offered.chains.length);
  });
}
