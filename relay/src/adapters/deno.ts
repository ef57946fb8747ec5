import { createRelay, type RelayOptions } from '../index.ts'

/** What `Deno.serve` passes its handler beside the request. */
export interface DenoServeInfo {
  remoteAddr: { hostname: string; port?: number; transport?: string }
}

/** The relay as a `Deno.serve` handler: `Deno.serve(denoRelay({ upstream, prefix }))`. */
export function denoRelay(options: RelayOptions) {
  const relay = createRelay(options)
  const handle = (request: Request, info: DenoServeInfo) => relay(request, { address: info.remoteAddr.hostname })
  return Object.assign(handle, { prefix: relay.prefix, handles: relay.handles, ready: relay.ready })
}
