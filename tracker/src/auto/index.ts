import type { Undo } from '../dom'
import type { Messages } from '../messages'
import type { Redaction } from '../redaction'
import type { AutomaticTrackingOptions, PageWindow } from '../types'
import { trackClicks } from './clicks'
import { trackConsole } from './console'
import { trackErrors } from './errors'
import { trackForms } from './forms'
import { trackNetwork } from './network'
import { trackPages } from './pages'

/** What automatic tracking reports to: the tracker's messages, and what it needs to know of the page. */
export interface AutoContext extends Pick<Messages, 'customEvent' | 'pageView' | 'navigation' | 'error' | 'report' | 'floodGate' | 'withPageUrls' | 'here'> {
  win: PageWindow
  now(): number
  redaction: Redaction
  /** Where the tracker sends: its requests there (ingestion, the reachability probe) are never reported. */
  base: string
  /** The page's errors and unhandled rejections since `start()`, kept while this module loaded. */
  early: Event[]
}

type Kind = keyof AutomaticTrackingOptions

/** Each tracker and the kinds it serves: it is installed when any of them is on, and told which are. */
const TRACKERS: [Kind[], (context: AutoContext, ...on: boolean[]) => Undo[]][] = [
  [['pageViews', 'navigation'], trackPages],
  [['clicks', 'rageClicks'], trackClicks],
  [['forms'], trackForms],
  [['console'], trackConsole],
  [['network', 'spans'], trackNetwork],
  [['errors'], trackErrors],
]

/** Installs each kind not switched off; returns what uninstalls them. */
export function installAutomaticTracking(context: AutoContext, options?: AutomaticTrackingOptions | null): Undo[] {
  return TRACKERS.flatMap(([kinds, track]) => {
    const on = kinds.map((kind) => options?.[kind] !== false)
    return on.some(Boolean) ? track(context, ...on) : []
  })
}
