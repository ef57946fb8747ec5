import { API } from './config'
import type { Delivery } from './delivery'
import { listen, type Undo } from './dom'
import type { Identity } from './identity'
import type { Messages } from './messages'
import { HEARTBEAT_MS } from './queue'
import type { Transport } from './transport'
import type { Clock, PageWindow } from './types'

/**
 * Presence, this tab's window of the session, from `start()` until `stop()`: a heartbeat at once and
 * every 30 s while the session is live, and its end on page hide. A module of its own, imported by
 * `start()` with the recorder: a page that never starts the tracker never loads it. Before it is
 * there, no heartbeat has gone, so a page left meanwhile owes no session-end.
 *
 * Its page hide listener is added after the tracker's own (added at `init`, again at `start()` after
 * a `stop()`, before this module loads), and a target's listeners run in the order they were added:
 * what is queued goes by beacon first, then the session-end, in the browser's quota for beacons.
 * `stop()` ends it too, as leaving does: a page that stops the tracker in a pagehide listener of its
 * own, run before these, removes them before they run. One end for one page hide.
 */
export function startPresence(win: PageWindow, clock: Clock, identity: Identity, transport: Transport, delivery: Delivery, messages: Messages): Undo {
  let heartbeat: unknown
  const presence = (sessionId: string) => ({ sessionId, endUserId: identity.endUserId, windowId: identity.windowId })

  /**
   * While the session is live; none while the service asks for a wait (Retry-After, which its answer
   * may set too): the next beat is 30 s on. A simple request whose answer is read, in sticky mode too
   * (it needs no preflight; by beacon, `liveViewer` could never turn off again): it says whether
   * someone watches (`liveViewer`), and that the service answers again: what a drain had to leave is
   * sent, on a page that sends nothing else.
   */
  const beat = () => {
    clock.clearTimeout(heartbeat)
    const sessionId = identity.current()
    if (sessionId && delivery.canSend) {
      void transport.post(API + '/heartbeat', { ...presence(sessionId), url: messages.here() }, true).then((answer) => void (delivery.settle(answer) && delivery.drain()))
    }
    heartbeat = clock.setTimeout(beat, HEARTBEAT_MS)
  }

  // Sending stopped (a 429, the monthly limit, a refused key) stops the tracker, and this with it:
  // nothing more is sent, no session-end either. None for a session that ended for want of activity
  // (no beat went since): the service would take the goodbye for activity in it, and extend it to now.
  let ended = false
  const end = () => {
    const sessionId = identity.current()
    if (!ended && sessionId && delivery.canSend && !delivery.halted) void transport.send(API + '/session-end', presence(sessionId), true)
    ended = true
  }

  const listeners = [
    listen(win, 'pagehide', end),
    // Back from the back/forward cache: page hide ended this window's presence.
    listen<PageTransitionEvent>(win, 'pageshow', (event) => event.persisted && ((ended = false), beat())),
  ]
  beat()
  return () => {
    clock.clearTimeout(heartbeat)
    for (const undo of listeners) undo()
    end()
  }
}
